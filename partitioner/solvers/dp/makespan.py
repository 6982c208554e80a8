"""Exact minimum T(M) by branch and bound over the bottleneck value (docs/algorithms.md §3d).

T* = min_t [(M-1) t + g(t)], g(t) = min sum_s sigma_s subject to every stage's bottleneck
quantity <= t: tau_s for async (Thm 2: T = (M-1) tau_max + sum tau + sum d), sigma_s for
blocking (Thm 3: T = (M-1) sigma_max + sum sigma). g is a non-increasing step function whose
steps sit at candidate values (interval sums, plus delays for sigma). On an index interval
[a, b] of sorted candidates, (M-1) t_a + g(t_b) bounds every t inside from below; an interval
is dropped when that bound is >= the incumbent or g(t_a) = g(t_b) (then t_a is its best point);
intervals are explored best-bound first. A g(t) plan with bottleneck t' shows g is flat on [t', t].
Only t <= (T_incumbent - g(inf)) / (M-1) can help, which shrinks the candidate set up front;
the first incumbent is the tau* plan, and t <= (T_incumbent - work_lb) / (M-1) caps every g
call, so the free-order search only visits states that can still beat it. Cost: the number of
g evaluations (measured 10-45, a binary search's worth per flat step of g) times one sum step
(`fixed` O(G T L w) in fixed order, `banded` O(S T w) in free order); at large M the optimum's
bottleneck can sit far above tau*, where the bands are wide, which is why `applies` gives
makespan a smaller free-order budget.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

import numpy as np

from partitioner.solvers.dp.fixed import Plan
from partitioner.solvers.dp.space import Space
from partitioner.solvers.dp.tables import cap

__all__ = ["min_makespan"]

INF = float(np.inf)


def min_makespan(
    space: Space, regime: str, M: int, T_of: Callable[[Plan], tuple[float, float]], work_lb: float = 0.0
) -> tuple[Plan, float, int]:
    """The plan minimising T(M), its T, and the number of g evaluations ((inf, (), ()) if none).
    `T_of(plan)` returns the plan's exact T(M) and its bottleneck (tau_max or sigma_max);
    `work_lb` <= sum tau + sum d of every plan (e.g. sum_l min_g c[g][l])."""
    kind = "tau" if regime == "async" else "sigma"

    def g(t: float) -> Plan:
        return space.stages("sum", cap(t), INF) if kind == "tau" else space.stages("sum", INF, cap(t))

    seed = space.tau_plan()  # incumbent: every better plan has its bottleneck <= top
    if not np.isfinite(seed[0]):
        return seed, INF, 1
    seed_T = T_of(seed)[0]
    top = seed_T if M == 1 else min(seed_T, (seed_T - work_lb) / (M - 1))
    free = g(top)
    if not np.isfinite(free[0]):
        return seed, seed_T, 2
    best, (best_T, _) = free, T_of(free)
    if seed_T < best_T:
        best, best_T = seed, seed_T
    if M == 1:
        return best, best_T, 2
    lo = space.tau() if kind == "tau" else space.stages("max", INF, INF, bound=cap(top))[0]
    hi = min(top, (best_T - free[0]) / (M - 1))
    cand = space.values(kind, lo - max(1e-9 * abs(lo), 1e-12), cap(hi))
    if cand.size == 0:
        return best, best_T, 3
    cache: dict[int, float] = {}
    flat: dict[int, int] = {}  # i -> s: g is constant on cand[s..i] (the plan of g(cand[i]) fits there)

    def G(i: int) -> float:
        nonlocal best, best_T
        if i not in cache:
            plan = g(float(cand[i]))
            cache[i] = plan[0]
            flat[i] = i
            if np.isfinite(plan[0]):
                T, neck = T_of(plan)
                if best_T > T:
                    best, best_T = plan, T
                s = min(i, int(np.searchsorted(cand, neck)))
                flat[i] = s
                cache.setdefault(s, plan[0])
        return cache[i]

    evaluations = 0
    heap = [(-INF, 0, cand.size - 1)]  # best-first on the interval bound
    while heap:
        _, a, b = heapq.heappop(heap)
        ga, gb = G(a), G(b)
        b = max(a, flat.get(b, b))
        if ga <= cap(gb) or b - a <= 1 or (M - 1) * float(cand[a]) + gb >= best_T:
            continue
        mid = (a + b) // 2
        gm = G(mid)
        evaluations += 1
        for lo_i, hi_i, g_hi in ((a, mid, gm), (mid, b, gb)):
            heapq.heappush(heap, ((M - 1) * float(cand[lo_i]) + g_hi, lo_i, hi_i))
    return best, best_T, evaluations + 4
