"""The free-order period tau* when the count lattice is too large: reachability over aggregated
classes (docs/algorithms.md §3b, relaxed as in `relaxed`).

Under a stage bound B, `reach` computes R(v), the farthest cut a subset of the devices v reaches,
over every count vector v <= m: prod_t (m_t + 1) points (10^12 for 8 classes of 32 devices).
Here the classes in K keep their own count and all the others are merged into one group G whose
count is sum_{t in G} m_t and whose stages may use any member: the group's longest reach from j
is max_{t in G} next_t[j] (a union of interval sets closed under shrinking is closed under
shrinking, so the greedy reach of `reach` stays exact). Every real plan is a plan of the merged
classes, so the least B whose merged lattice reaches L (bisected over the interval sums) is a
lower bound on tau*. The group's stages of the backtracked plan are then assigned to member
classes that can hold them, each class at most m_t times (a bipartite b-matching, augmenting
paths); when that succeeds the plan is real and the bound is tau* itself. Otherwise the member
class most in demand leaves the group for K and the bisection resumes from the bound (which only
grows as classes leave the group). With K = every class this is the exact lattice of `reach`.
When counting the group too would exceed MAX_POINTS, the group is left uncounted (any number of
its stages, F(p) = its closure from cut p): a weaker relaxation over the K lattice alone.
The sigma step on one link (`relaxed_sigma`) is the same search with a stage before a cut j
held to C + d_j <= B. Cost: O(N |K| + L T) per probe, N = prod_{t in K} (m_t + 1) times
(m_G + 1) when the group is counted, O(log) probes per round from galloping and bisection,
at most T rounds; the bound is returned alone once N would exceed MAX_POINTS either way.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from partitioner.solvers.dp.lattice import Lattice
from partitioner.solvers.dp.reach import forward, next_far
from partitioner.solvers.dp.tables import DPTables, cap

__all__ = ["relaxed_tau", "MAX_POINTS"]

MAX_POINTS = 1_000_000  # count vectors of the merged classes one probe may visit
INF = float(np.inf)
_POINT = Lattice((), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros((1, 0), dtype=np.int64),
                 (np.array([0]),))  # the lattice of no counted class: one point


def _assign(
    stages: list[tuple[int, int]], members: list[int], holds: Callable[[int, int, int], bool], m: np.ndarray
) -> list[int] | None:
    """A member class for each group stage (start, end) that can hold it, class t used at most m_t
    times (augmenting paths with capacities); None when no such assignment exists."""
    can = [[t for t in members if holds(t, i, j)] for i, j in stages]
    holders: dict[int, list[int]] = {t: [] for t in members}

    def augment(s: int, seen: set[int]) -> bool:
        for t in can[s]:
            if t in seen:
                continue
            seen.add(t)
            if len(holders[t]) < m[t]:
                holders[t].append(s)
                return True
            for r in holders[t]:
                if augment(r, seen):  # r moved to another class, s takes its place
                    holders[t].remove(r)
                    holders[t].append(s)
                    return True
        return False

    for s in range(len(stages)):
        if not augment(s, set()):
            return None
    of = [-1] * len(stages)
    for t, held in holders.items():
        for s in held:
            of[s] = t
    return of


def _at(holds: Callable[[int, int, int, float], bool], B: float, t: int, i: int, j: int) -> bool:
    return holds(t, i, j, B)


def _closure(row: np.ndarray, L: int) -> np.ndarray:
    """F(p): the farthest cut unlimited stages of one merged class reach from p (row = its reach)."""
    F = np.arange(L + 1)
    for p in range(L - 1, -1, -1):
        q = int(row[p])
        if q > p:
            F[p] = F[q]
    return F


def _reach(sub: Lattice, rows: np.ndarray, F: np.ndarray | None, L: int) -> tuple[bool, np.ndarray]:
    """R over the counted lattice; with F (an uncounted group), every reach is closed under it."""
    if F is None:
        return forward(sub, rows, L, early=True)
    R = np.zeros(sub.coords.shape[0], dtype=np.int64)
    R[0] = F[0]
    for idx in sub.levels[1:]:
        best = np.zeros(idx.size, dtype=np.int64)
        for a in range(sub.T):
            has = sub.coords[idx, a] >= 1
            best = np.maximum(best, np.where(has, rows[a][R[idx - sub.stride[a] * has]], 0))
        R[idx] = F[best]
    return bool((R >= L).any()), R


def _backtrack(
    sub: Lattice, rows: np.ndarray, R: np.ndarray, F: np.ndarray | None, group_row: np.ndarray | None, L: int
) -> tuple[list[int], list[int]]:
    """Merged-class sequence (sub.T for a stage of an uncounted group) and cuts of a plan reaching
    L, fewest counted devices first."""
    close = (lambda p: p) if F is None else (lambda p: int(F[p]))
    v = int(np.flatnonzero(R >= L)[0])
    steps: list[tuple[int, int]] = []  # (merged class, start cut), from the end
    while v:
        for a in range(sub.T):
            if sub.coords[v, a] >= 1 and close(int(rows[a][R[v - sub.stride[a]]])) == R[v]:
                break
        else:  # pragma: no cover - R(v) is the max over the classes by construction
            raise AssertionError("relaxed reach lost its predecessor")
        u = v - int(sub.stride[a])
        if R[u] < R[v]:
            steps.append((a, int(R[u])))
        v = u
    seq: list[int] = []
    cuts = [0]

    def run() -> None:  # the uncounted group's stages from cuts[-1] to its closure
        while F is not None and group_row is not None and int(F[cuts[-1]]) > cuts[-1]:
            seq.append(sub.T)
            cuts.append(int(group_row[cuts[-1]]))

    run()
    for a, p in reversed(steps):
        assert cuts[-1] == p
        seq.append(a)
        cuts.append(int(rows[a][p]))
        run()
    return seq, cuts


def relaxed_tau(
    T: DPTables, classes: list[list[int]], check: Callable[[], None] | None = None
) -> tuple[float, tuple[int, ...], tuple[int, ...]]:
    """(bound, devices, cuts): a lower bound on the free-order tau* and, when it is tau* itself, a
    plan attaining it (else empty); (inf, (), ()) when no plan fits. `check` may raise to stop."""
    n = len(classes)
    m = np.array([len(c) for c in classes], dtype=np.int64)
    ids = sorted({int(T.cost_id[c[0]]) for c in classes})
    cand = np.unique(np.concatenate([T.C[i][np.isfinite(T.C[i])] for i in ids]))
    J = np.arange(T.L)  # no candidate below the floor of `reach.lattice_tau`
    cand = cand[cand >= min(float(np.min([T.C[i][J, J + 1] for i in ids], axis=0).max()),
                            *(float(T.C[i][0, T.L]) for i in ids))]
    full = Lattice(tuple(tuple(c) for c in classes), m, np.zeros(n, dtype=np.int64), np.zeros((1, n)), ())
    ids = [int(T.cost_id[c[0]]) for c in classes]
    return _search(T, classes, cand, lambda B: next_far(T, full, cap(B)),
                   lambda t, i, j, B: bool(T.C[ids[t]][i, j] <= cap(B)), check)


def relaxed_sigma(
    T: DPTables, classes: list[list[int]], tau_cap: float, d: np.ndarray, check: Callable[[], None] | None = None
) -> tuple[float, tuple[int, ...], tuple[int, ...]]:
    """The sigma step (min sigma_max, every tau <= tau_cap) on one link, d[j] the delay of a cut
    at j wherever two classes meet: a stage ending at a cut j < L needs C + d[j] <= B, the last
    one C <= B. Each such set is closed under raising the start, so next_t stays non-decreasing
    and the greedy reach above is exact (right-shrinking is not needed). (sigma*, devices, cuts)
    as `relaxed_tau` returns them, with a lower bound and no plan when the search stops early."""
    n, L = len(classes), T.L
    ids = {t: int(T.cost_id[c[0]]) for t, c in enumerate(classes)}
    cols = np.arange(L + 1)
    dd = np.where(cols < L, d, 0.0)
    parts = []
    for c in set(ids.values()):
        C = np.where(T.C[c] <= tau_cap, T.C[c], INF)
        parts.append((C + dd[None, :])[np.isfinite(C)])
    cand = np.unique(np.concatenate(parts)) if parts else np.empty(0)

    def reach_of(B: float) -> np.ndarray:
        out = np.zeros((n, L + 1), dtype=np.int64)
        done: dict[int, np.ndarray] = {}
        for t, c in ids.items():
            if c not in done:
                ok = (T.C[c] <= tau_cap) & (T.C[c] + dd[None, :] <= cap(B))
                done[c] = np.maximum(np.where(ok, cols[None, :], -1).max(axis=1), cols)
            out[t] = done[c]
        return out

    def holds(t: int, i: int, j: int, B: float) -> bool:
        C = float(T.C[ids[t]][i, j])
        return tau_cap >= C and C + float(dd[j]) <= cap(B)

    return _search(T, classes, cand, reach_of, holds, check)


def _search(
    T: DPTables, classes: list[list[int]], cand: np.ndarray, reach_of: Callable[[float], np.ndarray],
    holds: Callable[[int, int, int, float], bool], check: Callable[[], None] | None,
) -> tuple[float, tuple[int, ...], tuple[int, ...]]:
    """The least candidate B whose merged-class reach (`reach_of(B)`: next_t per class) gets to
    L, refined until its plan is real (see the module docstring)."""
    n = len(classes)
    m = np.array([len(c) for c in classes], dtype=np.int64)
    full = Lattice(tuple(tuple(c) for c in classes), m, np.zeros(n, dtype=np.int64), np.zeros((1, n)), ())
    K: list[int] = []

    def size(K: list[int]) -> tuple[int, int]:
        """Points of the lattice with the group counted, and with it uncounted."""
        base = int(np.prod([m[k] + 1 for k in K])) if K else 1
        return base * (int(m.sum() - m[K].sum()) + 1), base

    def setup() -> tuple[Lattice, list[int], bool] | None:
        group = [t for t in range(n) if t not in K]
        counted, free = size(K)
        if counted <= MAX_POINTS:
            parts = [list(classes[t]) for t in K] + ([[g for t in group for g in classes[t]]] if group else [])
            return Lattice.build(parts), group, True
        if free <= MAX_POINTS:
            return (Lattice.build([list(classes[t]) for t in K]) if K else _POINT), group, False
        return None

    def probe(B: float, sub: Lattice, group: list[int], counted: bool) -> tuple:
        if check is not None:
            check()
        nxt = reach_of(B)
        g_row = nxt[group].max(axis=0) if group else None
        rows = np.array([nxt[t] for t in K] + ([g_row] if counted and group else []), dtype=np.int64)
        F = None if counted or g_row is None else _closure(g_row, T.L)
        ok, R = _reach(sub, rows.reshape(sub.T, T.L + 1), F, T.L)
        return ok, R, rows.reshape(sub.T, T.L + 1), nxt, F, g_row

    state = setup()
    assert state is not None
    sub, group, counted = state
    if cand.size == 0 or not probe(float(cand[-1]), sub, group, counted)[0]:
        return INF, (), ()
    lo = 0
    while True:
        hi, step = lo, 1  # gallop up from the last bound (refining K raises it a little), then bisect
        while hi < cand.size - 1 and not probe(float(cand[hi]), sub, group, counted)[0]:
            lo, hi, step = hi + 1, min(hi + step, cand.size - 1), 2 * step
        while lo < hi:
            mid = (lo + hi) // 2
            if probe(float(cand[mid]), sub, group, counted)[0]:
                hi = mid
            else:
                lo = mid + 1
        ok, R, rows, _, F, g_row = probe(float(cand[lo]), sub, group, counted)
        if not ok:  # not even the largest candidate with these classes merged, so nothing fits
            return INF, (), ()
        seq, cuts = _backtrack(sub, rows, R, F, g_row, T.L)
        grouped = [s for s, a in enumerate(seq) if a >= len(K)]
        fit = functools.partial(_at, holds, float(cand[lo]))
        of = _assign([(cuts[s], cuts[s + 1]) for s in grouped], group, fit, m) if grouped else []
        if of is not None:
            real = [K[a] if a < len(K) else -1 for a in seq]
            for s, t in zip(grouped, of, strict=True):
                real[s] = t
            return float(cand[lo]), full.devices(real), tuple(cuts)
        demand = np.zeros(n)
        for s in grouped:  # each group stage wants its cheapest member that can hold it
            i, j = cuts[s], cuts[s + 1]
            fits = [t for t in group if fit(t, i, j)]
            demand[min(fits, key=lambda t: float(T.C[int(T.cost_id[classes[t][0]])][i, j]))] += 1
        K.append(int(np.argmax(np.where(np.isin(np.arange(n), group), demand - m, -INF))))
        state = setup()
        if state is None:
            return float(cand[lo]), (), ()
        sub, group, counted = state
