"""The integer step of column generation: the deployment over the solved columns, and closing the gap.

The deployment itself is the integer program over the solved columns (CP-SAT, one worker; docs
algorithms.md §5), exact for them: max Σ_i v_i·y_i over Σ_i y_i·x_i <= N, y_i ∈ Z>=0 (and
Σ_i y_i = r for a fixed count; partitioner.deploy.columns' module doc). The LP bound's gap to it
is closed by reduced-cost filtering with the final duals (`_close`): only columns whose reduced
cost could be part of a better deployment enter an integer program valued by u >= v, which bounds
every better deployment. `_late`: the time limit, less RESERVE of it kept for the last integer
program and the replicas' placing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from partitioner.solvers.budget import now

CLOSE_ROUNDS = 40  # integer programs over the filtered columns (each followed by the solves it asks for)
MAX_IP_COLUMNS = 50_000
IP_SECONDS = 10.0
RESERVE = 0.04  # of the time limit, kept for the last integer program and the replicas' placing


def _close(X: np.ndarray, u: np.ndarray, solved: dict[int, tuple[float, Any]], solve: Callable[[int], None],
           last: tuple[np.ndarray, float, float, float, int], N: tuple[int, ...], replicas: int | None,
           chosen: list[tuple[int, ...]], total: float, best_bound: float, start: float,
           time_limit_s: float | None, refine: set[int]) -> tuple[list[tuple[int, ...]], float, float, str]:
    """Close the LP gap by reduced-cost filtering: with the final duals (π, μ) and P0 = π·N + μ·r,
    a deployment holding column j is worth at most P0 + red_j + (R_max − 1)·max(0, max red), so
    one that beats the incumbent uses only columns with red_j above total − P0 − (R_max − 1)·max red
    (and no replica of more than c nodes unless the tail passes the same test). The integer
    program over those columns valued by u (CP-SAT) bounds every better deployment; the unsolved
    columns its answer uses are solved and it is run again, until its answer is all solved."""
    pi, mu, p0, tail, r_max = last
    Xf = X.astype(float)
    for _ in range(CLOSE_ROUNDS):
        if best_bound <= total * (1 + 1e-9) or _late(start, time_limit_s, RESERVE):
            break
        red = u - Xf @ pi - mu
        top = max(0.0, float(red.max()))
        thr = total - p0 - (r_max - 1) * top
        if tail > thr:
            break  # a replica of more than c nodes might be part of a better deployment
        cand = np.flatnonzero(red > thr - 1e-9 * max(1.0, total))
        if len(cand) > MAX_IP_COLUMNS:
            break
        res = _ip(X[cand], u[cand], N, replicas, start, time_limit_s)
        if res is None:
            break
        ys, ip_bound, proven = res
        best_bound = min(best_bound, max(total, ip_bound))
        used = {int(cand[j]): y for j, y in enumerate(ys) if y > 0}
        new = [i for i in used if i not in solved or i in refine]
        if not new:
            value = math.fsum(solved[i][0] * y for i, y in used.items())
            if value > total:
                chosen = [tuple(int(a) for a in X[i]) for i, y in used.items() for _ in range(y)]
                total = value
            if proven:
                best_bound = min(best_bound, max(total, math.fsum(u[i] * y for i, y in used.items())))
            break
        for i in new:
            solve(i)
        better, value = _integer(X, solved, N, replicas, start, time_limit_s)
        if value > total:
            chosen, total = better, value
    return chosen, total, best_bound, "time_limit" if _late(start, time_limit_s, RESERVE) else ""


def _late(start: float, time_limit_s: float | None, reserve: float = 0.0) -> bool:
    """Past the time limit, less `reserve` of it kept for the final integer program and placing."""
    return time_limit_s is not None and now() - start > time_limit_s * (1 - reserve)


def _ip(X: np.ndarray, u: np.ndarray, N: tuple[int, ...], replicas: int | None, start: float,
        time_limit_s: float | None) -> tuple[list[int], float, bool] | None:
    """max Σ u_i y_i over Σ y_i x_i <= N (Σ y_i = r) by CP-SAT with u rounded up: (y, an upper
    bound of the optimum, proven)."""
    from ortools.sat.python import cp_model

    scale = 1e6 / float(u.max())
    m = cp_model.CpModel()
    ys = [m.new_int_var(0, min(int(N[k] // x[k]) for k in range(len(N)) if x[k] > 0), "") for x in X]
    for k in range(len(N)):
        terms = [int(x[k]) * y for x, y in zip(X, ys, strict=True) if x[k]]
        if terms:
            m.add(sum(terms) <= N[k])
    if replicas is not None:
        m.add(sum(ys) == replicas)
    m.maximize(sum(math.ceil(float(ui) * scale) * y for ui, y in zip(u, ys, strict=True)))
    sat = cp_model.CpSolver()
    sat.parameters.num_workers = 1
    # limited in work, the same on any machine (cpsat.search doc); a user's limit caps the wall clock
    sat.parameters.max_deterministic_time = IP_SECONDS
    if time_limit_s is not None:
        sat.parameters.max_time_in_seconds = max(0.5, min(IP_SECONDS, time_limit_s - (now() - start)))
    status = sat.solve(m)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    return [sat.value(y) for y in ys], sat.best_objective_bound / scale, status == cp_model.OPTIMAL


def _integer(X: np.ndarray, solved: dict[int, tuple[float, Any]], N: tuple[int, ...], replicas: int | None,
             start: float, time_limit_s: float | None) -> tuple[list[tuple[int, ...]], float]:
    """The best deployment over the solved columns (CP-SAT, one worker, proven for them)."""
    from ortools.sat.python import cp_model

    cols = [(i, t) for i, (t, _) in solved.items() if t > 0]
    if not cols:
        return [], 0.0
    scale = 1e6 / max(t for _, t in cols)
    m = cp_model.CpModel()
    ys = []
    for i, _ in cols:
        hi = min(int(N[k] // X[i][k]) for k in range(len(N)) if X[i][k] > 0)
        ys.append(m.new_int_var(0, hi, ""))
    for k in range(len(N)):
        m.add(sum(int(X[i][k]) * y for (i, _), y in zip(cols, ys, strict=True) if X[i][k]) <= N[k])
    if replicas is not None:
        m.add(sum(ys) == replicas)
    m.maximize(sum(round(t * scale) * y for (_, t), y in zip(cols, ys, strict=True)))
    sat = cp_model.CpSolver()
    sat.parameters.num_workers = 1
    sat.parameters.max_deterministic_time = 10.0  # in work; a user's limit caps the wall clock (as _ip)
    if time_limit_s is not None:
        sat.parameters.max_time_in_seconds = min(10.0, max(0.2, time_limit_s - (now() - start)))
    if sat.solve(m) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return [], 0.0
    chosen = [tuple(int(a) for a in X[i]) for (i, _), y in zip(cols, ys, strict=True) for _ in range(sat.value(y))]
    return chosen, math.fsum(solved[i][0] for (i, _), y in zip(cols, ys, strict=True) for _ in range(sat.value(y)))
