"""The lexicographic steps after the period (docs/algorithms.md §3c).

balanced:            tau* = min tau_max; sigma* = min sigma_max s.t. tau_s <= tau*;
                     then min sum_s sigma_s s.t. tau_s <= tau*, sigma_s <= sigma*
                     (T(M) then has a fixed slope, Thm 2 / Thm 3, so minimising T = minimising the sum).
throughput/async:    tau*, then min sum sigma_s s.t. tau_s <= tau*          (Thm 2: T = (M-1) tau* + sum)
throughput/blocking: sigma* = min sigma_max, then min sum s.t. sigma_s <= sigma*  (Thm 3)
Each cap is widened by the tie tolerance (`tables.cap`), so ties within rtol 1e-9 stay eligible.
The sigma step is bounded by the sigma_max of the tau* plan (`Space.tau_plan`): the optimum
cannot exceed it, so in free order only states that can finish within it are searched.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from partitioner.solvers.dp.fixed import Plan
from partitioner.solvers.dp.space import Space
from partitioner.solvers.dp.tables import cap

__all__ = ["balanced", "throughput"]

INF = float(np.inf)


def balanced(space: Space, sigma_of: Callable[[Plan], float]) -> Plan:
    """Lexicographic (tau_max, sigma_max, T(M)); (inf, (), ()) when nothing fits. The tau* plan
    of the reachability DP is the incumbent whose sigma_max bounds the sigma step."""
    first = space.tau_plan()
    tau = first[0]
    if not np.isfinite(tau):
        return INF, (), ()
    sigma = space.stages("max", cap(tau), INF, bound=cap(sigma_of(first)))[0]
    return space.stages("sum", cap(tau), cap(sigma))


def throughput(space: Space, regime: str, sigma_of: Callable[[Plan], float]) -> Plan:
    """Lexicographic (period, T(M)), period tau_max (async) or sigma_max (blocking)."""
    first = space.tau_plan()
    if not np.isfinite(first[0]):
        return INF, (), ()
    if regime == "async":
        return space.stages("sum", cap(first[0]), INF)
    sigma = space.stages("max", INF, INF, bound=cap(sigma_of(first)))[0]
    return space.stages("sum", INF, cap(sigma))
