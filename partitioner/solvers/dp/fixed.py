"""Fixed device order (devices used as a subsequence of the listed order), exact and polynomial.

tau step (docs/algorithms.md §3a, Hansen-Lih recurrence with skips):
    f_k[j] = min(f_{k-1}[j], min_i max(f_{k-1}[i], C_k(i, j))),  f_{-1} = [0, inf, ...]
sigma / sum steps (docs/algorithms.md §3c, §3d): state U_k[i] = "device k starts a stage at layer i",
    U_u[j] <- min_i max(U_k[i], C_k(i, j) + d(k, u, j))   (max mode)
    U_u[j] <- min_i U_k[i] + C_k(i, j) + d(k, u, j)        (sum mode, sigma capped)
for every u > k, grouped by identical link (alpha, beta) from k.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from partitioner.solvers.dp.kernel import sources
from partitioner.solvers.dp.tables import DPTables

__all__ = ["fixed_tau", "fixed_stages", "windows", "Plan"]

Plan = tuple[float, tuple[int, ...], tuple[int, ...]]  # (value, devices, cuts)


def fixed_tau(T: DPTables) -> Plan:
    """Minimum tau_max over subsequences of the listed order; (inf, (), ()) when nothing fits."""
    J = T.L + 1
    f = np.full(J, np.inf)
    f[0] = 0.0
    par = np.full((T.G, J), -1, dtype=np.int64)
    for k in range(T.G):
        Cb = T.band(k, np.inf)
        src = sources(J, Cb.shape[1])
        V = np.maximum(f[src], Cb)
        a = V.argmin(axis=1)
        w = V[np.arange(J), a]
        better = w < f
        par[k] = np.where(better, np.arange(J) - 1 - a, -1)
        f = np.where(better, w, f)
    if not np.isfinite(f[-1]):
        return np.inf, (), ()
    devices: list[int] = []
    cuts = [T.L]
    j = T.L
    for k in range(T.G - 1, -1, -1):
        if j == 0:
            break
        if par[k, j] >= 0:
            devices.append(k)
            j = int(par[k, j])
            cuts.append(j)
    return float(f[-1]), tuple(reversed(devices)), tuple(reversed(cuts))


def windows(T: DPTables, B: float) -> tuple[np.ndarray, np.ndarray]:
    """lo, hi (G,): the layers device u can start a stage at in a plan whose stages all have
    C <= B. Stages that fit B are closed under shrinking (costs, memory >= 0), so the greedy
    longest stage is exact: pre[u], the farthest cut devices < u reach, bounds the start from
    above, and prv_u[q_{u+1}] (q_{u+1} the earliest layer from which devices > u finish) from below."""
    G, J, L = T.G, T.L + 1, T.L
    cols = np.arange(J)
    nxt, prv = {}, {}
    for g in range(G):
        c = int(T.cost_id[g])
        if c in prv:
            continue
        first = cols - np.isfinite(T.band(g, B)).sum(axis=1)  # the fitting starts are a prefix in k
        col = T.C[c][:, L]  # the whole-model stage with tied embeddings need not be one of them
        fits = np.flatnonzero(col <= B)
        first[L] = int(fits[0]) if fits.size else L
        prv[c] = first
        far = np.searchsorted(first[:L], cols, side="right") - 1  # first[] grows with the end
        far = np.where(first[L] <= cols, L, far)
        nxt[c] = np.maximum(far, cols)
    lo = np.zeros(G, dtype=np.int64)
    hi = np.zeros(G, dtype=np.int64)
    r = 0
    for u in range(G):
        hi[u] = min(r, T.L - 1)
        r = max(r, int(nxt[int(T.cost_id[u])][r]))
    q = T.L
    for u in range(G - 1, -1, -1):
        lo[u] = int(prv[int(T.cost_id[u])][q])
        q = min(q, lo[u])
    return lo, hi


def fixed_stages(T: DPTables, mode: str, tau_cap: float, sigma_cap: float,
                 check: Callable[[], None] | None = None) -> Plan:
    """Exact min of max sigma ("max") or of sum sigma ("sum") over fixed-order plans whose stages
    all have tau <= tau_cap and (sum mode) sigma <= sigma_cap. Device u pulls, for every earlier
    k, the relaxation of k through the link class (k, u); relaxations are shared per link class.
    Only the starts inside each device's window (`windows`) are computed: at a tight cap a few
    layers per device instead of L + 1; the closing stage is taken for all devices at once.
    `check` (the budget's) runs before each device's relaxation: it raises to stop the step."""
    G, L, J, nl = T.G, T.L, T.L + 1, len(T.D)
    lo, hi = windows(T, min(tau_cap, sigma_cap) if mode != "max" else tau_cap)
    out_W = np.full((G, nl, J), np.inf)
    out_A = np.full((G, nl, J), -1, dtype=np.int64)
    Uall = np.full((G, J), np.inf)
    pk = np.full((G, J), -1, dtype=np.int64)
    e_lo, e_hi = np.full(G, J, dtype=np.int64), np.full(G, -1, dtype=np.int64)
    for u in range(G):
        if check is not None:
            check()
        a, b = int(lo[u]), int(hi[u])
        if a > b:
            continue
        U = Uall[u]
        ks = np.flatnonzero((e_hi[:u] >= a) & (e_lo[:u] <= b))
        if ks.size:
            W = out_W[ks, T.link_id[ks, u], a:b + 1]
            k = W.argmin(axis=0)
            U[a:b + 1] = W[k, np.arange(b - a + 1)]
            pk[u, a:b + 1] = ks[k]  # the start there is read from out_A when backtracking
        if a == 0:
            U[0] = 0.0
        lids = T.successor_links(u)
        if not lids:
            continue
        Cb = T.band(u, tau_cap)
        w = Cb.shape[1]
        e0, e1 = a + 1, min(b + w, L - 1)  # the cuts a stage of u starting in [a, b] can end at
        if e0 > e1:
            continue
        Wu, Au = _relax_ends(U, Cb, T.Dstack[lids, e0:e1 + 1], mode, sigma_cap, e0, e1)
        out_W[u, lids, e0:e1 + 1], out_A[u, lids, e0:e1 + 1] = Wu, Au
        e_lo[u], e_hi[u] = e0, e1
    last = np.stack([C[:, L] for C in T.C])[T.cost_id]  # C_u(j, L): the closing stage
    last = np.where(last <= (tau_cap if mode == "max" else min(tau_cap, sigma_cap)), last, np.inf)
    V = np.maximum(Uall, last) if mode == "max" else Uall + last
    k, j = (int(x) for x in np.unravel_index(int(V.argmin()), V.shape))
    value = float(V[k, j])
    if not np.isfinite(value):
        return np.inf, (), ()
    devices, cuts = [k], [L, j]
    while j > 0:
        prev = int(pk[k, j])
        k, j = prev, int(out_A[prev, T.link_id[prev, k], j])
        devices.append(k)
        cuts.append(j)
    return value, tuple(reversed(devices)), tuple(reversed(cuts))


def _relax_ends(
    U: np.ndarray, Cb: np.ndarray, Ds: np.ndarray, mode: str, sigma_cap: float, e0: int, e1: int
) -> tuple[np.ndarray, np.ndarray]:
    """`kernel.relax_links` restricted to the ends e0..e1: for start values U (J,), banded costs
    Cb (J, w) and delays Ds (m, e1-e0+1), the best value at each end and the start achieving it."""
    J, w = Cb.shape
    ends = np.arange(e0, e1 + 1)
    Ug = U[sources(J, w)[e0:e1 + 1]]
    C = Cb[e0:e1 + 1]
    if mode != "max" and sigma_cap == np.inf:
        V = Ug + C
        a = V.argmin(axis=1)
        W = V[np.arange(ends.size), a][None, :] + Ds
        return W, np.where(np.inf > W, ends - 1 - a, -1)
    S = C[None, :, :] + Ds[:, :, None]
    V = np.maximum(Ug[None], S) if mode == "max" else Ug[None] + np.where(sigma_cap >= S, C[None], np.inf)
    a = V.argmin(axis=2)
    W = V.min(axis=2)
    if mode != "max":
        W += Ds
    return W, np.where(np.inf > W, ends - 1 - a, -1)
