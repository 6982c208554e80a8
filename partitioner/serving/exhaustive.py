"""The serve search's batches over every split: each K's least-TPOT split within the TPOT and
TTFT limits, proven, so the per-(B, K) answer and the frontier are exact.

`every_split` is what `partitioner.serving.run._Search.one_batch` does at a batch with an exact
solver choice (auto, brute): up to `splits.MAX_SPLITS` splits (the run's `max_splits`) it scores
every split (splits.py); beyond, it searches the non-dominated splits with the label DP
(labels.py), which answers every (B, K) alike, within `labels.MAX_LABELS` of work per batch
and SEARCH_LABELS per search; past either (and after a batch ran out) a batch takes the
least-w_max route. The K range is `points.in_flight_points`.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from partitioner.problem import RTOL, CostTables, Problem, Solution, evaluate, objective_key
from partitioner.serving import labels
from partitioner.serving.points import Point, in_flight_points, limit_reason, with_in_flight
from partitioner.serving.score import serving_of
from partitioner.serving.splits import Splits, split_count, splits_of

if TYPE_CHECKING:
    from partitioner.serving.run import _Search

__all__ = ["SEARCH_LABELS", "applies", "every_split", "split_point"]

SEARCH_LABELS = 10 * labels.MAX_LABELS  # label work one search spends over its batches (then least-w_max)


def applies(run: _Search, base: CostTables) -> bool:
    """Whether batch `base` is searched over every split: an exact solver choice (auto, brute),
    at most `run.max_splits` splits or, for the label DP, `run.labels` and no engine order rule,
    and the scoring splits.py repeats: the free-memory KV capacity
    and the closed-loop P and single-prompt TTFT with K free. Tables that carry an engine's own
    KV pool (`kv_pool`), a request mix (`request_mix`: tokens/s and TTFT under load) or an engine
    that fixes K by the pipeline depth (`engine_id` in serving.engine_sched's SCHEDULED_ENGINES)
    take the least-w_max route until splits.py models them."""
    if not run.enumerate or (split_count(base.G, base.L, run.order) > run.max_splits
                             and (run.rule is not None or not run.labels)):
        return False
    if getattr(base, "kv_pool", None) is not None or getattr(base, "request_mix", None) is not None:
        return False
    try:
        sched = importlib.import_module("partitioner.serving.engine_sched")
    except ImportError:
        return True
    return getattr(base, "engine_id", None) not in getattr(sched, "SCHEDULED_ENGINES", ())


def every_split(run: _Search, B: int, base: CostTables) -> bool | None:
    """Batch B over every split (splits.py) or its non-dominated splits (labels.py): at each K
    the least-TPOT split within the limits, proven; False when nothing fits at K = 1, None when
    the label DP ran out of work (the caller takes the least-w_max route)."""
    from partitioner.limits import limit

    tpot, ttft = run.limits.tpot_s, run.limits.ttft_s
    cap = math.inf if tpot is None else tpot * (1 + RTOL)
    most = limit("MAX_MICROBATCHES")
    listed = split_count(base.G, base.L, run.order) <= run.max_splits
    sp: Splits | None
    if listed:
        sp = splits_of(base, run.regime, run.order, _keep(run, base))
    else:
        if not 0 <= run.label_work <= SEARCH_LABELS:
            return None
        sp = _labelled(run, base, n_min=B, w_cap=cap, r_cap=cap, most=most,
                       ttft_cap=math.inf if ttft is None else ttft * (1 + RTOL),
                       keys=labels.KEYS if ttft is not None else ("w", "R", "N"))
        run.label_work = -1 if sp is None else run.label_work + sp.work
        if sp is None:
            return None
    run.solves += 1
    if not (sp.N >= B).any():
        if listed or (tpot is None and ttft is None):
            return False
        return _none_within(run, B, base)
    run.enumerated = True
    if run.prune and run.ok and _cannot_beat(run, sp, B, most):
        return True
    ttft_ok = np.ones(sp.w.shape, dtype=bool) if ttft is None else sp.ttft <= ttft * (1 + RTOL)
    found = False
    for K, allowed in in_flight_points(sp, B, cap, ttft_ok, most):
        fit = sp.N >= K * B
        period = np.maximum(K * sp.w, sp.trip)
        live = fit & allowed & ttft_ok & (period <= cap)
        point = _least(run, sp, base, K, period, live, float(sp.w[fit].min()))
        if point is not None:
            run.ok.append(point)
            run.all.append(point)
            found = True
    if not found and (tpot is not None or ttft is not None):  # what the error names
        if not listed:
            return _none_within(run, B, base)
        _closest(run, sp, B, base)
    return True


def _none_within(run: _Search, B: int, base: CostTables) -> bool | None:
    """No split within the limits at batch B (labels.py). While the search has no point yet:
    the least TPOT at K = 1 and the least TTFT of the splits that hold B sequences, for the
    error, and False when none does (the grid ends); None when a DP runs out of work. With a
    point, True: the grid goes on, each batch's capped search ends early."""
    for keys in () if run.ok else (("w", "R"), ("ttft",)):
        sp = _labelled(run, base, n_min=B, keys=keys)
        if sp is None:
            return None
        if not sp.w.size:
            return False
        run.enumerated = True
        _closest(run, sp, B, base)
    return True


def _labelled(run: _Search, base: CostTables, **kw: Any) -> labels.LabelSplits | None:
    """labels.label_splits on `base` as the run's solves go: none starts after a Ctrl-C in this
    command, and one seen while it runs (partitioner.interrupts) stops it and the search."""
    from partitioner import interrupts

    interrupts.no_new_solve()
    mark = interrupts.count()
    sp = labels.label_splits(base, run.regime, run.order, work=labels.MAX_LABELS,
                             stop=lambda: run.timed_out() or interrupts.since(mark), **kw)
    if interrupts.since(mark):
        raise KeyboardInterrupt
    return sp


def _closest(run: _Search, sp: Splits, B: int, base: CostTables) -> None:
    """The splits of least TPOT at K = 1 and least TTFT that hold B sequences, seen by the error."""
    fit = sp.N >= B
    for key in (np.maximum(sp.w, sp.trip), sp.ttft):
        if np.isfinite(key[fit]).any():
            s = split_point(run, sp, base, 1, int(np.flatnonzero(fit)[np.argmin(key[fit])]), 0.0).serving
            run.closest(s)


def _cannot_beat(run: _Search, sp: Splits, B: int, most: int) -> bool:
    """`prune` (partitioner.serving.run, "Pruning"): no K at batch B beats the best so far. Split
    c gives at most B·min(1/w_c, K_c/R_c) tokens/s over every K, K_c = min(N_c // B, most) the
    most that fit; below the best everywhere, the batch is skipped and its bound kept."""
    fit = sp.N >= B
    k_most = np.minimum(np.floor(sp.N[fit] / B), most)
    with np.errstate(divide="ignore"):
        top = float(np.max(B * np.minimum(1.0 / sp.w[fit], k_most / sp.trip[fit])))
    if top > max(q.serving.tokens_per_s for q in run.ok) * (1 + RTOL):
        return False
    run.pruned.append(top)
    return True


def _least(run: _Search, sp: Splits, base: CostTables, K: int, period: np.ndarray, live: np.ndarray,
           w_lb: float) -> Point | None:
    """The split of least P among `live` (ties: least w_max, R, TTFT, index), re-scored by
    score.py; one the exact scoring rejects (a float tie at a limit) gives way to the next."""
    live = live.copy()
    for _ in range(8):
        if not live.any():
            return None
        top = float(period[live].min())
        tie = np.flatnonzero(live & (period <= top * (1 + RTOL) + 1e-15))
        i = int(tie[np.lexsort((tie, sp.ttft[tie], sp.trip[tie], sp.w[tie]))][0])
        point = split_point(run, sp, base, K, i, w_lb)
        s = point.serving
        if limit_reason(s, run.limits) is None and (s.max_sequences is None or s.max_sequences >= s.sequences):
            return point
        live[i] = False
    return None


def split_point(run: _Search, sp: Splits, base: CostTables, K: int, i: int, w_lb: float) -> Point:
    """Split i of `sp` at K in flight as a proven point (its TPOT is the least at (B, K))."""
    devices, cuts = sp.plan(i)
    t = with_in_flight(base, K)
    problem = Problem(t, M=K, regime=run.regime, objective="throughput", order=run.order)  # type: ignore[arg-type]
    m = evaluate(problem, devices, cuts)
    s = serving_of(t, devices, cuts, m, run.regime)
    key = objective_key(problem, m)
    engine = getattr(run.rule, "engine", None)
    name = run.solver if engine is None else f"{run.solver}+{engine}-order"
    sol = Solution(devices, cuts, solver=name, optimal=True, objective=key, lower_bound=key[0])
    run.points += 1
    return Point(problem, sol, s, s.tpot_s, w_lb)


def _keep(run: _Search, base: CostTables) -> Callable[[tuple[int, ...]], bool]:
    """The device sequences the engine's order rule launches (every one without a rule)."""
    rule = run.rule
    if rule is None:
        return lambda devices: True
    problem = Problem(base, M=1, regime=run.regime, objective="throughput", order=run.order)  # type: ignore[arg-type]
    return lambda devices: rule.admits(problem, Solution(devices, (), "", True, (), 0.0))
