"""Free device order over equivalence classes: the count-vector lattice (algorithms.md §3b, §3c).

Devices of one class are interchangeable, so a partial plan is summarised by its count vector
v <= m (how many devices of each class it uses); the level |v| is the stage index.
tau step, reachability under a period bound B (exact because reach is monotone in the start):
    R(0) = 0,  R(v) = max_t next_t[R(v - e_t)],  next_t[j] = longest reach of class t from j
bisected over the candidate values (all interval sums C_t(i, j)).
sigma / sum steps: state (v, last class t, start layer j) with the `kernel.relax` transition
to (v + e_u, u, j'); exact, cost O(prod(m_t + 1) * T^2 * L^2), so only for small lattices.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from partitioner.solvers.dp.kernel import finish, relax
from partitioner.solvers.dp.tables import DPTables, cap

__all__ = ["Lattice", "lattice_size", "lattice_tau", "lattice_stages"]

Plan = tuple[float, tuple[int, ...], tuple[int, ...]]


def lattice_size(classes: list[list[int]]) -> int:
    """prod_t (m_t + 1): the number of count vectors."""
    n = 1
    for members in classes:
        n *= len(members) + 1
    return n


@dataclass(frozen=True, eq=False)
class Lattice:
    """Count vectors in mixed radix: index(v) = sum_t v_t * stride_t; points grouped by level."""

    classes: tuple[tuple[int, ...], ...]
    m: np.ndarray
    stride: np.ndarray
    coords: np.ndarray
    levels: tuple[np.ndarray, ...]

    @staticmethod
    def build(classes: list[list[int]]) -> Lattice:
        m = np.array([len(c) for c in classes], dtype=np.int64)
        stride = np.ones(len(m), dtype=np.int64)
        for t in range(len(m) - 2, -1, -1):
            stride[t] = stride[t + 1] * (m[t + 1] + 1)
        coords = np.indices(tuple(int(x) + 1 for x in m)).reshape(len(m), -1).T
        level = coords.sum(axis=1)
        levels = tuple(np.flatnonzero(level == s) for s in range(int(m.sum()) + 1))
        return Lattice(tuple(tuple(c) for c in classes), m, stride, coords, levels)

    @property
    def T(self) -> int:
        return len(self.m)

    def devices(self, seq: list[int]) -> tuple[int, ...]:
        """Class sequence -> device sequence, each class's devices in listed order."""
        used = [0] * self.T
        out = []
        for t in seq:
            out.append(self.classes[t][used[t]])
            used[t] += 1
        return tuple(out)


def _reach(lat: Lattice, nxt: np.ndarray, L: int, early: bool) -> tuple[bool, np.ndarray]:
    """R over the lattice (levels in order); stops at the first level reaching L when `early`."""
    R = np.zeros(lat.coords.shape[0], dtype=np.int64)
    for idx in lat.levels[1:]:
        best = np.zeros(idx.size, dtype=np.int64)
        for t in range(lat.T):
            has = lat.coords[idx, t] >= 1
            prev = R[idx - lat.stride[t] * has]
            best = np.maximum(best, np.where(has, nxt[t][prev], 0))
        R[idx] = best
        if early and (best >= L).any():
            return True, R
    return bool((R >= L).any()), R


def _next(T: DPTables, lat: Lattice, B: float) -> np.ndarray:
    """next_t[j]: the farthest end of a stage of class t from j with C_t(j, .) <= B (j if none)."""
    J = T.L + 1
    nxt = np.zeros((lat.T, J), dtype=np.int64)
    cols = np.arange(J)
    for t, members in enumerate(lat.classes):
        ok = T.C[int(T.cost_id[members[0]])] <= B
        far = np.where(ok, cols[None, :], -1).max(axis=1)
        nxt[t] = np.maximum(far, cols)
    return nxt


def lattice_tau(T: DPTables, lat: Lattice) -> tuple[float, int]:
    """Minimum tau_max over free-order plans (bisection over candidate values); returns (tau*, probes)."""
    ids = sorted({int(T.cost_id[c[0]]) for c in lat.classes})
    vals = np.concatenate([T.C[i][np.isfinite(T.C[i])] for i in ids])
    cand = np.unique(vals)
    if cand.size == 0 or not _reach(lat, _next(T, lat, cap(float(cand[-1]))), T.L, True)[0]:
        return np.inf, 1
    lo, hi, probes = 0, cand.size - 1, 1
    while lo < hi:
        mid = (lo + hi) // 2
        probes += 1
        if _reach(lat, _next(T, lat, cap(float(cand[mid]))), T.L, True)[0]:
            hi = mid
        else:
            lo = mid + 1
    return float(cand[lo]), probes


def _class_arrays(T: DPTables, lat: Lattice, tau_cap: float) -> tuple[list[np.ndarray], dict[tuple[int, int], np.ndarray]]:
    """C_t capped at tau_cap per class, and d(t, u, .) per ordered class pair that can occur."""
    reps = [c[0] for c in lat.classes]
    Cs = [T.band(g, tau_cap) for g in reps]
    D: dict[tuple[int, int], np.ndarray] = {}
    for t, a in enumerate(lat.classes):
        for u, b in enumerate(lat.classes):
            if t != u:
                D[t, u] = T.delay(a[0], b[0])
            elif len(a) >= 2:
                D[t, u] = T.delay(a[0], a[1])
    return Cs, D


def lattice_stages(T: DPTables, lat: Lattice, mode: str, tau_cap: float, sigma_cap: float) -> Plan:
    """Exact min of max sigma ("max") or sum sigma ("sum") over free-order plans with every
    tau <= tau_cap and (sum mode) sigma <= sigma_cap; state (v, last class, start layer)."""
    N, J, K = lat.coords.shape[0], T.L + 1, lat.T
    Cs, D = _class_arrays(T, lat, tau_cap)
    U = np.full((N, K, J), np.inf)
    pt = np.full((N, K, J), -1, dtype=np.int64)
    pj = np.full((N, K, J), -1, dtype=np.int64)
    for u in range(K):
        U[lat.stride[u], u, 0] = 0.0
    best: tuple[float, int, int, int] = (np.inf, -1, -1, -1)
    for idx in lat.levels[1:]:
        for t in range(K):
            rows = idx[lat.coords[idx, t] >= 1]
            rows = rows[np.isfinite(U[rows, t]).any(axis=1)]
            if rows.size == 0:
                continue
            fv, fa = finish(U[rows, t], Cs[t], mode, sigma_cap)
            r = int(fv.argmin())
            if fv[r] < best[0]:
                best = (float(fv[r]), int(rows[r]), t, int(fa[r]))
            for u in range(K):
                sel = rows[lat.coords[rows, u] < lat.m[u]]
                if sel.size == 0:
                    continue
                W, A = relax(U[sel, t], Cs[t], D[t, u], mode, sigma_cap)
                tgt = sel + lat.stride[u]
                sub = U[tgt, u]
                better = W < sub
                U[tgt, u] = np.where(better, W, sub)
                pt[tgt, u] = np.where(better, t, pt[tgt, u])
                pj[tgt, u] = np.where(better, A, pj[tgt, u])
    value, v, t, j = best
    if not np.isfinite(value):
        return np.inf, (), ()
    seq, cuts = [t], [T.L, j]
    while j > 0:
        t2, j2 = int(pt[v, t, j]), int(pj[v, t, j])
        v -= int(lat.stride[t])
        t, j = t2, j2
        seq.append(t)
        cuts.append(j)
    return value, lat.devices(seq[::-1]), tuple(reversed(cuts))
