"""One pipeline (one GPU per stage): build the problem, solve it, score it (moved from partitioner.api).

These are the single-pipeline steps `partitioner.planning.routing.route` takes when a request asks for
no TP groups and one replica; `partitioner.api` re-exports them under their old names.
`model` and `cluster` are paths (str or Path) or objects from `load_model` / `load_cluster`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from partitioner.problem import CostTables, Problem
from partitioner.result import Plan

__all__ = ["tables_for", "build_problem", "solve_problem", "serve_plan", "load_inputs", "with_metadata",
           "with_metadata_any", "Progress", "launch_engine"]

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


def launch_engine(model: Any, cluster: Any, engine: str | None) -> str | None:
    """The engine whose launch-order rule a search keeps to: `engine`, else the files' `engine:`
    when it names an engine that launches servers (registry.LAUNCH_TARGETS; its record's
    `launch_order`, partitioner.solvers.engine_sequences), else None (any order)."""
    if engine is not None:
        return engine
    from partitioner.costs.tables import select_engine
    from partitioner.registry import LAUNCH_TARGETS

    named = select_engine(model, cluster, None).id
    return named if named in LAUNCH_TARGETS else None


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
    budget: Any = None,
) -> Plan:
    """The split, batch and in-flight count with the most decode tokens/s (partitioner.serving.search),
    among the device orders `launch_engine` launches; `budget` (partitioner.solvers.budget.Budget) also
    bounds the search in work and is charged with it."""
    import dataclasses

    from partitioner.costs import build_tables
    from partitioner.models import load_cluster, load_model
    from partitioner.planning.serve_limits import serve_limits
    from partitioner.serving.search import search

    if isinstance(model, (str, Path)):
        model = load_model(model)
    if isinstance(cluster, (str, Path)):
        cluster = load_cluster(cluster)
    limits, batches = serve_limits(model, tpot_ms, ttft_ms, max_batch)
    from partitioner.solvers.engine_rule import order_rule

    def tables_at(B: int) -> CostTables:
        return build_tables(model.with_batch(B, 1), cluster, engine=engine)

    rule = order_rule(launch_engine(model, cluster, engine), solver, cluster, tables_at(batches[0] if batches else 1))
    result = search(
        tables_at, batches, regime=regime, order=order or str(getattr(cluster, "order", "free")), solver=solver,
        limits=limits, time_limit_s=time_limit_s, progress=progress, rule=rule, budget=budget,
    )
    best = result.best
    out = Plan.from_solution(best.problem, best.solution)
    top = 1.0 / best.serving.tokens_per_s
    return dataclasses.replace(
        out, objective="serve", serving=best.serving, frontier=tuple(p.to_dict() for p in result.frontier),
        optimal=result.proven, objective_value=(top,), lower_bound=result.lower_bound,
        wall_time_s=result.wall_time_s,
        status="BASELINE" if out.status == "BASELINE" and not result.proven else result.status,
    )


def load_inputs(model: Any, cluster: Any) -> tuple[Any, Any]:
    """Load model and cluster when given as paths (objects pass through); the cluster's TP degrees
    are checked against the model's attention heads once both are loaded."""
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
    if problem is not None:
        from partitioner.errors import ConfigError

        raise ConfigError(problem[1], file=shown, location=".".join(problem[0]))
    return model, cluster


def with_metadata(result: Plan, model: Any, cluster: Any) -> Plan:
    """`result` carrying the plan JSON's input fields (model id, workload, hosts, hash)."""
    import dataclasses

    from partitioner.metadata import plan_metadata

    return dataclasses.replace(result, meta=plan_metadata(model, cluster))


def with_metadata_any(result: Any, model: Any, cluster: Any) -> Any:
    """A Plan, or every replica of a Deployment, carrying the plan JSON's input fields."""
    import dataclasses

    if hasattr(result, "replicas"):
        return dataclasses.replace(result, replicas=tuple(with_metadata(p, model, cluster) for p in result.replicas))
    return with_metadata(result, model, cluster)
