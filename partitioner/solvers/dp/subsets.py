"""The sum step of link-distinct free order: Held-Karp over (used devices, last device, cut), pruned.

When every device has its own links no two are interchangeable and the class lattice of
`lattice` degenerates to the 2^G subsets. The sum step g = min sum sigma (Thm 2 / Thm 3: sum tau
+ sum d) subject to tau_s <= tau_cap and sigma_s <= sigma_cap is then the Held-Karp recurrence

    U(S + h, h, j') = min_{g in S, j} U(S, g, j) + C_g(j, j') + d(g, h, j')   (h not in S)

over states (S, g, j): device g starts a stage at layer j having used S (docs/algorithms.md §3c).
Where every state is affordable (`dense.Dense.fits`) the step runs over all of them instead.
It runs level by level (|S| = 1..G) over sparse arrays of the states kept, and a state is kept
only while U + H <= ub, where ub is an incumbent's value and H the exact cost-to-go of the class
relaxation (`relax.to_go`, admissible: every real completion costs at least the relaxed one).
Without pruning this is O(2^G * G * L * (w + G)) time for w the longest stage; with a tight
incumbent only states within (ub - optimum) of an optimal prefix survive. The answer is exact:
no plan of value <= ub leaves the kept states.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from partitioner.problem import Problem
from partitioner.solvers.dp.dense import Dense
from partitioner.solvers.dp.kernel import sources
from partitioner.solvers.dp.relax import Coarse, build_coarse, to_go
from partitioner.solvers.dp.tables import DPTables, build_tables, cap

__all__ = ["sum_step", "backtrack", "Ctx", "TooBig", "BEAM", "SMALL_G"]

Plan = tuple[float, tuple[int, ...], tuple[int, ...]]
INF = float(np.inf)
BEAM = 64  # states per level kept by the heuristic (beam) pass that finds incumbents
SMALL_G = 8  # up to here the exact steps are cheap: no heuristic H (zeros) and no default deadline
MAX_CELLS = 10_000_000  # states x layers one level of the exact search may hold (80 MB per array)
CHUNK = 2_000_000  # elements per temporary (rows x L x w) block
H_CACHE = 25_000_000  # floats of cost-to-go arrays kept between steps (200 MB)


class TooBig(Exception):
    """A level of the exact subset search would exceed MAX_CELLS (the caller keeps its bound)."""


class Ctx:
    """Tables, classes and a small cache of cost-to-go arrays for one problem."""

    def __init__(self, problem: Problem, check: Callable[[], None] | None,
                 spend: Callable[[int], None] | None = None) -> None:
        """`check()` stops the search (time limit); `spend(cells)`, where given, is called instead
        with the DP cells (state x layer x stage-length entries) each step computes, so a budget
        counted in cells stops it at the same point on any machine (Budget.spend)."""
        self.problem = problem
        self.T: DPTables = build_tables(problem.tables)
        self._co: Coarse | None = None
        self.check = check
        self.spend = spend
        self._H: dict[tuple[float, float], np.ndarray] = {}
        self.states = 0  # subset states kept, over every step (reported in the stats)
        self.dense = Dense(self.T) if Dense.fits(self.T) else None  # small: every state, no pruning
        self.bands: dict[tuple[float, float], tuple[np.ndarray, np.ndarray, np.ndarray | None]] = {}
        self.stacks: dict[float, tuple[np.ndarray, np.ndarray]] = {}

    def stack(self, tau_cap: float) -> tuple[np.ndarray, np.ndarray]:
        """(`DPTables.band_stack(tau_cap)`, the delays D[g, h] (G, G, L+1)) for the last few caps."""
        if tau_cap not in self.stacks:
            if len(self.stacks) > 8:
                self.stacks.clear()
            self.stacks[tau_cap] = (self.T.band_stack(tau_cap), self.T.Dstack[self.T.link_id])
        return self.stacks[tau_cap]

    def tick(self, cells: int) -> None:
        """One step of the search that computes `cells` DP cells (`spend`, else `check`)."""
        if self.spend is not None:
            self.spend(cells)
        elif self.check is not None:
            self.check()

    @property
    def co(self) -> Coarse:
        """The class relaxation (built when first needed: the every-state step does not use it)."""
        if self._co is None:
            self._co = build_coarse(self.T, self.problem.tables)
        return self._co

    def H(self, tau_cap: float, sigma_cap: float) -> np.ndarray:
        key = (tau_cap, sigma_cap) if self.problem.G > SMALL_G else (INF, INF)
        if self.problem.G <= SMALL_G and key not in self._H:  # small: no pruning needed, H = 0 is admissible
            self._H[key] = np.zeros((self.co.lat.coords.shape[0], self.co.lat.T, self.T.L + 1))
        if key not in self._H:
            if len(self._H) * self.co.lat.coords.shape[0] * self.co.lat.T * (self.T.L + 1) > H_CACHE:
                self._H.clear()
            self._H[key] = to_go(self.co, self.T, tau_cap, sigma_cap, self.check, self.spend)
        return self._H[key]

    def relaxed(self, tau_cap: float, sigma_cap: float) -> float:
        """The relaxation's g: a lower bound on every plan's sum of sigma under the caps."""
        return float(self.H(tau_cap, sigma_cap)[self.co.top, :, 0].min())


def sum_step(ctx: Ctx, tau_cap: float, sigma_cap: float, ub: float = INF, beam: int = 0) -> Plan:
    """min sum sigma under the caps over plans of value <= ub (module doc); (inf, (), ()) when no
    plan is that good. With `beam` > 0 only that many states per level are kept (a heuristic).
    A level is (keys, U): key = S * G + last (sorted), U (n, L+1) the value at each start."""
    T, co = ctx.T, ctx.co
    G, L, J = T.G, T.L, T.L + 1
    ubc = cap(ub) if np.isfinite(ub) else INF
    if ctx.dense is not None:  # small: the exact step over every state is cheaper than pruning
        value, full, level, row, start = ctx.dense.sum_step(tau_cap, sigma_cap)
        ctx.states += sum(k.size for k, _ in full)
        ctx.tick(sum(u.size for _, u in full))
        if not np.isfinite(value) or value > ubc:
            return INF, (), ()
        return value, *backtrack(ctx, full, level, row, start, tau_cap, sigma_cap)
    H = ctx.H(tau_cap, sigma_cap)
    stride, cls, top = co.lat.stride, co.cls, co.top
    close = np.array([T.C[int(T.cost_id[g])][:, L] for g in range(G)])
    close = np.where(close <= min(tau_cap, sigma_cap), close, INF)
    key = (np.left_shift(np.int64(1), np.arange(G, dtype=np.int64))) * G + np.arange(G)
    cidx = stride[cls].astype(np.int64)
    U = np.full((G, J), INF)
    U[:, 0] = 0.0
    levels: list[tuple[np.ndarray, np.ndarray]] = []
    best = (INF, -1, -1, -1)
    for s in range(G):
        ctx.tick(U.size)
        last = key % G
        lb = U + H[top - cidx + stride[cls[last]], cls[last]]
        U = np.where(lb <= ubc, U, INF)
        keep = np.isfinite(U).any(axis=1)
        if beam and keep.sum() > beam:
            order = np.argsort(np.where(np.isfinite(U), lb, INF).min(axis=1), kind="stable")
            keep = np.zeros(U.shape[0], dtype=bool)
            keep[order[:beam]] = True
        key, cidx, U, last = key[keep], cidx[keep], U[keep], last[keep]
        levels.append((key, U))
        ctx.states += U.shape[0]
        if U.shape[0] == 0:
            break
        fin = U + close[last]
        at = np.unravel_index(int(fin.argmin()), fin.shape)
        if fin[at] < best[0]:
            best = (float(fin[at]), s, int(at[0]), int(at[1]))
        if s < G - 1:
            key, cidx, U = _expand(ctx, H, ubc, key, cidx, U, tau_cap, sigma_cap)
    value, level, row, start = best
    if not np.isfinite(value) or value > ubc:
        return INF, (), ()
    return value, *backtrack(ctx, levels, level, row, start, tau_cap, sigma_cap)


def _expand(
    ctx: Ctx, H: np.ndarray, ubc: float, key: np.ndarray, cidx: np.ndarray, U: np.ndarray,
    tau_cap: float, sigma_cap: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The next level: every kept state through one stage and one link to an unused device,
    pruned by U + H <= ub and merged per (S + h, h) by a grouped minimum. The states of every
    last device go through one set of array operations (`_bands` pads the bands to one width),
    in row chunks of about CHUNK elements."""
    T, co = ctx.T, ctx.co
    G, J = T.G, T.L + 1
    stride, cls, top = co.lat.stride, co.cls, co.top
    mask, last = key // G, key % G
    if mask.size and mask.size * (G - bin(int(mask[0])).count("1")) * J > MAX_CELLS:
        raise TooBig
    Cb, D, kmax = _bands(ctx, tau_cap, sigma_cap)
    src = sources(J, Cb.shape[2])
    vals, keys, cids = [], [], []
    step = max(1, CHUNK // (J * Cb.shape[2]))
    for lo in range(0, key.size, step):
        R = np.arange(lo, min(lo + step, key.size))
        ctx.tick(R.size * J * Cb.shape[2])  # the (rows, J, w) block below
        g = last[R]
        free = ((mask[R][:, None] >> np.arange(G)[None, :]) & 1) == 0
        free[np.arange(R.size), g] = False
        ri, hi = np.nonzero(free)
        V = U[R][:, src] + Cb[g]  # (n, J, w): the stage of k layers ending at j'
        if kmax is None:
            cand = V.min(axis=2)[ri] + D[g[ri], hi]
        else:  # the sigma cap C + d(g, h, j') <= cap allows the k <= kmax(g, h, j') shortest stages
            PM = np.minimum.accumulate(V, axis=2)
            k = kmax[g[ri], hi]  # (pairs, J)
            got = PM[ri[:, None], np.arange(J)[None, :], np.maximum(k - 1, 0)]
            cand = np.where(k > 0, got, INF) + D[g[ri], hi]
        rows = R[ri]
        lb = cand + H[top - cidx[rows], cls[hi]]  # what is left: the unused devices, h among them
        cand = np.where(lb <= ubc, cand, INF)
        ok = np.isfinite(cand).any(axis=1)
        vals.append(cand[ok])
        keys.append((mask[rows[ok]] | np.left_shift(np.int64(1), hi[ok])) * G + hi[ok])
        cids.append(cidx[rows[ok]] + stride[cls[hi[ok]]])
    if not vals or sum(v.shape[0] for v in vals) == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), np.empty((0, J))
    V, K, C = np.concatenate(vals), np.concatenate(keys), np.concatenate(cids)
    order = np.argsort(K, kind="stable")
    V, K, C = V[order], K[order], C[order]
    first = np.flatnonzero(np.r_[True, K[1:] != K[:-1]])
    return K[first], C[first], np.minimum.reduceat(V, first, axis=0)


