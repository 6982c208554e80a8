"""`--objective serve`: the split, batch B and in-flight count K that maximise decode tokens/s.

    maximise  K·B / P,   P = max(K·w_max, Στ + Σd + d_ret)           (analysis.closed_loop)
    subject to  KV of K·B sequences at the context fits on every stage (capacity.py),
                P <= TPOT limit, TTFT <= TTFT limit, B <= max batch.

An outer search over (B, K). For each B the cost tables are rebuilt (`tables_at(B)`: the
roofline depends on B, profiles interpolate their batch tables) and for each K the memory of
every layer is its weights plus the KV of K·B sequences. The inner problem at (B, K) is the
least P within the limits (the only split no other at that (B, K) dominates):
- exact (`--solver auto` or `brute`): up to splits.MAX_SPLITS splits per batch (2 GPUs
  always, 3 up to 258 layers, 4 up to 37, 5 up to 15) every split, every device subset
  included, is scored at once (splits.py, exhaustive.py); above, the label DP (labels.py)
  finds the splits no other dominates in (w_max, R, TTFT, KV capacity) without listing them,
  within labels.MAX_LABELS of counted work per batch. Either way the TPOT and TTFT limits and
  the round trip are inside the inner problem, blocking included (its closed-loop σ with
  d_ret), each point is proven, and the frontier is every non-dominated (tokens/s, TPOT) plan
  of the grid. An engine order rule (`rule`) is applied only to listed splits;
- otherwise (a baseline solver, an engine rule above MAX_SPLITS, a replica search's `prune`
  above MAX_SPLITS, a batch whose label DP ran out of work) the "throughput" objective with M = K: the exact solvers return the split with the
  least w_max (tau_max async, open-loop sigma_max blocking) and, among those, the least Στ + Σd,
  under that memory; the limits are checked on the plans found, bounds and tightening
  (partitioner.serving.run) report the gap, and when no plan found meets a limit that the
  bounds do not rule out the search says "not proven" (SolverError), never "infeasible".
Status (points.SearchResult): OPTIMAL exactly when no bound exceeds the best, TIME_LIMIT when
the grid was cut, else FEASIBLE with the gap.

Why this grid is enough:
- B. Every B from 1 up to 64, then powers of two, plus the largest B for which any split fits
  (memory only grows with B: KV, workspace and logits). With the roofline a layer's time is a
  maximum of affine functions of B with non-negative intercepts, so tau(B)/B never rises and
  tokens/s at fixed K is non-decreasing in B: without limits the best B is the largest that
  fits, which the grid holds; a TPOT or TTFT limit that binds between two grid points above 64
  costs at most their ratio (2). Profiles with batch tables: every B inside the tables' common
  range (same rule); scalar profiles: only the profile's own batch (its costs hold only there).
- K: points.in_flight_points (exact inner problem); partitioner.serving.run (the K loop, the
  bounds and the Lagrangian tightening, and the pruning of batches that cannot beat the best)
  otherwise.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace

from partitioner.errors import InfeasibleError, InputError, PartitionerError, SolverError
from partitioner.problem import RTOL, CostTables
from partitioner.serving.points import (
    Limits,
    Point,
    SearchResult,
    batch_grid,
    binding,
    pareto,
    with_in_flight,
)
from partitioner.serving.run import Rule, _d_ret_lb, _Search
from partitioner.serving.splits import MAX_SPLITS
from partitioner.solvers.budget import Budget

__all__ = ["Limits", "Point", "SearchResult", "batch_grid", "with_in_flight", "search", "serve_grid", "pareto", "MAX_BATCH"]

MAX_BATCH = 4096  # the grid's ceiling when neither memory nor --max-batch stops it


def fmt_time(seconds: float) -> str:
    return f"{seconds * 1e3:.4g} ms"


def _no_point(run: _Search, limits: Limits) -> PartitionerError:
    """Why no point was kept: InfeasibleError only when proven (every split was scored, the
    bounds rule the limits out, or a baseline's own split never meets them), else SolverError
    (the search was cut, or its least-w_max solves could not see a split that meets a limit)."""
    if run.points == 0 and run.timed_out():
        return SolverError("the time limit ran out before any batch and in-flight count was searched (not proven infeasible)")
    if run.points == 0 and not run.limits_open:
        from partitioner.problem import explain_infeasible

        first = run.tables_at(run.first_batch)
        return InfeasibleError(f"not even {first.batch} sequence(s) fit: " + explain_infeasible(with_in_flight(first, 1)))
    fastest, quickest = run.fastest, run.quickest
    tpot, ttft = limits.tpot_s, limits.ttft_s
    least_w = run.exact and (not run.enumerated or bool(run.room))  # some batch took the least-w_max route
    if (least_w and run.limits_open) or run.timed_out():
        return SolverError(
            "no plan found that meets " + " and ".join(
                f"the {n} limit {fmt_time(v)}" for n, v in (("TPOT", tpot), ("TTFT", ttft)) if v is not None)
            + ", not proven infeasible: " + ("the time limit ran out" if run.timed_out() else
                                             "the limits are checked after each least-bottleneck solve; every "
                                             "split is searched only with --solver auto or brute, up to "
                                             f"{MAX_SPLITS:,} splits or within the label search's work"))
    if least_w and run.room:  # its bounds proved it
        floors = [min(r[k] for r in run.room.values()) for k in (0, 1)]
        for name, limit, floor, what in (("TPOT", tpot, floors[0], "period"), ("TTFT", ttft, floors[1], "prefill")):
            if limit is not None and floor > limit * (1 + RTOL):
                return InfeasibleError(
                    f"no (batch, in_flight) meets the {name} limit {fmt_time(limit)}: every plan takes at least "
                    f"{fmt_time(floor)} (least {what} bound over the batches searched)")
        return InfeasibleError(
            f"no batch's bounds meet the TPOT limit {fmt_time(tpot or 0.0)} and the TTFT limit "
            f"{fmt_time(ttft or 0.0)} together (least bounds: TPOT {fmt_time(floors[0])}, TTFT {fmt_time(floors[1])})")
    if tpot is not None and fastest is not None and fastest[0] > tpot * (1 + RTOL):
        t, s = fastest
        return InfeasibleError(
            f"no (batch, in_flight) meets the TPOT limit {fmt_time(tpot)}: the fastest is "
            f"{fmt_time(t)} (batch {s.batch}, in_flight {s.in_flight}), {fmt_time(t - tpot)} over")
    if ttft is not None and quickest is None:
        return InfeasibleError("a TTFT limit was given but this model has no prefill costs (prefill_cost)")
    if ttft is not None and quickest is not None and quickest[0] > ttft * (1 + RTOL):
        t, s = quickest
        return InfeasibleError(
            f"no (batch, in_flight) meets the TTFT limit {fmt_time(ttft)}: the quickest prompt "
            f"takes {fmt_time(t)} (batch {s.batch}), {fmt_time(t - ttft)} over")
    return InfeasibleError(
        f"no split meets the TPOT limit {fmt_time(tpot or 0.0)} and the TTFT limit {fmt_time(ttft or 0.0)} together: "
        f"each alone can be met (fastest TPOT {fmt_time(fastest[0] if fastest else math.inf)}, quickest TTFT "
        f"{fmt_time(quickest[0] if quickest else math.inf)})")


def serve_grid(batches: list[int] | None, max_batch: int | None) -> list[int]:
    """The batch sizes the serve objective searches: `batch_grid` up to min(max_batch, MAX_BATCH),
    or a profile's own `batches` up to that; InputError when none is left."""
    cap = min(max_batch or MAX_BATCH, MAX_BATCH)
    grid = batch_grid(cap) if batches is None else [b for b in batches if b <= cap]
    if not grid:
        raise InputError(f"no batch size to search: the batches {batches} are all above max_batch {cap}")
    return grid


def search(
    tables_at: Callable[[int], CostTables],
    batches: list[int] | None,
    *,
    regime: str = "async",
    order: str = "free",
    solver: str = "auto",
    limits: Limits | None = None,
    time_limit_s: float | None = None,
    progress: Callable[[int, float, float], None] | None = None,
    rule: Rule | None = None,
    prune: bool = False,
    start: int | None = None,
    budget: Budget | None = None,
    max_splits: int | None = None,
    labels: bool | None = None,
) -> SearchResult:
    """The best (B, K, split) and the Pareto frontier (module doc). `batches=None`: the roofline
    grid up to the memory limit; else the given batch sizes in rising order. `progress(B, best
    tokens/s, elapsed s)` is called after each batch once a second has passed; Ctrl-C (and the
    time limit) stop the grid and return the best plan so far, without a bound. `prune`, `start`:
    partitioner.serving.run's module doc, "Pruning". `budget` (partitioner.solvers.budget): the
    grid also stops once its work limit is reached, counting each solve and scored point, or its
    deadline passes or Ctrl-C was pressed; the search then charges it with that work. A work limit
    cuts the grid at the same point on an idle and on a loaded machine. `max_splits`: the splits
    per batch up to which every split is listed (splits.py, None: its MAX_SPLITS); above, the label
    DP (labels.py) searches them if `labels` (None: unless `prune`, the replica searches, which keep
    the least-w_max route there: the label DP on every candidate replica costs minutes)."""
    from partitioner.solvers import BASELINES

    limits = limits or Limits()
    t0 = time.monotonic()
    deadline = None if time_limit_s is None else t0 + time_limit_s
    run = _Search(tables_at, regime, order, solver=solver, limits=limits, deadline=deadline,
                  exact=solver not in BASELINES, rule=rule, prune=prune, budget=budget, max_splits=max_splits,
                  labels=labels)
    grid = serve_grid(batches, limits.max_batch)
    run.first_batch = grid[0]
    done: list[int] = []
    complete = True
    try:
        if start in grid and run.one_batch(start):
            done.append(start)
        for i, B in enumerate(grid):
            if run.timed_out():
                complete = False
                break
            if B in done:
                continue
            if not run.one_batch(B):
                if batches is None and i > 0 and grid[i - 1] + 1 < B:
                    done += _last_fitting(run, grid[i - 1] + 1, B - 1)
                break
            done.append(B)
            if progress is not None and run.ok and time.monotonic() - t0 > 1.0:
                progress(B, max(p.serving.tokens_per_s for p in run.ok), time.monotonic() - t0)
    except KeyboardInterrupt:
        if not run.ok:
            raise
        complete = False
        run.deadline = time.monotonic()  # no tightening either: return what we have
    if not run.ok and run.exact and not run.enumerated and (limits.tpot_s or limits.ttft_s):
        from partitioner.serving.rescue import rescue

        rescue(run)
    if not run.ok:
        failed = _no_point(run, limits)
        _charge(run)
        raise failed
    run.tighten(_d_ret_lb(run.all[0].problem.tables))
    best = max(run.ok, key=lambda p: (p.serving.tokens_per_s, -p.serving.tpot_s))
    best = replace(best, serving=best.serving.with_binding(binding(best, run.ok, limits)))
    notes = [] if complete and not run.timed_out() else ["stopped (time limit, work budget or Ctrl-C): best plan so far"]
    # a grid cut short by the time limit bounds nothing beyond what it searched
    upper = max([best.serving.tokens_per_s, *run.pruned, *(run.upper(p) for p in run.all)]) if complete else math.inf
    _charge(run)
    return SearchResult(best, pareto(run.ok), run.points, run.solves, sorted(done), time.monotonic() - t0, upper, notes)


def _charge(run: _Search) -> None:
    """Charge the caller's budget with the run's work (its solves and scored points)."""
    if run.budget is not None:
        run.budget.charge(run.solves + run.points)
        run.budget = None


def _last_fitting(run: _Search, lo: int, hi: int) -> list[int]:
    """Bisect for the largest B in [lo, hi] where some split fits at K = 1, and search it."""
    best = None
    while lo <= hi and not run.timed_out():
        mid = (lo + hi) // 2
        base = run.tables_at(mid)
        if run.solve(with_in_flight(base, 1), 1) is None:
            hi = mid - 1
        else:
            best, lo = mid, mid + 1
    if best is None:
        return []
    run.one_batch(best)
    return [best]
