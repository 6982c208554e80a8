"""The report's solves: each distinct problem solved once, the whole report within one budget.

A report needs many plans of one cost table: three objectives at the plan's M, the makespan
optimum at every M of the Pareto sweep, four baselines and the what-ifs. `Solves` memoises
them by (objective, regime, M, order) and shares the report's one `Budget`
(partitioner.solvers.budget): a count of work (`REPORT_WORK` steps by default: each solve of the
report's own, each solve and scored point of the serve search) that ends the report's
searches at the same point on an idle and on a loaded machine, and the user's `--time-limit`
(a wall-clock cap, none by default) and Ctrl-C, which cut whatever part is running and keep
the best so far (`Budget.cut` records which part):

- `auto`: the exact DP wherever `dp.applies` (no CP-SAT there), always for the plan's own M;
  once the budget is spent, the Pareto sweep's further makespan plans are the best known
  instead. Where the DP does not apply, the best plan among the DP's exact optimum in the
  listed device order (`dp.hint`) and every plan already solved for this report (re-scored
  exactly at this M), reported with `optimal=False` and a real lower bound:
  `bounds.makespan_bound` with the exact free-order tau* of the balanced plan (Thm 2/3:
  T(M) >= (M - 1) tau* + ...). CP-SAT, hinted with that plan, runs only under a `--time-limit`
  whose share left (`CPSAT_SHARE`) is at least `MIN_CPSAT_S`: building its model alone takes
  about a second on 24 devices, and without a wall-clock limit its answer would depend on the
  time it was given.
- an explicit solver (`dp`, `cpsat`, `brute`) is run as asked, CP-SAT with the budget left.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from typing import Any, cast

from partitioner.errors import InfeasibleError, PartitionerError, SolverError
from partitioner.problem import Problem, Solution, evaluate, objective_key
from partitioner.result import Plan
from partitioner.solvers.budget import Budget

__all__ = ["MIN_CPSAT_S", "RESERVE_S", "CHARTS_S", "CHART_S", "REPORT_WORK", "Solves", "report_budget",
           "stopped", "wall_left"]

MIN_CPSAT_S = 2.0  # CP-SAT runs only when its share of the --time-limit left is at least this
CPSAT_SHARE = 0.25  # one CP-SAT solve gets this share of the budget left (later ones the rest)
CPSAT_BUILD_S = 1.0  # model building before CP-SAT's own clock starts (24 devices, 34 layers)
RESERVE_S = 0.8  # of --time-limit, kept back for scoring, the terminal tables and writing the outputs
CHARTS_S = 2.5  # ... and for matplotlib and the five charts when the HTML page is written
CHART_S = 0.5  # of --time-limit, one chart needs (the HTML page leaves out a chart it has no time for)
REPORT_WORK = 600  # the report's default work budget, in steps (module doc); on the bundled examples a
# step costs 0.5-10 ms of CPU (the serve search's, which take nearly all of it), a report 0.1-4.5 s

Progress = Callable[[str], None]


def report_budget(time_limit_s: float | None, work: int | None = REPORT_WORK) -> Budget:
    """The report's one budget, started now: `work` steps and the `--time-limit` cap (None: none)."""
    budget = Budget(time_limit_s)
    budget.work_limit = work
    return budget


def stopped(budget: Budget, reserve_s: float = 0.0) -> str:
    """What ended the report's time (the time limit, with `reserve_s` kept back for the outputs,
    or Ctrl-C; "" while it lasts): the parts that run after it are cut. A spent work budget ends
    only the searches that it bounds."""
    why = budget.why()
    if why == "" and wall_left(budget, reserve_s) <= 0:
        return "the time limit"
    return "" if why == "the work budget" else why


def wall_left(budget: Budget, reserve_s: float = 0.0) -> float:
    """Seconds of the budget's wall-clock cap left after `reserve_s` (inf without a cap)."""
    return math.inf if budget.deadline is None else budget.left(0.0) - reserve_s


