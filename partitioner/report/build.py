"""Assemble a `Report`: solve every objective and baseline on one problem, sweep the Pareto
frontier, and attach the what-if diffs. Solving goes through `partitioner.api.solve_problem`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from partitioner.errors import InputError, PartitionerError
from partitioner.problem import Problem
from partitioner.report.compare import DEFAULT_MS, OPTIMAL, PlanRow, Report, WhatIf, infeasible_row, plan_row
from partitioner.report.pareto import PARETO_MS, frontier, sweep
from partitioner.result import Plan
from partitioner.solvers import BASELINES

__all__ = ["solver_for", "compare_plans", "build_report"]

WhatIfRunner = Callable[[PlanRow], tuple[WhatIf, ...]]


def solver_for(solver: str) -> Callable[[Problem], Plan]:
    """A `Problem -> Plan` function running `solver` (scored by `Plan.from_solution`)."""
    from partitioner.api import solve_problem

    return lambda problem: solve_problem(problem, solver)


def _check_Ms(Ms: Sequence[int]) -> tuple[int, ...]:
    if not Ms:
        raise InputError("--M needs at least one value")
    for M in Ms:
        if isinstance(M, bool) or not isinstance(M, int) or M < 1:
            raise InputError(f"M must be an integer >= 1 (got {M!r})")
    return tuple(dict.fromkeys(int(M) for M in Ms))


def compare_plans(
    problem: Problem,
    Ms: Sequence[int] = DEFAULT_MS,
    solver: str = "auto",
    baselines: Sequence[str] = BASELINES,
    objectives: Sequence[str] = OPTIMAL,
) -> tuple[PlanRow, ...]:
    """The optimal plan of each objective (infeasibility propagates: nothing fits), then each
    baseline (a baseline that fails or breaks memory becomes an infeasible row, never hidden)."""
    Ms = _check_Ms(Ms)
    solve = solver_for(solver)
    rows = [plan_row(obj, "optimal", solve(dataclasses.replace(problem, objective=obj)), Ms)
            for obj in objectives]
    for name in baselines:
        try:
            plan = solver_for(name)(problem)
        except PartitionerError as exc:
            rows.append(infeasible_row(name, "baseline", str(exc)))
            continue
        rows.append(plan_row(name, "baseline", plan, Ms))
    return tuple(rows)


def build_report(
    problem: Problem,
    *,
    Ms: Sequence[int] = DEFAULT_MS,
    solver: str = "auto",
    base: str = "balanced",
    baselines: Sequence[str] = BASELINES,
    pareto_Ms: Sequence[int] = PARETO_MS,
    cluster: str = "",
    whatif: WhatIfRunner | None = None,
) -> Report:
    """Everything `partition report` shows, for `problem` (its M is the M plans optimise)."""
    if base not in OPTIMAL:
        raise InputError(f"base objective must be one of {', '.join(OPTIMAL)} (got {base!r})")
    rows = compare_plans(problem, Ms, solver, baselines, OPTIMAL)
    base_row = next(r for r in rows if r.name == base)
    points = sweep(problem, _check_Ms(list(pareto_Ms)), solver_for(solver))
    return Report(
        model=problem.tables.model_name,
        cluster=cluster,
        regime=problem.regime,
        plan_M=int(problem.M),
        Ms=_check_Ms(Ms),
        base=base,
        rows=rows,
        pareto=frontier(points),
        whatifs=whatif(base_row) if whatif is not None else (),
    )
