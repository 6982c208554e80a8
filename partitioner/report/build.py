"""Assemble a `Report`: solve every objective and baseline on one problem, sweep the Pareto
frontier, attach the what-if diffs and the headline. Every solve goes through one memo
(`solving.Solves`), so each distinct problem is solved once within the report's budget.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from partitioner.errors import InputError
from partitioner.problem import Problem
from partitioner.report.compare import DEFAULT_MS, OPTIMAL, PlanRow, Report, WhatIf, infeasible_row, plan_row
from partitioner.report.decode import Decode
from partitioner.report.headline import Commands, headline
from partitioner.report.pareto import PARETO_MS, frontier, sweep
from partitioner.report.serving import Workload
from partitioner.report.solving import Deadline, Progress, Solves
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
    *,
    Ms: Sequence[int] = DEFAULT_MS,
    solver: str = "auto",
    baselines: Sequence[str] = BASELINES,
    objectives: Sequence[str] = OPTIMAL,
    solves: Solves | None = None,
    workload: Workload | None = None,
) -> tuple[PlanRow, ...]:
    """The optimal plan of each objective (infeasibility propagates: nothing fits), then each
    baseline (a baseline that fails or breaks memory becomes an infeasible row, never hidden)."""
    Ms = _check_Ms(Ms)
    solves = solves or Solves(problem, solver)
    # balanced first: its exact tau* bounds the others where the DP does not apply
    order = sorted(objectives, key=lambda o: o != "balanced")
    plans = {obj: solves.plan(obj) for obj in order}
    rows = [plan_row(obj, "optimal", plans[obj], Ms, workload) for obj in objectives]
    for name in baselines:
        plan = solves.baseline(name)
        rows.append(infeasible_row(name, "baseline", plan) if isinstance(plan, str)
                    else plan_row(name, "baseline", plan, Ms, workload))
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
    deadline: Deadline | None = None,
    progress: Progress | None = None,
    workload: Workload | None = None,
    commands: Commands | None = None,
    solves: Solves | None = None,
    decode: Callable[[], Decode | str] | None = None,
) -> Report:
    """Everything `partition report` shows, for `problem` (its M is the M plans optimise).

    `deadline` bounds the whole report (`solving`); `workload` gives tokens/s (`serving`);
    `commands(plan)` returns the engine command lines of the base plan for the headline; `solves`
    (a memo on `problem`) lets the caller share solves with its what-ifs; `decode()` returns the
    serve objective's comparison (`report.decode`) or why there is none, and runs before the
    Pareto sweep takes the budget."""
    if base not in OPTIMAL:
        raise InputError(f"base objective must be one of {', '.join(OPTIMAL)} (got {base!r})")
    solves = solves or Solves(problem, solver, deadline, progress)
    rows = compare_plans(problem, Ms=Ms, solver=solver, baselines=baselines, objectives=OPTIMAL, solves=solves,
                         workload=workload)
    base_row = next(r for r in rows if r.name == base)
    found = decode() if decode is not None else ""
    served = found if isinstance(found, Decode) else None
    points = sweep(problem, _check_Ms(list(pareto_Ms)), lambda q: solves.plan("makespan", q.M))
    base_plan = solves.plan(base)
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
        headline=headline(rows, base, int(problem.M), problem.regime, commands(base_plan) if commands else None),
        solves=solves.calls,
        serve_frontier=served.frontier if served is not None else (),
        decode=served,
        decode_note=found if isinstance(found, str) else "",
    )
