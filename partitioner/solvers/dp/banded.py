"""Free-order sigma and sum steps over the lattice, restricted to states that can still finish.

State (v, t, j): the devices used so far are the count vector v, the last of them is of class
t and its stage starts at layer j. Transition to (v + e_u, u, j') through a stage [j, j') on
class t and the link (t, u) cut after layer j' - 1 (docs/algorithms.md §3c):

    max mode (sigma step):  U' = max(U, C_t(j, j') + d(t, u, j'))
    sum mode (T step):      U' = U + C_t(j, j') + d(t, u, j'),  only if C + d <= sigma_cap

and the last stage [j, L) closes with C_t(j, L) (Thm 3: sigma = tau there). Every stage obeys
C <= B (B = tau_cap, the sigma cap, and in max mode the incumbent), so a state is only kept when
j lies in its window [Q(m - v + e_t), R(v - e_t)] of `reach`: the prefix must reach j and the
devices left must be able to finish from j. At a tight period the windows are a few layers wide,
so the work is O(S * T * w) with S = sum of the window widths over (v, t) (at most
|lattice| * T * L) and w the longest stage under B, against O(|lattice| * T^2 * L * w) for the
full table. The DP is exact over the windows because no plan within the caps leaves them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from partitioner.solvers.dp.lattice import Lattice
from partitioner.solvers.dp.reach import backward, forward, next_far, prev_far
from partitioner.solvers.dp.tables import DPTables

__all__ = ["lattice_stages", "window_states", "stage_bounds", "CHUNK"]

Plan = tuple[float, tuple[int, ...], tuple[int, ...]]
CHUNK = 2_000_000  # elements per temporary (targets x w) block
INF = float(np.inf)


def stage_bounds(
    T: DPTables, lat: Lattice, mode: str, tau_cap: float, sigma_cap: float, bound: float = INF
) -> tuple[float, float]:
    """(B, B_last): every stage that ends at a cut has C <= B, the last one C <= B_last. A stage
    before a cut has sigma = C + d >= C + d_min, d_min the least delay of any class link at any
    cut, so the sigma cap (max mode: the bound) tightens B by d_min. Both shrink the windows."""
    S = sigma_cap if mode != "max" else bound
    if not np.isfinite(S):
        return tau_cap, tau_cap
    D = np.array([T.delay(*_pair(lat, t, u)) for t in range(lat.T) for u in range(lat.T)
                  if t != u or len(lat.classes[t]) >= 2])
    d = D[:, 1:T.L] if D.size else np.empty((0, 0))
    d_min = float(d[np.isfinite(d)].min()) if np.isfinite(d).any() else 0.0
    return min(tau_cap, S - d_min * (1 - 1e-9)), min(tau_cap, S)


def _windows(T: DPTables, lat: Lattice, B: float, last: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """lo, hi (N, K): the starts j that a state (v, t) can have when every stage ending at a cut
    has C <= B and the last one C <= last (default B)."""
    R = forward(lat, next_far(T, lat, B, last), T.L)[1]
    Q = backward(lat, prev_far(T, lat, B, last), T.L)
    N, K = lat.coords.shape
    top = int(np.dot(lat.m, lat.stride))
    v = np.arange(N)
    lo = np.full((N, K), 1, dtype=np.int64)
    hi = np.full((N, K), 0, dtype=np.int64)
    level = lat.coords.sum(axis=1)
    for t in range(K):
        has = lat.coords[:, t] >= 1
        s = int(lat.stride[t])
        lo[has, t] = np.maximum(Q[top - v[has] + s], level[has] - 1)
        hi[has, t] = np.minimum(R[v[has] - s], T.L - 1)
    return lo, hi


def window_states(T: DPTables, lat: Lattice, B: float, last: float | None = None) -> int:
    """S: how many (v, t, j) states the steps keep under the stage bounds (B, last)."""
    lo, hi = _windows(T, lat, B, last)
    return int(np.clip(hi - lo + 1, 0, None).sum())


def _spread(first: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For n ranges [first, first + count): (range number, value) of every element."""
    rep = np.repeat(np.arange(first.size), count)
    start = np.cumsum(count) - count
    return rep, first[rep] + np.arange(rep.size) - start[rep]


class _Table:
    """The flat state table: U and the parent state of every (v, t, j) inside the windows."""

    def __init__(self, lo: np.ndarray, hi: np.ndarray) -> None:
        self.lo, self.size = lo, np.clip(hi - lo + 1, 0, None)
        self.off = (np.cumsum(self.size.ravel()) - self.size.ravel()).reshape(self.size.shape)
        total = int(self.size.sum())
        self.U = np.full(total, INF)
        self.par = np.full(total, -1, dtype=np.int64)

    def flat(self, v: np.ndarray, t: int, j: np.ndarray) -> np.ndarray:
        return self.off[v, t] + j - self.lo[v, t]

    def inside(self, v: np.ndarray, t: int, j: np.ndarray) -> np.ndarray:
        return (j >= self.lo[v, t]) & (j < self.lo[v, t] + self.size[v, t])

    def state(self, f: int) -> tuple[int, int, int]:
        """(v, t, j) of flat index f."""
        K = self.size.shape[1]
        cell = int(np.searchsorted(self.off.ravel(), f, side="right")) - 1
        v, t = divmod(cell, K)
        return v, t, int(self.lo[v, t]) + f - int(self.off[v, t])


