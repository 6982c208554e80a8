"""The report's solves: each distinct problem solved once, the whole report within one budget.

A report needs many plans of one cost table: three objectives at the plan's M, the makespan
optimum at every M of the Pareto sweep, four baselines and the what-ifs. `Solves` memoises
them by (objective, regime, M, order) and shares one wall-clock deadline (`--time-limit`):

- `auto`: the exact DP wherever `dp.applies` (no CP-SAT there). Elsewhere the best plan among
  the DP's exact optimum in the listed device order (`dp.hint`) and every plan already solved
  for this report (re-scored exactly at this M), reported with `optimal=False` and a real lower
  bound: `bounds.makespan_bound` with the exact free-order tau* of the balanced plan (Thm 2/3:
  T(M) >= (M - 1) tau* + ...). CP-SAT, hinted with that plan, runs only when its share of the
  budget left (`CPSAT_SHARE`) is at least `MIN_CPSAT_S`: building its model alone takes about
  a second on 24 devices, so the default 5 s budget never calls it; `--time-limit 60` does.
  The makespan DP has no time limit of its own, so once the budget left is less than its
  longest run so far (and that run took more than `CHEAP_DP_S`), the best known plan (with its
  bound) stands in for it too.
- an explicit solver (`dp`, `cpsat`, `brute`) is run as asked, CP-SAT with the budget left.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from typing import Any, cast

from partitioner.errors import InfeasibleError, PartitionerError
from partitioner.problem import Problem, Solution, evaluate, objective_key
from partitioner.result import Plan

__all__ = ["MIN_CPSAT_S", "RESERVE_S", "CHARTS_S", "CHART_S", "Solves", "Deadline"]

MIN_CPSAT_S = 2.0  # CP-SAT runs only when its share of the budget left is at least this
CPSAT_SHARE = 0.25  # one CP-SAT solve gets this share of the budget left (later ones the rest)
CPSAT_BUILD_S = 1.0  # model building before CP-SAT's own clock starts (24 devices, 34 layers)
RESERVE_S = 0.8  # kept back for scoring, the terminal tables and writing the outputs
CHARTS_S = 2.5  # ... and for matplotlib and the five charts when the HTML page is written
CHART_S = 0.5  # one chart (CPU seconds on an idle core; the HTML page leaves out a chart it has no time for)
CHEAP_DP_S = 0.1  # an exact makespan DP known to take at most this much CPU time always runs
MAX_SLOWDOWN = 3.0  # the rendering reserve grows with the machine's load up to this factor

Progress = Callable[[str], None]


class Deadline:
    """A wall-clock budget (None: unbounded) started when the command starts."""

    def __init__(self, seconds: float | None, start: float | None = None) -> None:
        self.seconds = seconds
        self.start = time.perf_counter() if start is None else start
        self.cpu_start = time.process_time()

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def slowdown(self) -> float:
        """Wall seconds per CPU second so far (>= 1): on a machine whose cores other jobs hold,
        the work kept back for rendering takes this much longer too."""
        cpu = time.process_time() - self.cpu_start
        return min(MAX_SLOWDOWN, max(1.0, self.elapsed() / cpu)) if cpu > 0.2 else 1.0

    def left(self) -> float:
        return float("inf") if self.seconds is None else self.seconds - self.elapsed()


class Solves:
    """Memoised solves of one problem's variants (see the module doc)."""

    def __init__(self, problem: Problem, solver: str = "auto", deadline: Deadline | None = None,
                 progress: Progress | None = None, reserve_s: float = RESERVE_S) -> None:
        self.problem = problem
        self.reserve_s = reserve_s
        self.solver = solver
        self.deadline = deadline or Deadline(None)
        self.progress = progress
        self.plans: dict[tuple[Any, ...], Plan] = {}
        self.failures: dict[tuple[Any, ...], InfeasibleError] = {}
        self.calls = 0  # solver runs (memo misses), for the benchmark
        self.dp_makespan_s = 0.0  # CPU seconds of the longest exact makespan DP so far (no time limit)

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
            start = time.process_time()
            try:
                self.plans[key] = solve_within(q, self.solver, self.deadline, pool=self._pool(q.regime),
                                                progress=self.progress, reserve_s=self.reserve_s,
                                                dp_makespan_s=self.dp_makespan_s)
            except InfeasibleError as exc:
                self.failures[key] = exc
                raise
            self.calls += 1
            if q.objective == "makespan" and self.plans[key].solver == "dp" and self.plans[key].optimal:
                self.dp_makespan_s = max(self.dp_makespan_s, time.process_time() - start)
        return self.plans[key]

    def baseline(self, name: str) -> Plan | str:
        """An engine baseline on the problem, or the reason it cannot be built."""
        from partitioner.api import solve_problem

        self._say(f"baseline {name}")
        try:
            return solve_problem(self.problem, name)
        except PartitionerError as exc:
            return str(exc)

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
    except InfeasibleError:
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


def solve_within(q: Problem, solver: str, deadline: Deadline, *, pool: list[Plan] | None = None,
                 progress: Progress | None = None, reserve_s: float = RESERVE_S, dp_makespan_s: float = 0.0) -> Plan:
    """One plan of q within what is left of the deadline (module doc)."""
    from partitioner.api import solve_problem

    left = deadline.left() - reserve_s * deadline.slowdown()
    if solver == "brute":  # the enumeration checks its budget (solvers/brute.py): the budget left
        return solve_problem(dataclasses.replace(q, time_limit_s=_limit(q, left)), "brute")
    if solver not in ("auto", "cpsat"):
        return solve_problem(q, solver)
    if solver == "cpsat":
        return solve_problem(dataclasses.replace(q, time_limit_s=_limit(q, left)), "cpsat", _cpsat_progress(progress))
    from partitioner.solvers import dp

    if dp.applies(q) and (q.objective != "makespan" or dp_makespan_s <= max(left, CHEAP_DP_S) or not pool):
        return solve_problem(q, "dp")
    best = _best_known(q, pool or [])
    share = left * CPSAT_SHARE
    if best.optimal or share < MIN_CPSAT_S:
        return Plan.from_solution(q, best)
    from partitioner.solvers import cpsat

    if progress is not None:
        progress(f"  cp-sat for up to {share:.1f} s (the DP does not apply)")
    found = cpsat.solve(dataclasses.replace(q, time_limit_s=_limit(q, share - CPSAT_BUILD_S)), hint=best,
                        progress=_cpsat_progress(progress))
    if found.lower_bound < best.lower_bound:
        found = dataclasses.replace(found, lower_bound=best.lower_bound)
    return Plan.from_solution(q, found)


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
