"""`speed`: layers proportional to device speed, a Metis-like greedy fill in listed order.

speed_g = 1 / sum_l c[g][l] (the device's time for the whole model), share
f_g = speed_g / sum_h speed_h. Like Metis' `LayerComputeBalancer`
(SamsungLabs/Metis `model/load_balancer.py`), which fills stages in proportion to their
compute with layer cost ratios taken from one device type, the per-layer work is
w_l = c[g_ref][l] / sum_l c[g_ref][l] with the first listed device as the reference.
Devices are filled in listed order: device k ends its stage at the layer boundary e_k >=
e_{k-1} whose cumulative work W(e_k) = sum_{l < e_k} w_l is closest to its cumulative share
F_k = f_0 + ... + f_k (ties: the earlier boundary); the last device takes the rest.
Devices that get no layers are left out of the plan (the reason says which).
"""

from __future__ import annotations

import time

import numpy as np

from partitioner.errors import InputError
from partitioner.problem import Problem, Solution
from partitioner.solvers.baselines._common import finish

__all__ = ["solve", "speed_shares", "greedy_cuts"]


def speed_shares(cost: np.ndarray) -> np.ndarray:
    """f_g = speed_g / sum speed, with speed_g = 1 / sum_l c[g][l]."""
    speed = 1.0 / np.sum(cost, axis=1)
    return np.asarray(speed / speed.sum())


def greedy_cuts(work: np.ndarray, shares: np.ndarray) -> list[int]:
    """Boundaries 0 = e_0 <= e_1 <= ... <= e_G = L filling each device up to its share."""
    L = len(work)
    W = np.concatenate([[0.0], np.cumsum(work / work.sum())])
    F = np.cumsum(shares)
    cuts = [0]
    for k in range(len(shares) - 1):
        lo = cuts[-1]
        e = lo + int(np.argmin(np.abs(W[lo:] - F[k])))
        cuts.append(e)
    cuts.append(L)
    return cuts


def solve(problem: Problem) -> Solution:
    """Speed-proportional greedy over all devices in listed order (status BASELINE)."""
    start = time.perf_counter()
    cost = np.asarray(problem.tables.cost, dtype=float)
    totals = np.sum(cost, axis=1)
    if not np.all(np.isfinite(totals) & (totals > 0)):
        bad = int(np.flatnonzero(~(np.isfinite(totals) & (totals > 0)))[0])
        raise InputError(
            f"the speed baseline needs a finite, positive model time on every device; "
            f"device {problem.tables.device_names[bad]!r} has {float(totals[bad])!r} s"
        )
    cuts = greedy_cuts(cost[0], speed_shares(cost))
    return finish(problem, "speed", tuple(range(problem.G)), cuts, started=start)
