"""Assemble a `Report`: solve every objective and baseline on one problem, sweep the Pareto
frontier, attach the what-if diffs and the headline. Every solve goes through one memo
(`solving.Solves`), so each distinct problem is solved once within the report's budget.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from partitioner.errors import InputError
from partitioner.problem import Problem
from partitioner.report.compare import (
    DEFAULT_MS,
    OPTIMAL,
    ParetoPoint,
    PlanRow,
    Report,
    WhatIf,
    infeasible_row,
    plan_row,
)
from partitioner.report.decode import Decode
from partitioner.report.headline import Candidate, Commands, choose, headline, meets_limits
from partitioner.report.pareto import PARETO_MS, frontier, sweep
from partitioner.report.serving import Workload
from partitioner.report.solving import Progress, Solves, stopped
from partitioner.result import Plan
from partitioner.solvers import BASELINES
from partitioner.solvers.budget import Budget

__all__ = ["solver_for", "compare_plans", "candidates", "build_report"]

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
    return _compare(problem, Ms=Ms, solver=solver, baselines=baselines, objectives=objectives, solves=solves,
                    workload=workload)[0]


def _compare(problem: Problem, *, Ms: Sequence[int], solver: str, baselines: Sequence[str],
             objectives: Sequence[str], solves: Solves | None, workload: Workload | None,
             ) -> tuple[tuple[PlanRow, ...], dict[str, Plan]]:
    """`compare_plans` and the Plan behind each row that has one."""
    Ms = _check_Ms(Ms)
    solves = solves or Solves(problem, solver)
    # balanced first: its exact tau* bounds the others where the DP does not apply
    order = sorted(objectives, key=lambda o: o != "balanced")
    plans: dict[str, Plan] = {obj: solves.plan(obj) for obj in order}
    rows = [plan_row(obj, "optimal", plans[obj], Ms, workload) for obj in objectives]
    for name in baselines:
        plan = solves.baseline(name)
        if isinstance(plan, str):
            rows.append(infeasible_row(name, "baseline", plan))
        else:
            rows.append(plan_row(name, "baseline", plan, Ms, workload))
            plans[name] = plan
    return tuple(rows), plans


def candidates(problem: Problem, rows: tuple[PlanRow, ...], plans: dict[str, Plan], pareto: Sequence[ParetoPoint],
               solves: Solves, served: Decode | None, Ms: Sequence[int],
               workload: Workload | None) -> list[Candidate]:
    """Every plan the report shows, as the headline would present it (`headline.choose`)."""
    peers = tuple(r for r in rows if r.kind == "baseline")
    at = f"at M = {int(problem.M)}, {problem.regime}"
    out = [Candidate(r.name, (f"the {r.name} objective" if r.kind == "optimal" else f"{r.label}'s {r.name} split")
                     + f" {at}", r, plans[r.name], peers)
           for r in rows if r.name in plans]
    for p in pareto:
        if p.tokens_per_s <= 0:
            continue
        plan = solves.plan("makespan", p.M)
        name = f"makespan@M={p.M}"
        out.append(Candidate(name, f"the makespan objective at M = {p.M} (Pareto sweep), {problem.regime}",
                             plan_row(name, "optimal", plan, Ms, workload), plan, peers))
    if served is not None:
        src = f"`--objective serve` at batch {served.batch} × {served.in_flight} in flight"
        dec_peers = tuple(r for r in served.rows if r.kind == "baseline")
        for r, plan in zip(served.rows, served.plans or (None,) * len(served.rows), strict=True):
            if plan is not None:
                what = src if r.name == "serve" else f"{r.label}'s {r.name} split at the serve plan's batch"
                out.append(Candidate(r.name if r.name == "serve" else f"{r.name}@serve", what, r, plan, dec_peers))
    return out


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
    budget: Budget | None = None,
    progress: Progress | None = None,
    workload: Workload | None = None,
    commands: Commands | None = None,
    solves: Solves | None = None,
    decode: Callable[[], Decode | str] | None = None,
    tpot_s: float | None = None,
    ttft_s: float | None = None,
    deployment: Callable[[tuple[PlanRow, ...]], Candidate | str | None] | None = None,
) -> Report:
    """Everything `partition report` shows, for `problem` (its M is the M plans optimise).

    `budget` bounds the whole report (`solving`; the parts it cut are the report's `cut`); `workload` gives tokens/s (`serving`);
    `commands(plan)` returns the engine command lines of the base plan for the headline; `solves`
    (a memo on `problem`) lets the caller share solves with its what-ifs; `decode()` returns the
    serve objective's comparison (`report.decode`) or why there is none, and runs before the
    Pareto sweep takes the budget. The headline is the plan with the most tokens/s of all these
    (`headline.choose`, under the `tpot_s`/`ttft_s` limits when a plan meets them)."""
    if base not in OPTIMAL:
        raise InputError(f"base objective must be one of {', '.join(OPTIMAL)} (got {base!r})")
    solves = solves or Solves(problem, solver, budget, progress)
    budget = solves.budget
    rows, plans = _compare(problem, Ms=Ms, solver=solver, baselines=baselines, objectives=OPTIMAL, solves=solves,
                           workload=workload)
    base_row = next(r for r in rows if r.name == base)
    found = decode() if decode is not None else ""
    served = found if isinstance(found, Decode) else None
    points = sweep(problem, _check_Ms(list(pareto_Ms)), lambda q: solves.plan("makespan", q.M), workload,
                   more=lambda: not stopped(budget, solves.reserve_s))
    why = stopped(budget, solves.reserve_s)
    if len(points) < len(pareto_Ms) and why:
        budget.cut(f"the Pareto sweep ({len(points)} of its {len(pareto_Ms)} values of M solved)", why)
    pareto = frontier(points)
    cands = candidates(problem, rows, plans, pareto, solves, served, _check_Ms(Ms), workload)
    extra = deployment(rows) if deployment is not None else None  # --replicas/--tp (report.replicas)
    cands += [extra] if isinstance(extra, Candidate) else []
    whatifs = whatif(base_row) if whatif is not None else ()
    if any(w.reason.startswith("not planned:") for w in whatifs):
        budget.cut(f"the what-ifs ({sum(w.reason.startswith('not planned:') for w in whatifs)} of {len(whatifs)} "
                   "not planned)", stopped(budget, solves.reserve_s))
    chosen = choose(cands, tpot_s, ttft_s)
    within = chosen is None or meets_limits(chosen.row.metrics, tpot_s, ttft_s)
    head = None
    if chosen is not None:
        head = headline(chosen, int(problem.M), problem.regime, commands(chosen.plan) if commands else None,
                        compared=len(cands), within_limits=within)
    return Report(
        model=problem.tables.model_name,
        cluster=cluster,
        regime=problem.regime,
        plan_M=int(problem.M),
        Ms=_check_Ms(Ms),
        base=base,
        rows=rows,
        pareto=pareto,
        whatifs=whatifs,
        headline=head,
        solves=solves.calls,
        serve_frontier=served.frontier if served is not None else (),
        decode=served,
        decode_note=found if isinstance(found, str) else "",
        replicas_note=extra if isinstance(extra, str) else "",
        cut=tuple(budget.notes),
    )
