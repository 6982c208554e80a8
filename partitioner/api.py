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

__all__ = ["plan", "build_problem", "tables_for", "solve_problem"]

Progress = Callable[[float, float, float], None]


def tables_for(model: Any, cluster: Any) -> CostTables:
    """Load (if given paths) and build the cost tables c[g][l], m[l], b[l], alpha, beta."""
    from partitioner.costs import build_tables
    from partitioner.models import load_cluster, load_model

    if isinstance(model, (str, Path)):
        model = load_model(model)
    if isinstance(cluster, (str, Path)):
        cluster = load_cluster(cluster)
    return build_tables(model, cluster)


def build_problem(
    model: Any,
    cluster: Any,
    *,
    M: int = 8,
    regime: str = "async",
    objective: str = "balanced",
    order: str | None = None,
    time_limit_s: float | None = None,
) -> Problem:
    """The `Problem` a solver takes; `order=None` uses the cluster file's `order`."""
    if isinstance(cluster, (str, Path)):
        from partitioner.models import load_cluster

        cluster = load_cluster(cluster)
    tables = tables_for(model, cluster)
    return Problem(
        tables,
        M=M,
        regime=regime,  # type: ignore[arg-type]
        objective=objective,  # type: ignore[arg-type]
        order=(order or str(getattr(cluster, "order", "free"))),  # type: ignore[arg-type]
        time_limit_s=time_limit_s,
    )


def solve_problem(problem: Problem, solver: str = "auto", progress: Progress | None = None) -> Plan:
    """Run one solver on a built problem and score its answer."""
    from partitioner import solvers

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
    replicas: int | str = 1,
    tp: str | None = None,
) -> Any:
    """Plan which GPUs, in what order, hold which layers (issue 4).

    `replicas` ("auto" or N > 1) and `tp` ("auto", "uniform"; default: "auto" when cluster.yaml
    has `tp:`, else "off") plan TP groups and several pipelines (partitioner.deploy.plan); with
    replicas != 1 the result is a `Deployment`.

    Raises `ConfigError` for bad files, `InfeasibleError` when nothing fits, and
    `InputError` for bad arguments; all are `PartitionerError`s.
    """
    if isinstance(cluster, (str, Path)):
        from partitioner.models import load_cluster

        cluster = load_cluster(cluster)
    if replicas != 1 or tp not in (None, "off") or (tp is None and getattr(cluster, "tp", None) is not None):
        from partitioner.deploy.plan import plan_deployment

        return plan_deployment(model, cluster, replicas=replicas, tp=tp, M=M, regime=regime, objective=objective,
                               solver=solver, order=order, time_limit_s=time_limit_s)
    problem = build_problem(
        model, cluster, M=M, regime=regime, objective=objective, order=order, time_limit_s=time_limit_s
    )
    return solve_problem(problem, solver, progress)
