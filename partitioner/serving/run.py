"""One run of the serve search: the K loop at each batch, each point's bound, tightening, pruning.

The state of one `partitioner.serving.search.search`: for each batch B (the grid of that module
doc), K in flight runs upward, each point (B, K) scored by the closed-loop decode model
(analysis.closed_loop, score.py) and bounded, and the points that could beat the best are
tightened. With an exact solver a batch is searched over every split instead
(partitioner.serving.exhaustive: every split listed, or its non-dominated splits found by the
label DP of serving.labels; exact per point, limits inside); the rest of this doc is the
least-w_max route of the batches that route cannot take (work ran out, an engine rule above
MAX_SPLITS, baselines). Why its bounds hold:
- K. For one split, tokens/s = B·min(1/w_max, K/R) grows with K until K·w_max >= R and is flat
  after, while P = max(K·w_max, R) only grows. More K also shrinks the set of splits that fit,
  so the least w_max, w*(K), never falls. Hence once the optimal split at K has P = K·w_max, no
  larger K gives more tokens/s (at most B/w*(K') <= B/w*(K)) nor a smaller TPOT: K runs from 1
  up to that point, or until K·B sequences no longer fit or K·w* exceeds the TPOT limit. A
  split found optimal at K that still fits at K + 1 is optimal there too (same w*, the feasible
  set only shrank), so it is reused without a new solve.
- Exactness per point. P >= max(K·w*, R_lb) with R_lb = Σ_l min_g c[g][l] (d and d_ret >= 0);
  a point is proven optimal for its (B, K) when its P meets this bound (the bottleneck binds).
  Where the round trip binds, the best split minimises max(K·w, R), which the solvers do not
  model; a Lagrangian bound does: max(a, b) >= λa + (1-λ)b, and with λ = (m-1)/(K+m-1) the
  right side is K/(K+m-1)·((m-1)·w + R), whose least value over splits is the exact "makespan"
  optimum T*(m) (Thm 2 at M = m) plus d_ret. So P* >= K·(T*(m) + d_ret_lb)/(K+m-1) for every
  m >= 1; m = 1 bounds by the round trip alone, m = K+1 weighs both terms equally, and each
  solve's split is a candidate too, and so are the engine baselines' splits at the first
  BASELINE_POINTS such (B, K) (a baseline can beat the search only at a point whose bound
  exceeds the best, so with the gap closed the search never loses to one). Only points whose bound could
  beat the best are tightened, with at most TIGHTEN_SOLVES solves and none on instances with
  G·L > TIGHTEN_MAX_SIZE, where one makespan solve takes seconds (a fixed budget keeps the
  answer deterministic; the gap left is reported).
  The plan is proven optimal over the grid when no bound exceeds the best tokens/s.
  Baselines (`even`, ...) keep their own split at every (B, K).
- Pruning (`prune`, the replica search's per-replica solves): at batch B every K has
  tokens/s = K·B / max(K·w, R) <= min(B / w*(1), N_cap / R_lb), since w*(K) >= w*(1) (above)
  and K·B <= N_cap (capacity.sequence_cap); once the K = 1 solve shows this below the best so
  far, B's larger K are skipped and the bound enters the search's upper bound. `start`: that
  batch is searched first (the best B of a similar replica), so the best rises early. The best
  plan is unchanged; the frontier then holds only the points searched.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

import numpy as np

from partitioner.errors import InfeasibleError, PartitionerError
from partitioner.problem import RTOL, CostTables, Problem, Solution, evaluate, objective_key
from partitioner.serving import splits
from partitioner.serving.capacity import sequence_cap
from partitioner.serving.engine_sched import batch_cap, engine_in_flight, in_flight_grid, schedule_of
from partitioner.serving.points import Limits, Point, limit_reason, with_in_flight
from partitioner.serving.score import Serving, serving_of
from partitioner.solvers.budget import Budget

__all__ = ["Rule"]

TIGHTEN_SOLVES = 16  # "makespan" solves spent closing round-trip gaps (each as costly as a plan)
TIGHTEN_MAX_SIZE = 1000  # G·L above which a makespan solve takes seconds: no tightening (gap reported)
BASELINE_POINTS = 4  # points whose bound could beat the best that also try the baselines' splits


class Rule(Protocol):
    """An engine's device-order rule (partitioner.solvers.engine_order): every split the search
    keeps is one the engine launches, so each solve and every baseline candidate goes through it."""

    def solve(self, problem: Problem) -> Solution: ...

    def admits(self, problem: Problem, solution: Solution) -> bool: ...


class _Search:
    def __init__(self, tables_at: Callable[[int], CostTables], regime: str, order: str, *, solver: str,
                 limits: Limits, deadline: float | None, exact: bool, rule: Rule | None = None,
                 prune: bool = False, budget: Budget | None = None, max_splits: int | None = None,
                 labels: bool | None = None) -> None:
        self.tables_at, self.regime, self.order, self.solver = tables_at, regime, order, solver
        self.budget = budget  # the caller's budget: its work counts this run's solves and points
        self.limits, self.deadline, self.exact, self.rule = limits, deadline, exact, rule
        self.prune, self.pruned = prune, [0.0]  # the bounds of the batches pruning skipped
        self.solves = self.points = 0
        self.ok: list[Point] = []
        self.all: list[Point] = []
        self.first_batch = 1
        self.fastest: tuple[float, Serving] | None = None  # least TPOT seen (for the error)
        self.quickest: tuple[float, Serving] | None = None  # least TTFT seen
        self.enumerate = exact and solver in ("auto", "brute")  # splits.py / labels.py where they apply
        # above it a batch's splits are searched by labels.py, not listed (None: splits.MAX_SPLITS)
        self.max_splits = splits.MAX_SPLITS if max_splits is None else max_splits
        self.label_work = 0  # labels.py's work so far; -1 once a batch ran out (the rest take the least-w_max route)
        self.labels = not prune if labels is None else labels  # labels.py above max_splits (module doc)
        self.enumerated = False  # some batch was searched over every split (its points are proven)
        self.room: dict[int, list[float]] = {}  # B -> [TPOT, TTFT] lower bounds at K = 1 (least-w_max route)

    def upper(self, p: Point) -> float:
        """Tokens/s no split at p's (B, K) within the TPOT limit can beat (0: none can meet it)."""
        tpot = self.limits.tpot_s
        if tpot is not None and p.period_lb > tpot * (1 + RTOL):
            return 0.0
        return math.inf if p.period_lb <= 0 else p.serving.sequences / p.period_lb

    def could_beat(self, p: Point) -> bool:
        best = max(q.serving.tokens_per_s for q in self.ok)
        return not p.proven and self.upper(p) > best * (1 + RTOL)

    def tighten(self, d_ret_lb: float) -> None:
        """Close the gap of points that might beat the best (module doc, "Exactness"): solve the
        "makespan" objective at M = m, min (m-1)·w + Στ + Σd = T*(m), for m = K + 1 and m = 1;
        each gives a bound P* >= K·(T*(m) + d_ret_lb) / (K + m - 1) and a split, scored too; then
        the baselines' splits. Points are taken by falling bound, so the first that cannot beat
        the best ends it (the best only rises)."""

        t = self.all[0].problem.tables
        budget = TIGHTEN_SOLVES if t.G * t.L <= TIGHTEN_MAX_SIZE else 0
        rounds = BASELINE_POINTS
        for p in sorted(self.all, key=lambda p: -self.upper(p)):
            if not self.exact or self.timed_out() or not self.could_beat(p) or (budget <= 0 and rounds <= 0):
                return
            K = p.problem.M
            for m in (K + 1, 1):
                if budget <= 0 or not self.could_beat(p):
                    break
                budget -= 1
                problem = replace(p.problem, M=m, objective="makespan")
                self.solves += 1
                try:
                    sol = self.exact_solve(problem)
                except InfeasibleError:
                    break
                p.period_lb = max(p.period_lb, K * (sol.lower_bound + d_ret_lb) / (K + m - 1))
                self.candidate(p, replace(problem, M=K, objective="throughput"), sol)
            if rounds > 0 and self.could_beat(p):
                rounds -= 1
                self.baselines(p)

    def candidate(self, p: Point, problem: Problem, sol: Solution) -> None:
        other = self.score(problem, sol, 0.0)
        other.period_lb, other.w_lb = p.period_lb, p.w_lb
        if limit_reason(other.serving, self.limits) is None:
            self.ok.append(other)

    def baselines(self, p: Point) -> None:
        """The engines' own splits at p's (B, K) as candidates, so the search never loses to one."""
        from partitioner import solvers

        for name in solvers.BASELINES:
            try:
                sol = solvers.solve(p.problem, name)
            except PartitionerError:
                continue  # this baseline cannot split the model over these devices (e.g. fewer layers)
            self.solves += 1
            if sol.feasible and (self.rule is None or self.rule.admits(p.problem, sol)):
                self.candidate(p, p.problem, sol)

    def timed_out(self) -> bool:
        if self.budget is not None and self.budget.spent(self.solves + self.points):
            return True
        return self.deadline is not None and time.monotonic() > self.deadline

    def solve(self, t: CostTables, K: int) -> tuple[Problem, Solution] | None:
        left = None if self.deadline is None else max(0.1, self.deadline - time.monotonic())
        if self.budget is not None and self.budget.deadline is not None:  # the budget's clock (tests inject it)
            left = max(0.1, self.budget.left(0.0)) if left is None else min(left, max(0.1, self.budget.left(0.0)))
        problem = Problem(t, M=K, regime=self.regime, objective="throughput", order=self.order,  # type: ignore[arg-type]
                          time_limit_s=left)
        self.solves += 1
        try:
            sol = self.exact_solve(problem)
        except InfeasibleError:
            return None
        return (problem, sol) if sol.feasible else None

    def exact_solve(self, problem: Problem) -> Solution:
        """The solver on `problem`, under the engine's order rule when one is given."""
        from partitioner import interrupts, solvers

        mark = interrupts.count()
        found = solvers.solve(problem, self.solver) if self.rule is None else self.rule.solve(problem)
        if interrupts.since(mark):  # Ctrl-C in the solve: the search stops with its best so far
            raise KeyboardInterrupt
        return found

    def score(self, problem: Problem, sol: Solution, r_lb: float) -> Point:
        m = evaluate(problem, sol.devices, sol.cuts)
        s = serving_of(problem.tables, sol.devices, sol.cuts, m, self.regime)
        sol = replace(sol, objective=objective_key(problem, m))
        w_lb = sol.lower_bound if self.exact else 0.0
        self.points += 1
        self.closest(s)
        return Point(problem, sol, s, max(problem.M * w_lb, r_lb), w_lb)

    def one_batch(self, B: int) -> bool:
        """Search K at batch B; False when nothing fits at K = 1 (larger B cannot fit either)."""
        base = self.tables_at(B)
        from partitioner.serving import exhaustive

        if exhaustive.applies(self, base):
            done = exhaustive.every_split(self, B, base)
            if done is not None:  # None: the label DP's work ran out, the least-w_max route follows
                return done
        r_lb = float(np.sum(base.cost.min(axis=0)))
        if schedule_of(base).scheduled:
            return self.engine_batch(base, r_lb)
        K = 1
        while K == 1 or not self.timed_out():  # at least one point, whatever the clock says
            found = self.solve(with_in_flight(base, K), K)
            if found is None:
                return K > 1
            problem, sol = found
            fresh = True
            while True:  # reuse this split while it fits (module doc); baselines re-solve
                point = self.score(problem, sol, r_lb)
                s = point.serving
                if s.max_sequences is not None and s.max_sequences < s.sequences:
                    if fresh:
                        return True  # the solver's memory check and capacity disagree: stop here
                    break
                fresh = False
                if K == 1:
                    self.note_bounds(base, point, r_lb)
                if self.record(point) or (K == 1 and self.cannot_beat(base, point, r_lb)):
                    return True
                K += 1
                if not self.exact:
                    break
                problem = replace(problem, tables=with_in_flight(base, K), M=K)
        return True

    def engine_batch(self, base: CostTables, r_lb: float) -> bool:
        """vLLM / SGLang fix K by the pipeline depth (partitioner.serving.engine_sched, the hook):
        K runs over the engine's K of 1..G stages, and every split found is scored at the K its
        own stage count runs (a split of S' stages found at K != K(S') is re-scored at K(S')),
        so every point kept is one the engine runs. A user's max_num_seqs caps the batch at
        max_num_seqs // K (engine_sched.batch_cap): a K whose cap is below B is skipped. False
        when nothing fits or no K admits B."""
        sched = schedule_of(base)

        def packs(K: int) -> bool:
            cap = batch_cap(sched, K)
            return cap is None or base.batch <= cap

        fits, seen = False, set()
        for K in in_flight_grid(sched, base.G, []):
            if fits and self.timed_out():
                break
            if not packs(K):
                continue
            found = self.solve(with_in_flight(base, K), K)
            if found is None:
                continue
            problem, sol = found
            k_engine = engine_in_flight(sched, len(sol.devices)) or K
            if (sol.devices, sol.cuts, k_engine) in seen or not packs(k_engine):
                continue
            seen.add((sol.devices, sol.cuts, k_engine))
            if k_engine != K:
                problem = replace(problem, tables=with_in_flight(base, k_engine), M=k_engine)
            point = self.score(problem, sol, r_lb)
            s = point.serving
            if s.max_sequences is not None and s.max_sequences < s.sequences:
                continue
            fits = True
            self.record(point)
        return fits
    def note_bounds(self, base: CostTables, point: Point, r_lb: float) -> None:
        """Batch B's lower bounds on TPOT and TTFT over every split: TPOT >= max(w*, R_lb) at
        K = 1 (more K only adds), TTFT >= Σ_l min_g prefill cost (serving.rescue tightens both)."""
        ttft = math.inf if base.prefill_cost is None else float(np.sum(base.prefill_cost.min(axis=0)))
        self.room[base.batch] = [max(point.w_lb, r_lb), ttft]

    @property
    def limits_open(self) -> bool:
        """Some least-w_max batch whose bounds do not rule the limits out: then "nothing met the
        limits" is not proven (those solves do not see the limits)."""
        tpot, ttft = self.limits.tpot_s, self.limits.ttft_s
        return any((tpot is None or a <= tpot * (1 + RTOL)) and (ttft is None or b <= ttft * (1 + RTOL))
                   for a, b in self.room.values())

    def closest(self, s: Serving) -> None:
        if self.fastest is None or s.tpot_s < self.fastest[0]:
            self.fastest = (s.tpot_s, s)
        if s.ttft_s is not None and (self.quickest is None or s.ttft_s < self.quickest[0]):
            self.quickest = (s.ttft_s, s)

    def cannot_beat(self, base: CostTables, point: Point, r_lb: float) -> bool:
        """`prune` (module doc): no K at this batch beats the best so far; its bound is kept."""
        if not self.prune or not self.ok:
            return False
        top = min(base.batch / point.w_lb if point.w_lb > 0 else math.inf,
                  sequence_cap(base) / r_lb if r_lb > 0 else math.inf)
        if top > max(q.serving.tokens_per_s for q in self.ok) * (1 + RTOL):
            return False
        self.pruned.append(top)
        return True

    def record(self, point: Point) -> bool:
        """Keep the point if it meets the limits; True when larger K cannot help (module doc)."""
        s = point.serving
        if limit_reason(s, self.limits) is None:
            self.ok.append(point)
        self.all.append(point)
        if s.decode_bound == "bottleneck":
            return True  # P = K·w_max: more K adds TPOT, not tokens/s
        next_lb = (s.in_flight + 1) * point.w_lb  # P(K+1) >= (K+1)·w*(K+1) >= (K+1)·w*(K)
        return self.limits.tpot_s is not None and next_lb > self.limits.tpot_s * (1 + RTOL)



def _d_ret_lb(t: CostTables) -> float:
    """The least return latency of any plan: 0 if one device could hold the model, else the
    least over ordered device pairs (score.return_latency)."""
    from partitioner.serving.score import return_latency

    if float(t.capacity_gb.max()) >= float(t.memory_gb.sum()) - t.tied_gb:
        return 0.0
    pairs = [(g, h) for g in range(t.G) for h in range(t.G) if g != h]
    return min((return_latency(t, (h, g)) for g, h in pairs), default=0.0)
