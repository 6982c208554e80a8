"""Arrays every DP step reads: interval costs, memory fit, link delays, device classes.

Notation (docs/algorithms.md "Notation"): P_g is the prefix sum of c[g][.], so the compute
time of stage [i, j) on device g is C_g(i, j) = P_g[j] - P_g[i], set to +inf when the layers do
not fit in C_g's memory (`problem.stage_memory` semantics, tied embeddings included) or j <= i.
The delay of a cut at position j (after layer j-1) from g to h is
d(g, h, j) = alpha(g, h) + b[j-1] / beta(g, h) (docs/costmodel.md §4), +inf at j = 0 and j = L (no cut there).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from partitioner.errors import InputError
from partitioner.problem import RTOL, CostTables

__all__ = ["DPTables", "build_tables", "check_tables", "cap", "device_classes"]


def cap(x: float) -> float:
    """x widened by the tie tolerance of `lex_compare` (rtol 1e-9, atol 1e-12): plans whose value
    is equal to x within it count as ties, so a later lexicographic step may use them."""
    return x + max(RTOL * abs(x), 1e-12)


def check_tables(t: CostTables) -> None:
    """Raise InputError unless the numbers are ones the DP's monotonicity arguments need."""
    arrays = {
        "cost": t.cost, "memory_gb": t.memory_gb, "cut_bytes": t.cut_bytes,
        "latency_s": t.latency_s,
    }
    for name, arr in arrays.items():
        a = np.asarray(arr, dtype=float)
        bad = ~np.isfinite(a) | (a < 0)
        if bad.any():
            where = tuple(int(x) for x in np.argwhere(bad)[0])
            raise InputError(f"CostTables.{name}{list(where)} must be finite and >= 0 (got {float(a[where])!r})")
    bw = np.asarray(t.bandwidth_Bps, dtype=float)
    bad = np.isnan(bw) | (bw <= 0)
    if bad.any():
        where = tuple(int(x) for x in np.argwhere(bad)[0])
        raise InputError(f"CostTables.bandwidth_Bps{list(where)} must be > 0 (got {float(bw[where])!r})")
    if np.isnan(np.asarray(t.capacity_gb, dtype=float)).any():
        raise InputError(f"CostTables.capacity_gb must not be NaN (got {list(t.capacity_gb)!r})")


@dataclass(frozen=True, eq=False)
class DPTables:
    """Interval-cost matrices per distinct (cost row, capacity) and delay vectors per distinct link.

    C[cost_id[g]] is the (L+1, L+1) matrix C_g(i, j); D[link_id[g, h]] is the (L+1,) vector
    j -> d(g, h, j). Band matrices capped at a period bound are cached in `_capped`.
    """

    L: int
    G: int
    cost_id: np.ndarray
    C: tuple[np.ndarray, ...]
    link_id: np.ndarray
    D: tuple[np.ndarray, ...]
    _capped: dict[tuple[int, float], np.ndarray] = field(default_factory=dict)
    _succ: dict[int, list[int]] = field(default_factory=dict)
    _stack: dict[str, np.ndarray] = field(default_factory=dict)

    def band(self, g: int, tau_cap: float) -> np.ndarray:
        """C_g capped at tau_cap in band form: Cb[j, k-1] = C_g(j-k, j), the stage of k layers that
        ends at j (k = 1..w, w the longest stage that fits). Shape (L+1, w)."""
        c = int(self.cost_id[g])
        key = (-1 - c, float(tau_cap))
        if key not in self._capped:
            if tau_cap == np.inf:
                full = self.C[c]
                i, j = np.nonzero(np.isfinite(full))  # (not a count per row: the tied-embedding stage [0, L) may
                w = max(1, int((j - i).max())) if i.size else 1  # fit where shorter prefixes do not)
                jj = np.arange(self.L + 1)[:, None]
                ii = jj - np.arange(1, w + 1)[None, :]
                self._capped[key] = np.where(ii >= 0, full[np.clip(ii, 0, None), jj], np.inf)
            else:
                Cb = self.band(g, np.inf)
                Cb = np.where(Cb <= tau_cap, Cb, np.inf)
                cols = np.flatnonzero(np.isfinite(Cb).any(axis=0))
                self._capped[key] = Cb[:, : max(1, int(cols.max()) + 1 if cols.size else 1)]
        return self._capped[key]

    def successor_links(self, u: int) -> list[int]:
        """Distinct link ids from u to the devices listed after it (fixed order), ascending."""
        if not self._succ:
            rows, cols = np.triu_indices(self.G, 1)
            seen = np.zeros((self.G, len(self.D)), dtype=bool)
            seen[rows, self.link_id[rows, cols]] = True  # every device's at once: one pass, not G np.unique
            self._succ.update({g: [int(x) for x in np.flatnonzero(seen[g])] for g in range(self.G)})
        return self._succ[u]

    @property
    def Dstack(self) -> np.ndarray:
        """All delay vectors as one (links, L+1) array."""
        if "D" not in self._stack:
            self._stack["D"] = np.array(self.D)
        return self._stack["D"]

    def delay(self, g: int, h: int) -> np.ndarray:
        return self.D[int(self.link_id[g, h])]

    def band_stack(self, tau_cap: float) -> np.ndarray:
        """`band(g, tau_cap)` of every device g as one (G, L+1, w) array, each padded with +inf
        to the widest w (not cached: one per cap would pile up over a threshold search)."""
        parts = [self.band(g, tau_cap) for g in range(self.G)]
        out = np.full((self.G, self.L + 1, max(b.shape[1] for b in parts)), np.inf)
        for g, b in enumerate(parts):
            out[g, :, : b.shape[1]] = b
        return out


