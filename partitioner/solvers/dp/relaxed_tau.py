"""The free-order period tau* when the count lattice is too large: reachability with only the
scarce classes counted (docs/algorithms.md §3b, relaxed as in `relaxed`).

Under a stage bound B, `reach` computes R(v), the farthest cut a subset of the devices v reaches,
over every count vector v <= m: prod_t (m_t + 1) points (10^12 for 8 classes of 32 devices).
Here only the classes in K are counted; the others may be used any number of times. From a cut
p, unlimited stages of those free classes reach at most

    F(p) = max(p, max_{u free, next_u[p] > p} F(next_u[p]))      (computed from p = L down)

(the greedy longest stage is exact because feasible intervals are closed under shrinking, see
`reach`), so over the K lattice R_K(0) = F(0), R_K(v) = F(max_{t in K} next_t[R_K(v - e_t)]).
Every real plan under B is a relaxed plan, so the least B whose relaxation reaches L (bisected
over the interval sums) is a lower bound on tau*; when the backtracked plan uses at most m_t
devices of every class it is a real plan and the bound is tau* itself. Otherwise the most
over-used class joins K and the bisection resumes from the bound (which only grows with K).
Cost: O(N_K |K| + L T) per probe, N_K = prod_{t in K} (m_t + 1), about log2(T L^2) probes per K,
at most T rounds; stops with the bound when N_K would exceed MAX_POINTS.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from partitioner.solvers.dp.lattice import Lattice
from partitioner.solvers.dp.reach import next_far
from partitioner.solvers.dp.tables import DPTables, cap

__all__ = ["relaxed_tau", "MAX_POINTS"]

MAX_POINTS = 300_000  # count vectors of the counted classes one probe may visit
INF = float(np.inf)
_POINT = Lattice((), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros((1, 0), dtype=np.int64),
                 (np.array([0]),))  # the lattice of no counted class: one point


def _free_reach(nxt: np.ndarray, free: list[int], L: int) -> tuple[np.ndarray, np.ndarray]:
    """F(p) for every cut p and the free class of the first stage taken from p (-1 if none)."""
    F = np.arange(L + 1)
    first = np.full(L + 1, -1)
    for p in range(L - 1, -1, -1):
        for u in free:
            q = int(nxt[u][p])
            if q > p and F[q] > F[p]:
                F[p], first[p] = F[q], u
    return F, first


def _probe(nxt: np.ndarray, sub: Lattice, K: list[int], free: list[int], L: int) -> tuple[bool, np.ndarray, np.ndarray, np.ndarray]:
    F, first = _free_reach(nxt, free, L)
    R = np.zeros(sub.coords.shape[0], dtype=np.int64)
    R[0] = F[0]
    for idx in sub.levels[1:]:
        best = np.zeros(idx.size, dtype=np.int64)
        for a, t in enumerate(K):
            has = sub.coords[idx, a] >= 1
            prev = R[idx - sub.stride[a] * has]
            best = np.maximum(best, np.where(has, nxt[t][prev], 0))
        R[idx] = F[best]
    return bool((R >= L).any()), R, F, first


def _backtrack(nxt: np.ndarray, sub: Lattice, K: list[int], R: np.ndarray, F: np.ndarray, first: np.ndarray,
               L: int) -> tuple[list[int], list[int]]:
    """Class sequence and cuts of a plan reaching L (fewest counted devices first)."""

    def free_run(p: int, seq: list[int], cuts: list[int]) -> None:  # the free stages from p to F(p)
        while first[p] >= 0:
            u = int(first[p])
            seq.append(u)
            p = int(nxt[u][p])
            cuts.append(p)

    v = int(np.flatnonzero(R >= L)[0])
    steps: list[tuple[int, int]] = []  # (counted class, cut it starts from), from the end
    while v:
        for a, t in enumerate(K):
            if sub.coords[v, a] >= 1 and F[nxt[t][R[v - sub.stride[a]]]] == R[v]:
                break
        else:  # pragma: no cover - R(v) is the max over K by construction
            raise AssertionError("relaxed reach lost its predecessor")
        u = v - int(sub.stride[a])
        if R[u] < R[v]:
            steps.append((t, int(R[u])))
        v = u
    seq: list[int] = []
    cuts = [0]
    free_run(0, seq, cuts)
    for t, p in reversed(steps):
        assert cuts[-1] == p
        seq.append(t)
        q = int(nxt[t][p])
        cuts.append(q)
        free_run(q, seq, cuts)
    return seq, cuts


def relaxed_tau(
    T: DPTables, classes: list[list[int]], check: Callable[[], None] | None = None
) -> tuple[float, tuple[int, ...], tuple[int, ...]]:
    """(bound, devices, cuts): a lower bound on the free-order tau* and, when it is tau* itself, a
    plan attaining it (else empty); (inf, (), ()) when no plan fits. `check` may raise to stop."""
    m = np.array([len(c) for c in classes], dtype=np.int64)
    ids = sorted({int(T.cost_id[c[0]]) for c in classes})
    cand = np.unique(np.concatenate([T.C[i][np.isfinite(T.C[i])] for i in ids]))
    lat = Lattice(tuple(tuple(c) for c in classes), m, np.zeros(len(m), dtype=np.int64), np.zeros((1, len(m))), ())
    K: list[int] = []

    def probe(i: int) -> tuple[bool, np.ndarray, np.ndarray, np.ndarray, np.ndarray, Lattice]:
        if check is not None:
            check()
        nxt = next_far(T, lat, cap(float(cand[i])))
        sub = Lattice.build([list(classes[t]) for t in K]) if K else _POINT
        free = [t for t in range(len(m)) if t not in K]
        ok, R, F, first = _probe(nxt, sub, K, free, T.L)
        return ok, nxt, R, F, first, sub

    if cand.size == 0 or not probe(cand.size - 1)[0]:
        return INF, (), ()
    lo = 0
    while True:
        hi = cand.size - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if probe(mid)[0]:
                hi = mid
            else:
                lo = mid + 1
        ok, nxt, R, F, first, sub = probe(lo)
        if not ok:  # not even the largest candidate: with K counted nothing fits, so nothing does
            return INF, (), ()
        seq, cuts = _backtrack(nxt, sub, K, R, F, first, T.L)
        over = np.bincount(np.array(seq), minlength=len(m)) - m
        if (over <= 0).all():
            return float(cand[lo]), lat.devices(seq), tuple(cuts)
        t = int(over.argmax())
        if int(np.prod([m[k] + 1 for k in [*K, t]])) > MAX_POINTS:
            return float(cand[lo]), (), ()
        K.append(t)
