"""The Python API that deploy scripts call: `plan(model, cluster, ...) -> Plan | Deployment`.

    >>> import partitioner
    >>> p = partitioner.plan("examples/models/qwen2.5-14b.yaml", "examples/clusters/seed.yaml")
    >>> [(st.device, st.start, st.end) for st in p.stages]

`model` and `cluster` are paths (str or Path) or objects from `load_model` / `load_cluster`.
This is an edge module: it may read files; the solvers it calls stay pure. `plan` builds a
`PlanRequest` and calls `partitioner.planning.routing.route`, as `partition plan` does; the
single-pipeline steps (`build_problem`, `solve_problem`, `serve_plan`, ...) live in
partitioner.planning.pipeline and the serve limits in partitioner.planning.serve_limits, and
are re-exported here under their old names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from partitioner.deploy.deployment import Deployment
from partitioner.planning.pipeline import (
    build_problem,
    load_inputs,
    serve_plan,
    solve_problem,
    tables_for,
    with_metadata,
    with_metadata_any,
)
from partitioner.planning.request import PlanRequest, ServeLimits, parse_replicas
from partitioner.planning.serve_limits import serve_limits
from partitioner.result import Plan

__all__ = ["plan", "build_problem", "tables_for", "solve_problem", "serve_plan", "load_inputs", "with_metadata",
           "with_metadata_any", "wants_deployment", "serve_limits", "request_for"]

Progress = Callable[[float, float, float], None]


def plan(
    model: Any,
    cluster: Any,
    *,
    M: int = 8,
    regime: str = "async",
    objective: str | None = None,
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
) -> Plan | Deployment:
    """Plan which GPUs, in what order, hold which layers (docs/algorithms.md).

    `objective="serve"` also chooses the batch and the micro-batches in flight that maximise
    decode tokens/s under `tpot_ms`, `ttft_ms` and `max_batch` (`serve_plan`).
    `replicas` ("auto" or N > 1) and `tp` ("auto", "uniform", "node"; default: "auto" when
    cluster.yaml has `tp:`, else "off") plan TP groups and several pipelines
    (partitioner.deploy.plan); with replicas != 1 the result is a `Deployment`. With
    `objective="serve"` every replica chooses its own batch and in-flight count under the limits.
    `objective=None` follows the workload (partitioner.planning.objective): a decode workload
    gets the serving answer of `partition plan` with no --objective
    (partitioner.planning.answer: one pipeline or per-kind replicas, Plan or Deployment), other
    workloads `balanced`.
    Raises `ConfigError` for bad files, `InfeasibleError` when nothing fits, and
    `InputError` for bad arguments; all are `PartitionerError`s.
    """
    from partitioner.planning.routing import Progress as Reports
    from partitioner.planning.routing import route

    if objective is None:
        from partitioner.planning.objective import default_objective

        model, cluster = load_inputs(model, cluster)
        objective = default_objective(model).objective
        if objective == "serve" and str(replicas).strip() == "1":
            from partitioner.planning.answer import serve_answer

            found, _ = serve_answer(model, cluster, regime=regime, solver=solver, order=order,
                                    time_limit_s=time_limit_s, tpot_ms=tpot_ms, ttft_ms=ttft_ms,
                                    max_batch=max_batch, engine=engine, tp=tp)
            result: Plan | Deployment = with_metadata_any(found, model, cluster)
            return result
        if objective == "serve":
            objective = "balanced"  # --replicas: each replica at the workload's (B, K), as the CLI

    request = request_for(model, cluster, M=M, regime=regime, objective=objective, solver=solver, order=order,
                          time_limit_s=time_limit_s, tpot_ms=tpot_ms, ttft_ms=ttft_ms, max_batch=max_batch,
                          engine=engine, replicas=replicas, tp=tp)
    return route(request, Reports(solve=progress))


def request_for(model: Any, cluster: Any, *, M: int = 8, regime: str = "async", objective: str = "balanced",
                solver: str = "auto", order: str | None = None, time_limit_s: float | None = None,
                tpot_ms: float | None = None, ttft_ms: float | None = None, max_batch: int | None = None,
                engine: str | None = None, replicas: int | str | None = 1, tp: str | None = None) -> PlanRequest:
    """The `PlanRequest` of `plan`'s arguments (files loaded; the budget starts now)."""
    from partitioner.solvers.budget import Budget

    model, cluster = load_inputs(model, cluster)
    return PlanRequest(model, cluster, engine=engine, objective=objective, M=M, regime=regime, solver=solver,
                       order=order, limits=ServeLimits(tpot_ms, ttft_ms, max_batch),
                       replicas=parse_replicas(replicas), tp=tp, budget=Budget(time_limit_s))


def wants_deployment(replicas: int | str, tp: str | None, cluster: Any) -> bool:
    """Whether a request goes to partitioner.deploy (partitioner.planning.routing.kind, without an engine)."""
    from partitioner.planning.routing import kind

    return kind(PlanRequest(None, cluster, replicas=parse_replicas(replicas), tp=tp)) == "deployment"
