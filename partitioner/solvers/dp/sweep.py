"""Exact T(M) on a small free-order instance: the threshold search of `distinct`, K probes a round.

T* = min_t (M-1) t + g(t) (docs/algorithms.md §3d), g(t) the least sum sigma over plans whose
bottleneck (tau_s in async, sigma_s in blocking) is <= t, a non-increasing step function with
steps at the candidate values c_0 < c_1 < ... (`distinct._candidates`). On a small instance one
sum step is a few array operations over every state (`dense`), whose fixed cost per operation
dominates: each round asks g at up to K candidates in one `Dense.sum_steps` pass, and a probe's
plan is backtracked only when its bound could still beat the incumbent.

What is known after a round: g(c_q) at the probed q, each with a plan whose bottleneck t' <= c_q
attains it, so g = g(c_q) on [t', c_q] and that plan is the best T(M) of any t there. An index i
not settled so far lies in a gap (p, q') below the next probed q (q' the first index >= t'_q);
there g(c_i) >= g(c_q), so the gap's bound is (M-1) c_{p+1} + g(c_q). Gaps whose bound reaches
the incumbent are closed; the open ones get the next round's probes (each its right end first,
which gives its tightest bound, then evenly spread points), best bound first. The first round
asks g(inf), the unconstrained optimum: an incumbent and g's floor, which cut the candidates to
[lb, (T_inc - g(inf)) / (M-1)], lb = max_l min_g c[g][l] (every layer lies in some stage). The
search ends with the exact optimum; stopped early, the least open bound is a proven lower bound.
Rounds: about log_K of the candidates in that window, plus one per improving incumbent.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from partitioner.solvers.dp.dense import Dense
from partitioner.solvers.dp.tables import cap

__all__ = ["min_makespan", "K"]

Plan = tuple[float, tuple[int, ...], tuple[int, ...]]
Probe = Callable[[np.ndarray], list[tuple[float, Callable[[], Plan]]]]  # caps (k, 2) -> (g, its plan) per row
INF = float(np.inf)
K = 3  # probes per round: a pass over k rows costs about 1 + k/2 single passes here (measured), so 3 does best


def min_makespan(
    probe: Probe, candidates: Callable[[float, float], np.ndarray], T_of: Callable[[Plan], tuple[float, float]],
    M: int, blocking: bool, lb: float, found: dict[str, float], check: Callable[[], None],
) -> Plan:
    """The plan of least T(M) (module doc); (inf, (), ()) when nothing fits. `probe` runs the sum
    steps, `candidates(lo, hi)` lists the sorted thresholds in [lo, hi], `T_of(plan)` gives
    (T(M), bottleneck), `found["lower"]` is kept a proven lower bound on T* throughout."""

    def caps(t: np.ndarray) -> np.ndarray:
        c = np.array([cap(float(x)) for x in t])
        return np.stack([np.full_like(c, INF), c] if blocking else [c, np.full_like(c, INF)], axis=1)

    free = probe(np.array([[INF, INF]]))[0][1]()
    if not free[1]:
        return free
    g_floor, best = free[0], free
    best_T, free_neck = T_of(free)
    found["lower"] = max(found["lower"], M * lb, g_floor + (M - 1) * lb)
    if M == 1:
        found["lower"] = best_T
        return best
    cand = candidates(lb * (1 - 1e-9) - 1e-12, cap((best_T - g_floor) / (M - 1)))
    n = cand.size
    g = {n: g_floor}  # probed index -> g there (n stands for t = inf)
    settled = {n: _first_at(cand, free_neck)}  # probed index -> first index its plan settles
    while True:
        check()
        gaps = _gaps(cand, g, settled, M, best_T)
        if not gaps:
            found["lower"] = best_T
            return best
        found["lower"] = max(found["lower"], min(best_T, gaps[0][0]))
        asked = _points(gaps)
        for i, (value, plan_of) in zip(asked, probe(caps(cand[asked])), strict=True):
            below = max((q for q in g if q < i), default=-1)
            g[i], settled[i] = value, i + 1 if not np.isfinite(value) else i
            if np.isfinite(value) and (M - 1) * float(cand[below + 1]) + value < _tol(best_T):
                plan = plan_of()  # it may settle part of its gap or be a better plan: recover it
                T, neck = T_of(plan)
                settled[i] = min(i, _first_at(cand, neck))
                if best_T > T:
                    best, best_T = plan, T


def _tol(x: float) -> float:
    """Values below this beat x by more than the tie tolerance."""
    return x - max(1e-10 * abs(x), 1e-13)


def _first_at(cand: np.ndarray, neck: float) -> int:
    """The first candidate index at or above the bottleneck (within the tie tolerance)."""
    return int(np.searchsorted(cand, neck * (1 - 1e-12), side="left"))


def _gaps(
    cand: np.ndarray, g: dict[int, float], settled: dict[int, int], M: int, best_T: float
) -> list[tuple[float, int, int]]:
    """The open gaps (bound, a, b), best bound first: unsettled index ranges [a, b], each below a
    probed q with finite g(c_q) (below an infeasible probe g is inf too, so nothing is open)."""
    out = []
    prev = -1
    tol = _tol(best_T)
    for q in sorted(g):
        a, b = prev + 1, min(settled[q], q) - 1
        prev = q
        if b < a or not np.isfinite(g[q]):
            continue
        bound = (M - 1) * float(cand[a]) + g[q]
        if bound < tol:
            out.append((bound, a, b))
    return sorted(out)


def _points(gaps: list[tuple[float, int, int]]) -> np.ndarray:
    """Up to K indices to probe: every open gap's right end (best bound first), then points spread
    evenly inside the gaps in that order until K are chosen."""
    ends = [b for _, _, b in gaps[:K]]
    chosen = set(ends)
    spare = K - len(chosen)
    for _, a, b in gaps[:K]:
        if spare <= 0:
            break
        share = min(spare, b - a, max(1, spare // max(1, len(gaps))))
        for x in np.linspace(a, b, share + 2)[1:-1]:
            if int(x) not in chosen:
                chosen.add(int(x))
                spare -= 1
    return np.array(sorted(chosen), dtype=np.int64)


def dense_probe(dense: Dense, backtrack: Callable[..., tuple[tuple[int, ...], tuple[int, ...]]]) -> Probe:
    """A `Probe` over `dense.sum_steps`; a row's plan is backtracked only when asked for."""

    def run(caps: np.ndarray) -> list[tuple[float, Callable[[], Plan]]]:
        out: list[tuple[float, Callable[[], Plan]]] = []
        for (value, levels, level, row, start), (tc, sc) in zip(dense.sum_steps(caps), caps, strict=True):
            def plan_of(v: float = value, lv: list = levels, at: tuple = (level, row, start),
                        c: tuple = (float(tc), float(sc))) -> Plan:
                return (v, *backtrack(lv, *at, *c)) if np.isfinite(v) else (INF, (), ())
            out.append((value, plan_of))
        return out

    return run