class Solves:
    """Memoised solves of one problem's variants within the report's budget (module doc)."""

    def __init__(self, problem: Problem, solver: str = "auto", budget: Budget | None = None,
                 progress: Progress | None = None, reserve_s: float = RESERVE_S) -> None:
        self.problem = problem
        self.reserve_s = reserve_s
        self.solver = solver
        self.budget = budget if budget is not None else report_budget(None, None)
        self.progress = progress
        self.plans: dict[tuple[Any, ...], Plan] = {}
        self.failures: dict[tuple[Any, ...], InfeasibleError] = {}
        self.calls = 0  # solver runs (memo misses), for the benchmark

    # -- public ------------------------------------------------------------------------------
    def variant(self, objective: str | None = None, M: int | None = None, regime: str | None = None) -> Problem:
        p = self.problem
        return dataclasses.replace(p, objective=cast(Any, objective or p.objective), M=int(p.M if M is None else M),
                                   regime=cast(Any, regime or p.regime))

    def plan(self, objective: str | None = None, M: int | None = None, regime: str | None = None) -> Plan:
        """The plan of (objective, M, regime) on this problem's tables, solved at most once."""
        q = self.variant(objective, M, regime)
        key = (q.objective, q.regime, int(q.M), q.order)
        if key in self.failures:
            raise self.failures[key]
        if key not in self.plans:
            self._say(f"{q.objective} plan at M = {q.M} ({q.regime})")
            pool = self._pool(q.regime)
            try:
                self.plans[key] = solve_within(q, self.solver, self.budget, pool=pool, progress=self.progress,
                                               reserve_s=self.reserve_s, exact=int(q.M) == int(self.problem.M))
            except InfeasibleError as exc:
                self.failures[key] = exc
                raise
            except KeyboardInterrupt:  # Ctrl-C before this solve had a plan: the best known one (none: no report)
                if not pool:
                    raise
                self.budget.cut(f"the {q.objective} plan at M = {q.M}", "Ctrl-C")
                self.plans[key] = Plan.from_solution(q, _best_known(q, pool))
            self.calls += 1
        return self.plans[key]

    def baseline(self, name: str) -> Plan | str:
        """An engine baseline on the problem, or the reason it cannot be built."""
        from partitioner.api import solve_problem

        self._say(f"baseline {name}")
        try:
            return solve_problem(self.problem, name)
        except PartitionerError as exc:
            return str(exc)
        except KeyboardInterrupt:
            self.budget.cut(f"the {name} baseline", "Ctrl-C")
            return "not solved: Ctrl-C cut the report short"

    # -- internals ---------------------------------------------------------------------------
    def _pool(self, regime: str) -> list[Plan]:
        return [p for (obj, reg, _, _), p in self.plans.items() if reg == regime and p.feasible]

    def _say(self, what: str) -> None:
        if self.progress is not None:
            self.progress(what)


def _tau_star(pool: list[Plan]) -> float | None:
    """The exact free-order tau* when a proven balanced/throughput-async plan is in the pool."""
    for p in pool:
        if p.optimal and (p.objective == "balanced" or (p.objective == "throughput" and p.regime == "async")):
            return p.tau_max
    return None


def _listed(plan: Plan, names: dict[str, int]) -> bool:
    idx = [names[st.device] for st in plan.stages]
    return idx == sorted(idx)


def _best_known(q: Problem, pool: list[Plan]) -> Solution:
    """The best of the DP's exact optimum in the listed device order and the pool at q, with a
    real lower bound (`bounds.lower_bound` without the LP, raised by tau* below)."""
    from partitioner.solvers import dp
    from partitioner.solvers.bounds import lower_bound

    start = time.perf_counter()
    cands: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    lb = float(lower_bound(q, lp=False))
    try:
        fixed = dp.solve(dataclasses.replace(q, order="fixed"))  # polynomial; always applies
        cands.append((tuple(fixed.devices), tuple(fixed.cuts)))
        if q.order == "fixed":
            lb = max(lb, float(fixed.lower_bound))
    except (InfeasibleError, KeyboardInterrupt):  # Ctrl-C: no new solve starts, the pool stands
        if not pool:
            raise
    names = {n: g for g, n in enumerate(q.tables.device_names)}
    for p in pool:
        if q.order == "fixed" and not _listed(p, names):
            continue
        cands.append((tuple(names[st.device] for st in p.stages), (*(st.start for st in p.stages), q.L)))
    scored = []
    for devices, cuts in dict.fromkeys(cands):
        m = evaluate(q, devices, cuts)
        if m.fits:
            scored.append((objective_key(q, m), devices, cuts))
    if not scored:
        raise InfeasibleError("no plan found that fits the memory limits")
    key, devices, cuts = min(scored)
    tau = _tau_star(pool)
    if tau is not None:
        if q.objective == "makespan":
            from partitioner.solvers.bounds import makespan_bound

            lb = max(lb, makespan_bound(q, tau_lb=tau))
        else:
            lb = max(lb, tau)
    return Solution(devices=devices, cuts=cuts, solver="dp", optimal=lb >= key[0] * (1 - 1e-9), objective=key,
                    lower_bound=min(lb, key[0]), status="FEASIBLE",
                    wall_time_s=time.perf_counter() - start)


