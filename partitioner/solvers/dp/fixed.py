"""Fixed device order (devices used as a subsequence of the listed order), exact and polynomial.

tau step (docs/algorithms.md §3a, Hansen-Lih recurrence with skips):
    f_k[j] = min(f_{k-1}[j], min_i max(f_{k-1}[i], C_k(i, j))),  f_{-1} = [0, inf, ...]
sigma / sum steps (docs/algorithms.md §3c, §3d): state U_k[i] = "device k starts a stage at layer i",
    U_u[j] <- min_i max(U_k[i], C_k(i, j) + d(k, u, j))   (max mode)
    U_u[j] <- min_i U_k[i] + C_k(i, j) + d(k, u, j)        (sum mode, sigma capped)
for every u > k, grouped by identical link (alpha, beta) from k.
"""

from __future__ import annotations

import numpy as np

from partitioner.solvers.dp.kernel import finish, relax_links, sources
from partitioner.solvers.dp.tables import DPTables

__all__ = ["fixed_tau", "fixed_stages", "Plan"]

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


def fixed_stages(T: DPTables, mode: str, tau_cap: float, sigma_cap: float) -> Plan:
    """Exact min of max sigma ("max") or of sum sigma ("sum") over fixed-order plans whose stages
    all have tau <= tau_cap and (sum mode) sigma <= sigma_cap. Device u pulls, for every earlier
    k, the relaxation of k through the link class (k, u); relaxations are shared per link class."""
    G, J, nl = T.G, T.L + 1, len(T.D)
    out_W = np.full((G, nl, J), np.inf)
    out_A = np.full((G, nl, J), -1, dtype=np.int64)
    U = np.full(J, np.inf)
    pk = np.full((G, J), -1, dtype=np.int64)
    pj = np.full((G, J), -1, dtype=np.int64)
    best: tuple[float, int, int] = (np.inf, -1, -1)
    for u in range(G):
        U[:] = np.inf
        if u:
            W = out_W[np.arange(u), T.link_id[:u, u]]
            k = W.argmin(axis=0)
            U = W[k, np.arange(J)]
            pk[u] = np.where(np.isfinite(U), k, -1)
            pj[u] = np.where(np.isfinite(U), out_A[k, T.link_id[k, u], np.arange(J)], -1)
        U[0] = 0.0
        C = T.band(u, tau_cap)
        fv, fa = finish(U[None, :], C, mode, sigma_cap)
        if fv[0] < best[0]:
            best = (float(fv[0]), u, int(fa[0]))
        lids = T.successor_links(u)
        if lids:
            out_W[u, lids], out_A[u, lids] = relax_links(U, C, T.Dstack[lids, :], mode, sigma_cap)
    value, k, j = best
    if not np.isfinite(value):
        return np.inf, (), ()
    devices, cuts = [k], [T.L, j]
    while j > 0:
        k, j = int(pk[k, j]), int(pj[k, j])
        devices.append(k)
        cuts.append(j)
    return value, tuple(reversed(devices)), tuple(reversed(cuts))