def _bands(ctx: Ctx, tau_cap: float, sigma_cap: float) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Per device g: the band Cb[g] (J, w) padded with +inf to one width w, the delays
    D[g, h] (J,) to every h (`Ctx.stack`), and under a sigma cap kmax[g, h, j'] = the number of
    stage lengths k with C_g(j'-k, j') + d(g, h, j') <= cap (C grows with k, so they are the
    k shortest)."""
    key = (tau_cap, sigma_cap)
    if key not in ctx.bands:
        Cb, D = ctx.stack(tau_cap)
        kmax = None
        if sigma_cap != INF:
            kmax = np.stack([(Cb[g][None, :, :] + D[g][:, :, None] <= sigma_cap).sum(axis=2) for g in range(ctx.T.G)])
        if len(ctx.bands) > 8:
            ctx.bands.clear()
        ctx.bands[key] = (Cb, D, kmax)
    return ctx.bands[key]


def backtrack(
    ctx: Ctx, levels: list[tuple[np.ndarray, np.ndarray]], s: int, r: int, j: int, tau_cap: float, sigma_cap: float,
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Walk back from state row r of level s starting at j: each predecessor is recomputed with
    the same float operations as `_expand` and the smallest one is taken (it is the value kept)."""
    G, L = ctx.T.G, ctx.T.L
    Cb, Dall = ctx.stack(tau_cap)
    key = int(levels[s][0][r])
    devices, cuts = [key % G], [L, j]
    while s > 0:
        h, mask = key % G, key // G
        prev_mask = mask ^ (1 << h)
        pkeys, pU = levels[s - 1]
        gs = np.flatnonzero((prev_mask >> np.arange(G)) & 1)  # every g of S - h, in order
        want = prev_mask * G + gs
        at = np.minimum(np.searchsorted(pkeys, want), pkeys.size - 1)
        kept = pkeys[at] == want  # the predecessor states that were kept
        gs, at = gs[kept], at[kept]
        k = np.arange(1, min(Cb.shape[2], j) + 1)
        stage = Cb[gs, j, : k.size]  # (g, k): C_g(j - k, j)
        D = Dall[gs, h, j][:, None]
        if sigma_cap != INF:
            stage = np.where(stage + D <= sigma_cap, stage, INF)
        vals = pU[at][:, j - k] + stage + D
        gi, ki = divmod(int(vals.argmin()), k.size)  # the first g, then the first k, attaining it
        r, j = int(at[gi]), int(j - k[ki])
        s -= 1
        key = int(levels[s][0][r])
        devices.append(key % G)
        cuts.append(j)
    return tuple(reversed(devices)), tuple(reversed(cuts))
