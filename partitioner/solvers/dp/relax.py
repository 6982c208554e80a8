"""The class relaxation of a link-distinct cluster: a lower bound and an A* heuristic for `subsets`.

Devices with the same cost row and capacity form a class c (`tables.device_classes(links=False)`).
Replace every link delay d(g, h, j) by the least delay between the two classes at that cut,

    Dmin(c, c', j) = min { d(g, h, j) : g in c, h in c', g != h }   (elementwise over j),

and devices of a class become interchangeable: the relaxed problem lives on the class lattice
(count vectors w <= m, docs/algorithms.md §3b), and every real plan maps to a relaxed plan with
the same stage times and no larger delays, so each relaxed optimum bounds the real one from
below (sum of sigma, sigma_max and T(M) alike; tau does not depend on links).

`to_go` is the backward DP over the lattice for the sum of sigma:

    H(w, c, j) = min_k C_c(j, j+k) + [j+k < L] * min_{c': (w - e_c)_c' >= 1} (Dmin(c, c', j+k) + H(w - e_c, c', j+k))

the least sum of sigma of any way to finish layers [j, L) when a class-c device starts a stage at j
and w (that device included) is what is left; stages obey tau <= tau_cap and, relaxed, sigma <=
sigma_cap with the class pair's least delay. Cost O(|lattice| * K * L * w) for K classes
and w the longest stage, against O(2^G * G * L * w) for the subset DP it guides.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from partitioner.problem import CostTables
from partitioner.solvers.dp.lattice import Lattice
from partitioner.solvers.dp.tables import DPTables, device_classes

__all__ = ["Coarse", "build_coarse", "to_go", "relaxed_tables"]

INF = float(np.inf)


@dataclass(frozen=True, eq=False)
class Coarse:
    """The class lattice of a cluster: `cls[g]` the class of device g, `Dmin` (K, K, L+1) the
    least class-pair delays, `dlow` (K, L+1) the least delay out of each class."""

    lat: Lattice
    cls: np.ndarray
    Dmin: np.ndarray
    dlow: np.ndarray

    @property
    def top(self) -> int:
        return int(np.dot(self.lat.m, self.lat.stride))


def build_coarse(T: DPTables, t: CostTables) -> Coarse:
    classes = device_classes(t, links=False)
    lat = Lattice.build(classes)
    K, J = len(classes), T.L + 1
    cls = np.zeros(T.G, dtype=np.int64)
    for c, members in enumerate(classes):
        cls[members] = c
    Dmin = np.full((K, K, J), INF)
    for g in range(T.G):
        for h in range(T.G):
            if g != h:
                np.minimum(Dmin[cls[g], cls[h]], T.delay(g, h), out=Dmin[cls[g], cls[h]])
    return Coarse(lat=lat, cls=cls, Dmin=Dmin, dlow=Dmin.min(axis=1))


def _forward_band(C: np.ndarray, tau_cap: float) -> np.ndarray:
    """Cf[j, k-1] = C(j, j+k) where it is <= tau_cap (and j + k <= L), else inf."""
    J = C.shape[0]
    ok = np.isfinite(C) & (tau_cap >= C)
    i, j = np.nonzero(ok)
    w = max(1, int((j - i).max())) if i.size else 1
    end = np.arange(J)[:, None] + np.arange(1, w + 1)[None, :]
    vals = np.where(end < J, C[np.arange(J)[:, None], np.clip(end, 0, J - 1)], INF)
    return np.where(vals <= tau_cap, vals, INF)


def to_go(
    co: Coarse, T: DPTables, tau_cap: float, sigma_cap: float, check: Callable[[], None] | None = None,
    spend: Callable[[int], None] | None = None,
) -> np.ndarray:
    """H (|lattice|, K, L+1) of the module doc (inf where w_c = 0 or nothing finishes). `check()`
    runs before each level; `spend(cells)`, where given, instead, with the level's cells (lattice
    points x classes x L+1 x the widest band), so a budget counted in cells is load-independent."""
    lat, L = co.lat, T.L
    J, K = L + 1, lat.T
    H = np.full((lat.coords.shape[0], K, J), INF)
    SD, closing = [], []  # per class c: stage + delay (J, w) towards each c2, and the closing stage
    for c in range(K):
        Cf = _forward_band(T.C[int(T.cost_id[lat.classes[c][0]])], tau_cap)
        w = Cf.shape[1]
        end = np.arange(J)[:, None] + np.arange(1, w + 1)[None, :]  # > L: Cf is inf there
        endc = np.minimum(end, L)
        closing.append(np.where((end == L) & (Cf <= sigma_cap), Cf, INF).min(axis=1))  # sigma = tau (Thm 3)
        row = []
        for c2 in range(K):
            Dv = co.Dmin[c, c2][endc]  # (J, w): the cut at each stage end
            stage = Cf if sigma_cap == INF else np.where(Cf + Dv <= sigma_cap, Cf, INF)
            row.append(stage + Dv)
        SD.append(row)
    width = max((SD[c][0].shape[1] for c in range(K)), default=1)
    for idx in lat.levels[1:]:
        if spend is not None:
            spend(int(idx.size) * K * K * J * width)
        elif check is not None:
            check()
        for c in range(K):
            rows = idx[lat.coords[idx, c] >= 1]
            if rows.size == 0:
                continue
            prev = rows - lat.stride[c]
            w = SD[c][0].shape[1]
            best = np.repeat(closing[c][None, :], rows.size, axis=0)
            have = lat.coords[prev] >= 1  # (n, K): classes still left after this device
            for c2 in range(K):
                sel = np.flatnonzero(have[:, c2])
                if sel.size == 0:
                    continue
                ext = np.full((sel.size, J + w), INF)
                ext[:, :J] = H[prev[sel], c2]
                ahead = sliding_window_view(ext, w, axis=1)[:, 1:J + 1]  # [n, j, k-1] = H at j + k
                best[sel] = np.minimum(best[sel], (SD[c][c2][None] + ahead).min(axis=2))
            H[rows, c] = best
    return H


def relaxed_tables(t: CostTables) -> CostTables:
    """The tables with every link replaced by the fastest link between the two classes (least
    latency, largest bandwidth): alpha + b / beta of it is <= every real delay of that pair, and
    devices of a class are interchangeable, so `dp` solves it on the class lattice."""
    classes = device_classes(t, links=False)
    lat = np.array(t.latency_s, dtype=float)
    bw = np.array(t.bandwidth_Bps, dtype=float)
    G = t.G
    new_lat, new_bw = np.zeros((G, G)), np.full((G, G), np.inf)
    off = ~np.eye(G, dtype=bool)
    for a in classes:
        for b in classes:
            block = np.ix_(a, b)
            mask = off[block]
            if not mask.any():
                continue
            new_lat[block] = lat[block][mask].min()
            new_bw[block] = bw[block][mask].max()
    np.fill_diagonal(new_lat, 0.0)
    np.fill_diagonal(new_bw, np.inf)
    return dataclasses.replace(t, latency_s=new_lat, bandwidth_Bps=new_bw)