def _stage_memory(t: CostTables) -> np.ndarray:
    """mem[i, j]: GB that layers [i, j) need on one device (any device), -inf where j <= i."""
    L = t.L
    Pm = np.concatenate(([0.0], np.cumsum(np.asarray(t.memory_gb, dtype=float))))
    mem = Pm[None, :] - Pm[:, None]
    if t.tied_gb:
        mem[0, L] -= t.tied_gb  # stage_memory: tied embedding counted once on a single full stage
    np.putmask(mem, np.tri(L + 1, dtype=bool), np.inf)  # no stage [i, j) with j <= i
    return mem


def _interval_matrix(t: CostTables, g: int, mem: np.ndarray) -> np.ndarray:
    """C_g(i, j) with +inf where j <= i or the layers [i, j) do not fit on g (`mem`: `_stage_memory`)."""
    P = np.concatenate(([0.0], np.cumsum(np.asarray(t.cost[g], dtype=float))))
    limit = float(t.capacity_gb[g]) * (1 + RTOL) + 1e-12  # the same test as Metrics.fits
    C = P[None, :] - P[:, None]
    np.putmask(C, mem > limit, np.inf)
    return C


def _link_ids(t: CostTables) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """link_id (G, G): one id per distinct (alpha, beta) over the ordered pairs g != h, numbered in
    order of first appearance (row by row), and one (g, h) pair having each id."""
    G = t.G
    off = ~np.eye(G, dtype=bool)
    link_id = np.zeros((G, G), dtype=np.int64)
    if G < 2:
        return link_id, []
    lat = np.unique(np.asarray(t.latency_s, dtype=float)[off], return_inverse=True)[1].ravel()
    bw = np.unique(np.asarray(t.bandwidth_Bps, dtype=float)[off], return_inverse=True)[1].ravel()
    _, first, inv = np.unique(lat * (int(bw.max()) + 1) + bw, return_index=True, return_inverse=True)  # one code per pair
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)  # ids in order of first appearance
    link_id[off] = rank[inv.ravel()]
    gs, hs = np.nonzero(off)
    return link_id, [(int(gs[f]), int(hs[f])) for f in np.sort(first)]


