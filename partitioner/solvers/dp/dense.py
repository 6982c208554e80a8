"""The sum step of link-distinct free order on a small instance: Held-Karp over every state.

The recurrence is the one of `subsets` (docs/algorithms.md §3c),

    U(S + h, h, j') = min_{g in S, j} U(S, g, j) + C_g(j, j') + d(g, h, j')   (h not in S),

but where all 2^(G-1) G states (S, last) times L+1 starts are few (`Dense.fits`), pruning by
an incumbent saves less than it costs: a sum step there is a handful of array operations per
level. Every state is reachable, so the levels, the (state, next device) pairs and the grouping
that merges pairs into the next level's states do not depend on the caps and are built once per
problem. A cap enters only through kmax[g, h, j'], the number of stage lengths k ending at j'
with C_g(j'-k, j') <= tau_cap and C_g(j'-k, j') + d(g, h, j') <= sigma_cap: C grows with k
(costs and memory are >= 0), so the allowed lengths are the kmax shortest, and the best start
among them is a running minimum over k. O(2^G G^2 L w) time per step, the same float operations
in the same order as `subsets` (so its backtrack recovers the plan), no pruning.
"""

from __future__ import annotations

import math

import numpy as np

from partitioner.solvers.dp.kernel import sources
from partitioner.solvers.dp.tables import DPTables

__all__ = ["Dense", "MAX_ELEMENTS"]

INF = float(np.inf)
MAX_ELEMENTS = 20_000  # states x (L+1) x w of the widest level: beyond it pruning (`subsets`) pays (measured)


class Dense:
    """The cap-independent structure of the full subset DP for one problem (module doc)."""

    def __init__(self, T: DPTables) -> None:
        G, J = T.G, T.L + 1
        self.T = T
        self.Cb = T.band_stack(INF)  # Cb[g, j', k-1] = C_g(j'-k, j'), +inf past g's longest stage
        w = self.Cb.shape[2]
        self.D = T.Dstack[T.link_id]  # (G, G, J): d(g, h, j')
        self.close = np.array([T.C[int(T.cost_id[g])][:, T.L] for g in range(G)])  # C_g(j, L)
        self.src = sources(J, w)
        key = (np.left_shift(np.int64(1), np.arange(G, dtype=np.int64))) * G + np.arange(G)
        self.keys: list[np.ndarray] = [key]  # level s: sorted keys S * G + last of the states with |S| = s + 1
        self.moves: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (ri, hi, first), by next state
        self.lev: list[tuple[np.ndarray, ...]] = []  # per level: last, Cb[last], last of each pair, its delays
        for _ in range(G - 1):
            mask, last = key // G, key % G
            free = ((mask[:, None] >> np.arange(G)[None, :]) & 1) == 0
            ri, hi = np.nonzero(free)
            nxt = (mask[ri] | np.left_shift(np.int64(1), hi)) * G + hi
            order = np.argsort(nxt, kind="stable")  # pairs sorted by the state they lead to
            ri, hi, nxt = ri[order], hi[order], nxt[order]
            first = np.flatnonzero(np.r_[True, nxt[1:] != nxt[:-1]])
            self.moves.append((ri, hi, first))
            self.lev.append((last, self.Cb[last], last[ri], self.D[last[ri], hi]))
            key = nxt[first]
            self.keys.append(key)
        self.lev.append((key % G, self.Cb[key % G], np.empty(0, dtype=np.int64), np.empty((0, J))))

    @staticmethod
    def fits(T: DPTables) -> bool:
        """Whether the largest level's (states, L+1, w) temporary stays within MAX_ELEMENTS."""
        G = T.G
        if G > 16:
            return False
        widest = max(math.comb(G, s) * s for s in range(1, G + 1)) if G else 0
        w = max(T.band(g, INF).shape[1] for g in range(G))
        return widest * (T.L + 1) * w <= MAX_ELEMENTS

    def sum_steps(self, caps: np.ndarray) -> list[tuple[float, list[tuple[np.ndarray, np.ndarray]], int, int, int]]:
        """min sum sigma under each row (tau_cap, sigma_cap) of caps (k, 2), all in one pass (the
        rows share every array operation): per row (value, levels [(keys, U)], level, row, start)
        of the best closing state, value inf when no plan meets that row's caps."""
        G, J = self.T.G, self.T.L + 1
        k = caps.shape[0]
        tc, sc = caps[:, 0, None, None, None], caps[:, 1, None, None, None, None]
        top = float(caps.min(axis=1).max())  # no stage longer than the longest within this cap is allowed
        w = max(1, int(np.isfinite(np.where(self.Cb <= top, self.Cb, INF)).any(axis=(0, 1)).sum()))
        Cb_all = self.Cb[:, :, :w]
        ok = Cb_all[None] <= tc  # (k, G, J, w)
        kmax = (ok[:, :, None] & (Cb_all[None, :, None] + self.D[None, :, :, :, None] <= sc)).sum(axis=4)
        close = np.where(self.close[None] <= caps.min(axis=1)[:, None, None], self.close[None], INF)  # (k, G, J)
        U = np.full((k, G, J), INF)
        U[:, :, 0] = 0.0
        levels: list[np.ndarray] = []
        fins: list[np.ndarray] = []  # per level: the value of closing the pipeline at each state and start
        rows, cols = np.arange(k)[:, None, None], np.arange(J)[None, None, :]
        for s in range(G):
            last, Cb, pair_last, pair_D = self.lev[s]
            levels.append(U)
            fins.append(U + close[:, last])
            if s == G - 1:
                break
            ri, hi, first = self.moves[s]
            PM = np.minimum.accumulate(U[:, :, self.src[:, :w]] + Cb[None, :, :, :w], axis=3)  # (k, n, J, w)
            kk = kmax[:, pair_last, hi]  # (k, pairs, J)
            got = PM[rows, ri[None, :, None], cols, np.maximum(kk - 1, 0)]
            cand = np.where(kk > 0, got, INF) + pair_D[None]
            U = np.minimum.reduceat(cand, first, axis=1)
        F = np.concatenate(fins, axis=1).reshape(k, -1)  # levels one after the other: the first best wins ties
        at = F.argmin(axis=1)
        offsets = np.cumsum([0] + [f.shape[1] for f in fins])
        out = []
        for i in range(k):
            state, start = divmod(int(at[i]), J)
            level = int(np.searchsorted(offsets, state, side="right")) - 1
            out.append((float(F[i, at[i]]), [(self.keys[s], levels[s][i]) for s in range(len(levels))], level,
                        state - int(offsets[level]), start))
        return out

    def sum_step(self, tau_cap: float, sigma_cap: float) -> tuple[float, list[tuple[np.ndarray, np.ndarray]], int, int, int]:
        """`sum_steps` for one pair of caps."""
        return self.sum_steps(np.array([[tau_cap, sigma_cap]]))[0]