def solve_within(q: Problem, solver: str, budget: Budget, *, pool: list[Plan] | None = None,
                 progress: Progress | None = None, reserve_s: float = RESERVE_S, exact: bool = True) -> Plan:
    """One plan of q within what is left of the budget (module doc); charges one step per solve. `exact=False` (the Pareto sweep): once the budget is spent,
    the best known plan stands in for the makespan DP. A solve the time limit or Ctrl-C cut
    returns its best plan so far, and the budget records the cut."""
    from partitioner.api import solve_problem

    left = wall_left(budget, reserve_s)
    budget.charge(1)
    if solver == "brute":  # the enumeration checks its budget (solvers/brute.py): the budget left
        return _noted(budget, q, solve_problem(dataclasses.replace(q, time_limit_s=_limit(q, left)), "brute"))
    if solver not in ("auto", "cpsat"):
        return solve_problem(q, solver)
    if solver == "cpsat":
        return _noted(budget, q, solve_problem(dataclasses.replace(q, time_limit_s=_limit(q, left)), "cpsat",
                                               _cpsat_progress(progress)))
    from partitioner.solvers import dp

    if dp.applies(q) and (exact or q.objective != "makespan" or not pool or not budget.spent()):
        sub = budget.within()
        if budget.deadline is not None:  # the wall clock left after the reserve
            sub.deadline = budget.deadline - reserve_s
        try:
            found = dp.solve(q, sub)
        except SolverError:  # cut before its first plan: the best known plan, not proven
            budget.cut(f"the {q.objective} plan at M = {q.M}", "the time limit")
            return Plan.from_solution(q, _best_known(q, pool or []))
        return _noted(budget, q, Plan.from_solution(q, found))
    best = _best_known(q, pool or [])
    share = left * CPSAT_SHARE
    if best.optimal or share < MIN_CPSAT_S or budget.spent():
        return Plan.from_solution(q, best)
    from partitioner.solvers import cpsat

    if progress is not None:
        progress(f"  cp-sat for up to {share:.1f} s (the DP does not apply)")
    found = cpsat.solve(dataclasses.replace(q, time_limit_s=_limit(q, share - CPSAT_BUILD_S)), hint=best,
                        progress=_cpsat_progress(progress))
    if found.lower_bound < best.lower_bound:
        found = dataclasses.replace(found, lower_bound=best.lower_bound)
    return _noted(budget, q, Plan.from_solution(q, found))


def _noted(budget: Budget, q: Problem, plan: Plan) -> Plan:
    """`plan`, with the budget noting a solve the time limit or Ctrl-C cut short."""
    if plan.status in ("TIME_LIMIT", "INTERRUPTED"):
        budget.cut(f"the {q.objective} plan at M = {q.M}", "Ctrl-C" if plan.status == "INTERRUPTED" else
                   "the time limit")
    return plan


def _cpsat_progress(progress: Progress | None) -> Callable[[float, float, float], None] | None:
    if progress is None:
        return None
    from partitioner.report.units import fmt_time

    def show(incumbent: float, bound: float, elapsed: float) -> None:
        progress(f"  cp-sat {elapsed:.1f} s: incumbent {fmt_time(incumbent)}, bound {fmt_time(bound)}")

    return show


def _limit(q: Problem, left: float) -> float | None:
    """CP-SAT's limit: the problem's own limit (None: CP-SAT's default), capped by the budget left."""
    if not math.isfinite(left):
        return q.time_limit_s
    cap = max(left, 0.2)
    return cap if q.time_limit_s is None else min(float(q.time_limit_s), cap)