def _delay_vector(t: CostTables, g: int, h: int) -> np.ndarray:
    """j -> alpha(g, h) + b[j-1] / beta(g, h) for 1 <= j < L, +inf at 0 and L (link_delay semantics)."""
    beta = float(t.bandwidth_Bps[g, h])
    b = np.asarray(t.cut_bytes, dtype=float)
    transfer = np.zeros(t.L) if np.isinf(beta) else b / beta
    D = np.full(t.L + 1, np.inf)
    D[1:t.L] = float(t.latency_s[g, h]) + transfer[: t.L - 1]
    return D


@functools.lru_cache(maxsize=8)
def build_tables(t: CostTables) -> DPTables:
    """Deduplicate devices by (cost row, capacity) and links by (alpha, beta); build the arrays
    (cached per tables object: every objective and order of one cluster shares them)."""
    check_tables(t)
    G = t.G
    keys: dict[bytes, int] = {}
    cost_id = np.zeros(G, dtype=np.int64)
    mats: list[np.ndarray] = []
    mem = _stage_memory(t)
    for g in range(G):
        key = np.asarray(t.cost[g], dtype=float).tobytes() + np.float64(t.capacity_gb[g]).tobytes()
        if key not in keys:
            keys[key] = len(mats)
            mats.append(_interval_matrix(t, g, mem))
        cost_id[g] = keys[key]
    link_id, reps = _link_ids(t)
    vecs = [_delay_vector(t, g, h) for g, h in reps]
    if not vecs:
        vecs.append(np.full(t.L + 1, np.inf))
    return DPTables(L=t.L, G=G, cost_id=cost_id, C=tuple(mats), link_id=link_id, D=tuple(vecs))


def device_classes(t: CostTables, links: bool) -> list[list[int]]:
    """`classes(t, links)` as fresh lists (cached per tables object: applies and solve both ask)."""
    return [list(c) for c in _classes(t, links)]


@functools.lru_cache(maxsize=16)
def _classes(t: CostTables, links: bool) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(c) for c in classes(t, links))


def classes(t: CostTables, links: bool) -> list[list[int]]:
    """Interchangeable devices (docs/algorithms.md §3b): same cost row and capacity and, when `links`,
    such that swapping the two leaves the link matrices (alpha, beta) unchanged. "Swapping g and
    h is a symmetry" is an equivalence relation ((g k) = (g h)(h k)(g h)), and inside its classes
    every link depends only on the two classes, which is what the count-vector lattice needs. It
    keeps same-GPU devices of one node together, same-GPU devices on different nodes together when
    one uniform link joins the nodes, and splits only the classes a per-pair override touches.
    Classes are ordered by their smallest device index, members in listed order."""
    G = t.G
    base: dict[bytes, int] = {}
    label = np.zeros(G, dtype=np.int64)
    for g in range(G):
        key = np.asarray(t.cost[g], dtype=float).tobytes() + np.float64(t.capacity_gb[g]).tobytes()
        label[g] = base.setdefault(key, len(base))
    if not links:
        groups: dict[int, list[int]] = {}
        for g in range(G):
            groups.setdefault(int(label[g]), []).append(g)
        return sorted(groups.values(), key=lambda grp: grp[0])
    lat = np.array(t.latency_s, dtype=float)
    bw = np.array(t.bandwidth_Bps, dtype=float)
    np.fill_diagonal(lat, 0.0)
    np.fill_diagonal(bw, 0.0)
    classes: list[list[int]] = []
    for g in range(G):
        home = next((c for c in classes if label[c[0]] == label[g] and _swappable(lat, bw, c[0], g)), None)
        if home is None:
            classes.append([g])
        else:
            home.append(g)
    return classes


def _swappable(lat: np.ndarray, bw: np.ndarray, g: int, h: int) -> bool:
    """True when the transposition (g h) maps both link matrices (zero diagonal) onto themselves."""
    others = np.ones(lat.shape[0], dtype=bool)
    others[[g, h]] = False
    for a in (lat, bw):
        if a[g, h] != a[h, g]:
            return False
        if not (np.array_equal(a[g, others], a[h, others]) and np.array_equal(a[others, g], a[others, h])):
            return False
    return True