def lattice_stages(
    T: DPTables, lat: Lattice, mode: str, tau_cap: float, sigma_cap: float, *, bound: float = INF,
    check: Callable[[], None] | None = None,
) -> Plan:
    """Exact min of max sigma ("max") or of sum sigma ("sum") over free-order plans with every
    tau <= tau_cap, (sum mode) every sigma <= sigma_cap and (max mode) value <= bound."""
    lo, hi = _windows(T, lat, *stage_bounds(T, lat, mode, tau_cap, sigma_cap, bound))
    tab = _Table(lo, hi)
    K = lat.T
    bands = [T.band(c[0], tau_cap) for c in lat.classes]
    for u in range(K):
        e = int(lat.stride[u])
        if tab.size[e, u] > 0:
            tab.U[tab.flat(np.array([e]), u, np.array([0]))] = 0.0
    Ds = np.full((K, K, T.L + 1), INF)
    for t in range(K):
        for u in range(K):
            if t != u or len(lat.classes[t]) >= 2:
                Ds[t, u] = T.delay(*_pair(lat, t, u))
    best, best_f = INF, -1
    for s in range(1, len(lat.levels)):
        idx = lat.levels[s]
        if check is not None:
            check()
        for t in range(K):
            P = idx[(lat.coords[idx, t] >= 1) & (tab.size[idx, t] > 0)]
            if P.size == 0:
                continue
            value, f = _finish(T, tab, bands[t], P, t, mode=mode, sigma_cap=sigma_cap)
            if value < best:
                best, best_f = value, f
            src, us = [], []
            for u in range(K):
                sel = P[lat.coords[P, u] < lat.m[u]]
                sel = sel[tab.size[sel + int(lat.stride[u]), u] > 0]
                src.append(sel)
                us.append(np.full(sel.size, u, dtype=np.int64))
            sv, uu = np.concatenate(src), np.concatenate(us)
            if sv.size:
                _relax(tab, bands[t], Ds[t], sv, sv + lat.stride[uu], t=t, u=uu, mode=mode, sigma_cap=sigma_cap,
                       bound=bound)
    if best_f < 0:
        return INF, (), ()
    return best, *_backtrack(T, lat, tab, best_f)


def _pair(lat: Lattice, t: int, u: int) -> tuple[int, int]:
    """Two devices whose link is the (t, u) class link."""
    a, b = lat.classes[t], lat.classes[u]
    return (a[0], b[0]) if t != u else (a[0], a[1])


def _finish(
    T: DPTables, tab: _Table, Cb: np.ndarray, P: np.ndarray, t: int, *, mode: str, sigma_cap: float
) -> tuple[float, int]:
    """Best closing value over the states (P, t, .): the last stage [j, L) on class t."""
    rep, j = _spread(tab.lo[P, t], tab.size[P, t])
    f = tab.flat(P[rep], t, j)
    k = T.L - j  # stage length
    last = np.where(k <= Cb.shape[1], Cb[T.L, np.clip(k, 1, Cb.shape[1]) - 1], INF)
    if mode != "max":
        last = np.where(last <= sigma_cap, last, INF)
    V = np.maximum(tab.U[f], last) if mode == "max" else tab.U[f] + last
    if V.size == 0:
        return INF, -1
    a = int(V.argmin())
    return float(V[a]), int(f[a])


def _relax(
    tab: _Table, Cb: np.ndarray, D: np.ndarray, src: np.ndarray, dst: np.ndarray, *, t: int, u: np.ndarray,
    mode: str, sigma_cap: float, bound: float,
) -> None:
    """Push the states (src, t, .) into (dst, u, .) through one stage on t and the link (t, u);
    D[u] is the delay vector of the link (t, u). The cells (dst, u) are distinct."""
    w = Cb.shape[1]
    rep, j = _spread(tab.lo[dst, u], tab.size[dst, u])
    step = max(1, CHUNK // w)
    ks = np.arange(1, w + 1)
    for a in range(0, rep.size, step):
        r, jj = rep[a:a + step], j[a:a + step]
        sv = src[r]
        i = jj[:, None] - ks[None, :]
        ok = tab.inside(sv[:, None], t, i)
        fs = np.where(ok, tab.flat(sv[:, None], t, i), 0)
        Ui = np.where(ok, tab.U[fs], INF)
        stage = Cb[jj] + D[u[r], jj][:, None]
        V = np.maximum(Ui, stage) if mode == "max" else Ui + np.where(stage <= sigma_cap, stage, INF)
        k = V.argmin(axis=1)
        val = V[np.arange(k.size), k]
        if mode == "max":
            val = np.where(val <= bound, val, INF)
        ft = tab.off[dst[r], u[r]] + jj - tab.lo[dst[r], u[r]]
        better = val < tab.U[ft]
        tab.U[ft[better]] = val[better]
        tab.par[ft[better]] = fs[np.arange(k.size), k][better]


def _backtrack(T: DPTables, lat: Lattice, tab: _Table, f: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    seq: list[int] = []
    cuts = [T.L]
    while f >= 0:
        _, t, j = tab.state(f)
        seq.append(t)
        cuts.append(j)
        f = int(tab.par[f])
    return lat.devices(seq[::-1]), tuple(reversed(cuts))
