"""The Python API that deploy scripts call: `plan(model, cluster, ...) -> Plan`.

    >>> import partitioner
    >>> p = partitioner.plan("examples/models/qwen2.5-14b.yaml", "examples/clusters/seed.yaml")
    >>> [(st.device, st.start, st.end) for st in p.stages]

`model` and `cluster` are paths (str or Path) or objects from `load_model` / `load_cluster`.
This is an edge module: it may read files; the solvers it calls stay pure.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from partitioner.problem import CostTables, Problem
from partitioner.result import Plan

__all__ = ["plan", "build_problem", "tables_for", "solve_problem", "serve_plan", "load_inputs", "with_metadata",
           "wants_deployment"]

Progress = Callable[[float, float, float], None]


def tables_for(model: Any, cluster: Any, engine: str | None = None) -> CostTables:
    """Load (if given paths) and build the cost tables c[g][l], m[l], b[l], alpha, beta; `engine`
    (presets/engines.yaml) overrides the files' `engine:` setting."""
    from partitioner.costs import build_tables
    from partitioner.models import load_cluster, load_model

    if isinstance(model, (str, Path)):
        model = load_model(model)
    if isinstance(cluster, (str, Path)):
        cluster = load_cluster(cluster)
    return build_tables(model, cluster, engine=engine)


def build_problem(
    model: Any,
    cluster: Any,
    *,
    M: int = 8,
    regime: str = "async",
    objective: str = "balanced",
    order: str | None = None,
    time_limit_s: float | None = None,
    engine: str | None = None,
) -> Problem:
    """The `Problem` a solver takes; `order=None` uses the cluster file's `order`."""
    if isinstance(cluster, (str, Path)):
        from partitioner.models import load_cluster

        cluster = load_cluster(cluster)
    tables = tables_for(model, cluster, engine)
    return Problem(
        tables,
        M=M,
        regime=regime,  # type: ignore[arg-type]
        objective=objective,  # type: ignore[arg-type]
        order=(order or str(getattr(cluster, "order", "free"))),  # type: ignore[arg-type]
        time_limit_s=time_limit_s,
    )


def solve_problem(
    problem: Problem, solver: str = "auto", progress: Progress | None = None, *,
    engine: str | None = None, cluster: Any = None,
) -> Plan:
    """Run one solver on a built problem and score its answer. With an `engine` other than generic
    and an exact solver, only device orders that engine can launch are searched
    (partitioner.solvers.engine_order; node addresses from `cluster`)."""
    from partitioner import solvers
    from partitioner.solvers.engine_rule import order_rule

    rule = order_rule(engine, solver, cluster, problem.tables)
    if rule is not None:
        return Plan.from_solution(problem, rule.solve(problem))
    kwargs: dict[str, Any] = {}
    if progress is not None and solver in ("auto", "cpsat"):
        kwargs["progress"] = progress
    solution = solvers.solve(problem, solver, **kwargs)
    return Plan.from_solution(problem, solution)


def plan(
    model: Any,
    cluster: Any,
    *,
    M: int = 8,
    regime: str = "async",
    objective: str = "balanced",
    solver: str = "auto",
    order: str | None = None,
    time_limit_s: float | None = None,
    progress: Progress | None = None,
    tpot_ms: float | None = None,
    ttft_ms: float | None = None,
    max_batch: int | None = None,
    engine: str | None = None,
    replicas: int | str = 1,
    tp: str | None = None,
) -> Any:
    """Plan which GPUs, in what order, hold which layers (docs/algorithms.md).

    `objective="serve"` also chooses the batch and the micro-batches in flight that maximise
    decode tokens/s under `tpot_ms`, `ttft_ms` and `max_batch` (`serve_plan`).
    `replicas` ("auto" or N > 1) and `tp` ("auto", "uniform", "node"; default: "auto" when
    cluster.yaml has `tp:`, else "off") plan TP groups and several pipelines
    (partitioner.deploy.plan); with replicas != 1 the result is a `Deployment`. With
    `objective="serve"` every replica chooses its own batch and in-flight count under the limits.
    Raises `ConfigError` for bad files, `InfeasibleError` when nothing fits, and
    `InputError` for bad arguments; all are `PartitionerError`s.
    """
    model, cluster = load_inputs(model, cluster)
    if wants_deployment(replicas, tp, cluster):
        from partitioner.deploy.plan import plan_deployment

        return plan_deployment(model, cluster, replicas=replicas, tp=tp, M=M, regime=regime, objective=objective,
                               solver=solver, order=order, time_limit_s=time_limit_s, engine=engine,
                               tpot_ms=tpot_ms, ttft_ms=ttft_ms, max_batch=max_batch)
    if objective == "serve":
        result = serve_plan(model, cluster, regime=regime, solver=solver, order=order, time_limit_s=time_limit_s,
                            tpot_ms=tpot_ms, ttft_ms=ttft_ms, max_batch=max_batch, engine=engine)
        return with_metadata(result, model, cluster)
    problem = build_problem(
        model, cluster, M=M, regime=regime, objective=objective, order=order, time_limit_s=time_limit_s,
        engine=engine,
    )
    return with_metadata(solve_problem(problem, solver, progress, engine=engine, cluster=cluster), model, cluster)


def _positive(name: str, value: float | None) -> float | None:
    from partitioner.errors import InputError

    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < float(value) < float("inf"):
        raise InputError(f"{name} must be a finite number > 0 (got {value!r})")
    return float(value)


