"""Exact minimum T(M): parametric search over the bottleneck threshold (docs/algorithms.md §3d).

T* = min_t [(M-1) t + g(t)], g(t) = min sum_s sigma_s subject to every stage's bottleneck
quantity <= t: tau_s for async (Thm 2: T = (M-1) tau_max + sum tau + sum d), sigma_s for
blocking (Thm 3: T = (M-1) sigma_max + sum sigma). g is a non-increasing step function whose
steps sit at candidate values (interval sums, plus delays for sigma), so only
t in [tau*, (T_incumbent - g(top)) / (M-1)] can help; the first incumbent is the tau* plan and
top = (T_incumbent - work_lb) / (M-1). Branch and bound over index intervals [a, b] of the
sorted candidates, best bound first: (M-1) t_a + (a lower bound on g(t_b)) bounds every t
inside. The lower bound is one pass of the relaxed free-order step (`relaxed`, only the
scarce classes counted), itself exact when its plan respects every class count; an interval
that survives gets g(t_b) exactly, whose plan (bottleneck t') settles all of [t', t_b], and the
rest is split at its midpoint. Where an exact g(t_b) is unaffordable (beyond `applies`) the
interval stays open and its key is part of the reported lower bound, so an incomplete search
still returns a real bound. Cost: the number of passes (measured 15-30 on the 64- and
256-device benchmarks) times one pass: O(L w N_K T) for the one-link relaxed step, N_K the
count vectors of the counted classes; `fixed` O(G T L w) in fixed order.
"""

from __future__ import annotations

import contextlib
import heapq
from collections.abc import Callable

import numpy as np

from partitioner.solvers.budget import TimeUp
from partitioner.solvers.dp.fixed import Plan
from partitioner.solvers.dp.relaxed import Unaffordable
from partitioner.solvers.dp.space import Space
from partitioner.solvers.dp.tables import cap

__all__ = ["min_makespan"]

INF = float(np.inf)


def min_makespan(
    space: Space, regime: str, M: int, T_of: Callable[[Plan], tuple[float, float]], work_lb: float = 0.0
) -> tuple[Plan, float, float]:
    """The plan minimising T(M), its T and a lower bound on T* ((inf, (), ()) if none fits); the
    bound equals T when the search is complete, which it always is where the full lattice step is
    affordable (`Space.banded_ok`). `T_of(plan)` returns the plan's exact T(M) and its bottleneck
    (tau_max or sigma_max); `work_lb` <= sum tau + sum d of every plan (e.g. sum_l min_g c[g][l])."""
    kind = "tau" if regime == "async" else "sigma"

    def caps(t: float) -> tuple[float, float]:
        return (cap(t), INF) if kind == "tau" else (INF, cap(t))

    seed = space.tau_plan()  # incumbent: every better plan has its bottleneck <= top
    if not np.isfinite(seed[0]):
        return seed, INF, INF
    best, (best_T, _) = seed, T_of(seed)
    top = best_T if M == 1 else min(best_T, (best_T - work_lb) / (M - 1))
    try:
        free = space.stages("sum", *caps(top), loose=True)
        g_top = free[0]
    except Unaffordable:
        free, g_top = (INF, (), ()), space.stages_bound("sum", *caps(top))[0]
    if np.isfinite(free[0]) and T_of(free)[0] < best_T:
        best, best_T = free, T_of(free)[0]
    if M == 1:
        return best, best_T, best_T if free[1] else min(best_T, g_top)
    lo = space.tau()
    if kind == "sigma" and space.banded_ok and not space.tiny:  # beyond it min sigma_max would count every class
        # (on a tiny lattice a wider candidate range costs fewer passes than this extra step)
        with contextlib.suppress(Unaffordable):  # else tau*: sigma_max >= tau_max >= tau*
            lo = space.stages("max", INF, INF, bound=cap(top))[0]
    hi = min(top, (best_T - g_top) / (M - 1))
    cand = space.values(kind, lo - max(1e-9 * abs(lo), 1e-12), cap(hi))
    if cand.size == 0:
        return best, best_T, best_T
    exact: dict[int, float] = {}
    flat: dict[int, int] = {}  # i -> s: g is constant on cand[s..i] (the plan of g(cand[i]) fits there)
    lower: dict[int, float] = {}

    def found(i: int, plan: Plan) -> float:
        nonlocal best, best_T
        exact[i], flat[i] = plan[0], i
        if np.isfinite(plan[0]):
            T, neck = T_of(plan)
            if best_T > T:
                best, best_T = plan, T
            flat[i] = min(i, int(np.searchsorted(cand, neck)))
        return plan[0]

    def LB(i: int) -> float:
        """A lower bound on g(cand[i]): exact when known, else one relaxed pass."""
        if i in exact:
            return exact[i]
        if i not in lower:
            value, plan = space.stages_bound("sum", *caps(float(cand[i])))
            lower[i] = value
            if plan is not None:
                return found(i, plan)
        return lower[i]

    def G(i: int) -> float | None:
        """g(cand[i]) exactly (None when the exact step is unaffordable)."""
        if i not in exact:
            try:
                found(i, space.stages("sum", *caps(float(cand[i])), loose=True))
            except Unaffordable:
                return None
        return exact[i]

    # intervals [a, b] of candidate indices, keyed by (M-1) cand[a] + (a lower bound on g(cand[b]))
    open_lb = INF  # the least key of the intervals the search could not resolve
    key = (M - 1) * float(cand[0]) + LB(cand.size - 1)
    heap = [(key, 0, cand.size - 1)]
    try:
        while heap:
            key, a, b = heapq.heappop(heap)
            if key >= best_T:
                break
            gb = G(b)
            if gb is None:
                open_lb = min(open_lb, key)
                continue
            if not np.isfinite(gb):
                continue  # g(cand[b]) = inf, so g = inf on [a, b]
            b = flat.get(b, b) - 1  # g is flat on [flat[b], b]: the plan found is best there
            if b < a:
                continue
            if b == a:
                heapq.heappush(heap, ((M - 1) * float(cand[a]) + max(LB(a), gb), a, a))
                continue
            mid = (a + b) // 2
            heapq.heappush(heap, ((M - 1) * float(cand[a]) + max(LB(mid), gb), a, mid))
            heapq.heappush(heap, ((M - 1) * float(cand[mid + 1]) + gb, mid + 1, b))
    except (TimeUp, KeyboardInterrupt):  # stopped: every open interval's key still bounds T*
        space.report_bound(min(best_T, open_lb, key, heap[0][0] if heap else INF))
        raise
    return best, best_T, min(best_T, open_lb)