def _profile_batches(model: Any) -> list[int] | None:
    """Batch sizes a profile can be costed at: its own batch (scalar costs), or every B of
    `batch_grid` inside the range all its batch tables cover; None for the roofline."""
    from partitioner.serving.search import batch_grid

    if not model.is_profile:
        return None
    tables = [v for e in model.layers for v in e.cost.values() if isinstance(v, dict)]
    if not tables:
        return [model.workload.batch]
    lo, hi = max(min(t) for t in tables), min(max(t) for t in tables)
    return [b for b in batch_grid(hi) if b >= lo] if lo <= hi else []


def serve_plan(
    model: Any,
    cluster: Any,
    *,
    regime: str = "async",
    solver: str = "auto",
    order: str | None = None,
    time_limit_s: float | None = None,
    tpot_ms: float | None = None,
    ttft_ms: float | None = None,
    max_batch: int | None = None,
    progress: Callable[[int, float, float], None] | None = None,
    engine: str | None = None,
) -> Plan:
    """The split, batch and in-flight count with the most decode tokens/s (partitioner.serving.search)."""
    import dataclasses

    from partitioner.costs import build_tables
    from partitioner.models import load_cluster, load_model
    from partitioner.serving.search import search

    if isinstance(model, (str, Path)):
        model = load_model(model)
    if isinstance(cluster, (str, Path)):
        cluster = load_cluster(cluster)
    limits, batches = serve_limits(model, tpot_ms, ttft_ms, max_batch)
    from partitioner.solvers.engine_rule import order_rule

    def tables_at(B: int) -> CostTables:
        return build_tables(model.with_batch(B, 1), cluster, engine=engine)

    rule = order_rule(engine, solver, cluster, tables_at(batches[0] if batches else 1))
    result = search(
        tables_at, batches, regime=regime, order=order or str(getattr(cluster, "order", "free")), solver=solver,
        limits=limits, time_limit_s=time_limit_s, progress=progress, rule=rule,
    )
    best = result.best
    out = Plan.from_solution(best.problem, best.solution)
    top = 1.0 / best.serving.tokens_per_s
    return dataclasses.replace(
        out, objective="serve", serving=best.serving, frontier=tuple(p.to_dict() for p in result.frontier),
        optimal=result.proven and out.optimal, objective_value=(top,),
        lower_bound=min(top, 1.0 / result.upper_bound), wall_time_s=result.wall_time_s,
        status=out.status if not result.notes else "TIME_LIMIT",
    )


def serve_limits(model: Any, tpot_ms: float | None, ttft_ms: float | None,
                 max_batch: int | None) -> tuple[Any, list[int] | None]:
    """The serve objective's limits (TPOT/TTFT in ms -> s, the largest batch) and the model's
    batch grid (None: the roofline grid; a profile's common batch sizes), each value checked."""
    from partitioner.errors import InputError
    from partitioner.serving.search import Limits

    if max_batch is not None and (isinstance(max_batch, bool) or not isinstance(max_batch, int) or max_batch < 1):
        raise InputError(f"max_batch must be an integer >= 1 (got {max_batch!r})")
    tpot, ttft = _positive("tpot_ms", tpot_ms), _positive("ttft_ms", ttft_ms)
    limits = Limits(None if tpot is None else tpot / 1e3, None if ttft is None else ttft / 1e3, max_batch)
    batches = _profile_batches(model)
    if batches == []:
        raise InputError(f"{model.name}: the batch tables of its layers cover no common batch size")
    return limits, batches


def wants_deployment(replicas: int | str, tp: str | None, cluster: Any) -> bool:
    """Whether a request goes to partitioner.deploy: several pipelines, TP groups asked for, or
    (tp unset) a cluster.yaml with `tp:`; else the single pipeline of one GPU per stage."""
    one = str(replicas).strip() == "1"
    return not one or tp not in (None, "off") or (tp is None and getattr(cluster, "tp", None) is not None)


def load_inputs(model: Any, cluster: Any) -> tuple[Any, Any]:
    """Load model and cluster when given as paths (objects pass through)."""
    from partitioner.userfiles import require_regular_file

    for given in (model, cluster):  # a missing or special file fails before pydantic is imported (~0.5 s)
        if isinstance(given, (str, Path)):
            require_regular_file(given)
    from partitioner.models import load_cluster, load_model

    if isinstance(model, (str, Path)):
        model = load_model(model)
    shown = str(cluster) if isinstance(cluster, (str, Path)) else None
    if isinstance(cluster, (str, Path)):
        cluster = load_cluster(cluster)
    arch = getattr(model, "arch", None)
    problem = cluster.tp_problem(arch.num_attention_heads) if arch is not None and hasattr(cluster, "tp_problem") else None
    if problem is not None:  # tp degrees are checked against the model once both are loaded
        from partitioner.errors import ConfigError

        raise ConfigError(problem[1], file=shown, location=".".join(problem[0]))
    return model, cluster


def with_metadata(result: Plan, model: Any, cluster: Any) -> Plan:
    """`result` carrying the plan JSON's input fields (model id, workload, hosts, hash)."""
    import dataclasses

    from partitioner.metadata import plan_metadata

    return dataclasses.replace(result, meta=plan_metadata(model, cluster))
