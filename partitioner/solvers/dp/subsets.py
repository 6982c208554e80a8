"""Free order with link-distinct devices: Held-Karp over (used devices, last device, cut), pruned.

When every device has its own links no two are interchangeable and the class lattice of
`lattice` degenerates to the 2^G subsets. The sum step g = min sum sigma (Thm 2 / Thm 3: sum tau
+ sum d) subject to tau_s <= tau_cap and sigma_s <= sigma_cap is then the Held-Karp recurrence

    U(S + h, h, j') = min_{g in S, j} U(S, g, j) + C_g(j, j') + d(g, h, j')   (h not in S)

over states (S, g, j): device g starts a stage at layer j having used S (docs/algorithms.md §3c).
It runs level by level (|S| = 1..G) over sparse arrays of the states kept, and a state is kept
only while U + H <= ub, where ub is an incumbent's value and H the exact cost-to-go of the class
relaxation (`relax.to_go`, admissible: every real completion costs at least the relaxed one).
Without pruning this is O(2^G * G * L * (w + G)) time for w the longest stage; with a tight
incumbent only states within (ub - optimum) of an optimal prefix survive. The answer is exact:
no plan of value <= ub leaves the kept states.

T(M) (the makespan objective) = min over the bottleneck threshold t of (M-1) t + g(t) (the
parametric form of `makespan`): a best-first search over index intervals [a, b] of the sorted
candidate thresholds (interval sums, plus delays in blocking), whose bound is (M-1) t_a + g(t_b);
g(t_b) is asked only for plans below best_T - (M-1) t_a, so a pruned call closes the whole
interval, and a plan found with bottleneck t' closes [t', t_b]. The relaxation's g bounds every
open interval, so a search stopped by the time limit still reports a proven lower bound.
Throughput in the async regime is one sum step at tau* (the class lattice's exact period).
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable

import numpy as np

from partitioner.problem import Problem, Solution, evaluate, objective_key
from partitioner.solvers.budget import Budget, TimeUp
from partitioner.solvers.dp.kernel import sources
from partitioner.solvers.dp.lattice import lattice_size
from partitioner.solvers.dp.relax import Coarse, build_coarse, to_go
from partitioner.solvers.dp.space import Space
from partitioner.solvers.dp.tables import DPTables, build_tables, cap, device_classes

__all__ = ["applies", "preferred", "solve", "sum_step", "MAX_G", "BEAM"]

Plan = tuple[float, tuple[int, ...], tuple[int, ...]]
INF = float(np.inf)
MAX_G = 30  # masks are int64; beyond a few dozen devices the relaxation is all there is
MAX_CLASS_LATTICE = 200_000  # the class lattice the heuristic H lives on
BEAM = 64  # states per level kept by the heuristic (beam) pass that finds incumbents
SIGMA_BEAM = 256  # ... in the sigma bisection, whose witnesses set the period (measured: 64 left 3 % at G=24)
DELTA = 0.002  # the first ub of an exact sum step: the relaxation's g plus this share of it
DEFAULT_LIMIT_S = 10.0
SMALL_G = 8  # up to here the exact search always finishes within seconds: no default deadline
BEAM_CALLS = 24  # sum steps of the beam pass
BEAM_SHARE = 0.3  # ... and at most this share of the time left
MAX_CELLS = 30_000_000  # states x layers one level of the exact search may hold (~240 MB per array)
MAX_INTERVALS = 64  # threshold intervals the relaxation splits before the exact search
CHUNK = 2_000_000  # elements per temporary (rows x L x w) block


def applies(problem: Problem) -> bool:
    """Free order, at most MAX_G devices, links that make (nearly) every device distinct (a link
    lattice of more than 2^(G-2) points: otherwise the lattice of `lattice` is far smaller than
    the subsets and is the better search space) and a class lattice of <= MAX_CLASS_LATTICE points."""
    if problem.order != "free" or problem.G > MAX_G:
        return False
    coarse = lattice_size(device_classes(problem.tables, links=False))
    fine = lattice_size(device_classes(problem.tables, links=True))
    return fine > max(coarse, 2 ** (problem.G - 2)) and coarse <= MAX_CLASS_LATTICE


def preferred(problem: Problem) -> bool:
    """Link-distinct makespan (every device its own link class): taken here even where the lattice
    applies, since its cost-pruned threshold search does not depend on the lattice's budgets."""
    if not applies(problem) or problem.objective != "makespan" or problem.G < 2:
        return False
    return all(len(c) == 1 for c in device_classes(problem.tables, links=True))


class TooBig(Exception):
    """A level of the exact subset search would exceed MAX_CELLS (the caller keeps its bound)."""


class _Ctx:
    """Tables, classes and a small cache of cost-to-go arrays for one problem."""

    def __init__(self, problem: Problem, check: Callable[[], None] | None) -> None:
        self.problem = problem
        self.T: DPTables = build_tables(problem.tables)
        self.co: Coarse = build_coarse(self.T, problem.tables)
        self.check = check
        self._H: dict[tuple[float, float], np.ndarray] = {}
        self.states = 0  # subset states kept, over every step (reported in the stats)

    def H(self, tau_cap: float, sigma_cap: float) -> np.ndarray:
        key = (tau_cap, sigma_cap) if self.problem.G > SMALL_G else (INF, INF)
        if self.problem.G <= SMALL_G and key not in self._H:  # small: no pruning needed, H = 0 is admissible
            self._H[key] = np.zeros((self.co.lat.coords.shape[0], self.co.lat.T, self.T.L + 1))
        if key not in self._H:
            if len(self._H) > 8:
                self._H.clear()
            self._H[key] = to_go(self.co, self.T, tau_cap, sigma_cap, self.check)
        return self._H[key]

    def relaxed(self, tau_cap: float, sigma_cap: float) -> float:
        """The relaxation's g: a lower bound on every plan's sum of sigma under the caps."""
        return float(self.H(tau_cap, sigma_cap)[self.co.top, :, 0].min())


def sum_step(ctx: _Ctx, tau_cap: float, sigma_cap: float, ub: float = INF, beam: int = 0) -> Plan:
    """min sum sigma under the caps over plans of value <= ub (module doc); (inf, (), ()) when no
    plan is that good. With `beam` > 0 only that many states per level are kept (a heuristic).
    A level is (keys, U): key = S * G + last (sorted), U (n, L+1) the value at each start."""
    T, co = ctx.T, ctx.co
    G, L, J = T.G, T.L, T.L + 1
    H = ctx.H(tau_cap, sigma_cap)
    ubc = cap(ub) if np.isfinite(ub) else INF
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
        if ctx.check is not None:
            ctx.check()
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
    return value, *_backtrack(ctx, levels, level, row, start, tau_cap, sigma_cap)


def _expand(
    ctx: _Ctx, H: np.ndarray, ubc: float, key: np.ndarray, cidx: np.ndarray, U: np.ndarray,
    tau_cap: float, sigma_cap: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The next level: every kept state through one stage and one link to an unused device,
    pruned by U + H <= ub and merged per (S + h, h) by a grouped minimum."""
    T, co = ctx.T, ctx.co
    G, J = T.G, T.L + 1
    stride, cls, top = co.lat.stride, co.cls, co.top
    mask, last = key // G, key % G
    if mask.size and mask.size * (G - bin(int(mask[0])).count("1")) * J > MAX_CELLS:
        raise TooBig
    vals, keys, cids = [], [], []
    for g in np.unique(last):
        if ctx.check is not None:
            ctx.check()
        R = np.flatnonzero(last == g)
        Cb = T.band(int(g), tau_cap)
        src = sources(J, Cb.shape[1])
        free = ((mask[R][:, None] >> np.arange(G)[None, :]) & 1) == 0
        free[:, g] = False
        Dg = T.Dstack[T.link_id[g]]
        if sigma_cap == INF:
            E = _stage(U[R], src, Cb[None])
            ri, hi = np.nonzero(free)
            cand = E[ri] + Dg[hi]
        else:  # the sigma cap C + d(g, h, j') <= cap allows the k <= kmax_h(j') shortest stages
            kmax = (Cb[None, :, :] + Dg[:, :, None] <= sigma_cap).sum(axis=2)  # (G, J); C grows with k
            ri, hi = np.nonzero(free)
            PM = _stage(U[R], src, Cb[None], prefix=True)  # (n, J, w): best start among the k shortest
            got = PM[ri[:, None], np.arange(J)[None, :], np.maximum(kmax[hi] - 1, 0)]
            cand = np.where(kmax[hi] > 0, got, INF) + Dg[hi]
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


def _stage(Urows: np.ndarray, src: np.ndarray, Cb: np.ndarray, prefix: bool = False) -> np.ndarray:
    """E[r, j'] = min_k U[r, j'-k] + Cb[j', k-1] in row chunks; with `prefix` the running
    minimum over k = 1..w instead, shape (n, J, w)."""
    n, J = Urows.shape
    w = src.shape[1]
    E = np.empty((n, J, w) if prefix else (n, J))
    step = max(1, CHUNK // (J * w))
    for lo in range(0, n, step):
        V = Urows[lo:lo + step][:, src] + Cb
        E[lo:lo + step] = np.minimum.accumulate(V, axis=2) if prefix else V.min(axis=2)
    return E


def _backtrack(
    ctx: _Ctx, levels: list[tuple[np.ndarray, np.ndarray]], s: int, r: int, j: int, tau_cap: float, sigma_cap: float,
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Walk back from state row r of level s starting at j: each predecessor is recomputed with
    the same float operations as `_expand` and the smallest one is taken (it is the value kept)."""
    T = ctx.T
    G, L = T.G, T.L
    key = int(levels[s][0][r])
    devices, cuts = [key % G], [L, j]
    while s > 0:
        h, mask = key % G, key // G
        prev_mask = mask ^ (1 << h)
        pkeys, pU = levels[s - 1]
        choice = (INF, -1, -1)
        for g in range(G):
            if not (prev_mask >> g) & 1:
                continue
            at = int(np.searchsorted(pkeys, prev_mask * G + g))
            if at >= pkeys.size or int(pkeys[at]) != prev_mask * G + g:
                continue
            Cb = T.band(g, tau_cap)
            D = T.delay(g, h)[j]
            k = np.arange(1, min(Cb.shape[1], j) + 1)
            stage = Cb[j, k - 1]
            if sigma_cap != INF:
                stage = np.where(stage + D <= sigma_cap, stage, INF)
            vals = pU[at, j - k] + stage + D
            a = int(vals.argmin())
            if vals[a] < choice[0]:
                choice = (float(vals[a]), at, int(j - k[a]))
        _, r, j = choice
        s -= 1
        key = int(levels[s][0][r])
        devices.append(key % G)
        cuts.append(j)
    return tuple(reversed(devices)), tuple(reversed(cuts))


def solve(problem: Problem, budget: Budget) -> Solution:
    """The exact optimum (module doc) or, past the budget's deadline, the best plan so far with
    the relaxation's proven lower bound. The search is exponential in G, so a budget without a
    deadline gets DEFAULT_LIMIT_S (CP-SAT's default limit) unless the instance is small."""
    if budget.deadline is None and problem.G > SMALL_G:
        budget.deadline = budget.start + DEFAULT_LIMIT_S
    ctx = _Ctx(problem, budget.check)
    found = {"lower": 0.0}
    try:
        plan = _makespan(ctx, budget, found) if problem.objective == "makespan" else _lexi(ctx, budget, found)
    except (TimeUp, TooBig, KeyboardInterrupt) as exc:
        budget.bound(found["lower"])
        out = budget.best_solution("INTERRUPTED" if isinstance(exc, KeyboardInterrupt) else "TIME_LIMIT")
        if out is None:
            raise
        return out
    key = objective_key(problem, evaluate(problem, plan[1], plan[2]))
    return Solution(devices=plan[1], cuts=plan[2], solver="dp", optimal=True, objective=key, lower_bound=key[0],
                    status="OPTIMAL", wall_time_s=budget.elapsed(), stats=(("subset_states", float(ctx.states)),))


def _tau_plan(ctx: _Ctx, budget: Budget) -> Plan:
    plan = Space(ctx.T, coarse=ctx.co.lat).tau_plan()
    if plan[1]:
        budget.offer(ctx.problem, plan[1], plan[2])
    return plan


def _lexi(ctx: _Ctx, budget: Budget, found: dict[str, float]) -> Plan:
    """Balanced (tau*, sigma*, min sum) and throughput (period, min sum): tau* exact on the class
    lattice; sigma* (balanced, blocking throughput) by `_sigma_step`; then one sum step under
    the caps, seeded with the best plan that meets them."""
    from partitioner.errors import InfeasibleError
    from partitioner.problem import explain_infeasible

    problem = ctx.problem
    seed = _tau_plan(ctx, budget)
    if not seed[1]:
        raise InfeasibleError(explain_infeasible(problem.tables))
    tau = seed[0]
    sigma_first = problem.objective == "throughput" and problem.regime == "blocking"
    if not sigma_first:
        found["lower"] = tau
        budget.bound(tau)
    tau_cap, sigma_cap, inc = (INF if sigma_first else cap(tau)), INF, seed
    if problem.objective == "balanced" or sigma_first:
        sigma, inc = _sigma_step(ctx, budget, found, tau_cap, tau, seed, first=sigma_first)
        sigma_cap = cap(sigma)
    m = evaluate(problem, inc[1], inc[2])
    ub = float(m.tau.sum() + m.d.sum())
    quick = sum_step(ctx, tau_cap, sigma_cap, ub, beam=BEAM)
    if quick[1]:
        budget.offer(problem, quick[1], quick[2])
        ub = min(ub, quick[0])
    try:
        exact = sum_step(ctx, tau_cap, sigma_cap, ub)
    except TooBig:
        raise TimeUp from None  # not provable within memory: the best plan so far and its bound
    return exact if exact[1] else (quick if quick[1] else inc)


def _sigma_step(
    ctx: _Ctx, budget: Budget, found: dict[str, float], tau_cap: float, tau: float, seed: Plan, *, first: bool
) -> tuple[float, Plan]:
    """sigma* = min sigma_max over plans with tau <= tau_cap, by bisection over the candidate
    values: the relaxation's feasibility gives the low end (a proven bound), an exact probe is
    one unpruned-by-cost sum step (only states the relaxation can finish under the cap are kept).
    Returns sigma* and a plan attaining it."""
    problem = ctx.problem
    top = evaluate(problem, seed[1], seed[2]).sigma_max
    quick = sum_step(ctx, tau_cap, INF, INF, beam=BEAM)  # any plan: its sigma_max is a cap too
    inc = seed
    if quick[1] and evaluate(problem, quick[1], quick[2]).sigma_max < top:
        inc, top = quick, evaluate(problem, quick[1], quick[2]).sigma_max
    cand = _candidates(ctx, "sigma", tau * (1 - 1e-9) - 1e-12, cap(top))
    if cand.size == 0:
        return top, inc
    lo, hi = 0, cand.size - 1
    while lo < hi:  # the relaxation: no plan below its first feasible cap
        mid = (lo + hi) // 2
        if np.isfinite(ctx.relaxed(tau_cap, cap(float(cand[mid])))):
            hi = mid
        else:
            lo = mid + 1
    if first:
        found["lower"] = max(found["lower"], float(cand[lo]))
        budget.bound(found["lower"])
    hi = cand.size - 1
    for beam in (SIGMA_BEAM, 0):  # bisection with beam witnesses (a low incumbent), then exact probes
        b_lo = lo
        while b_lo < hi:
            mid = (b_lo + hi) // 2
            try:
                plan = sum_step(ctx, tau_cap, cap(float(cand[mid])), INF, beam=beam)
            except TooBig:
                break  # the exact probes are out of memory's reach: keep the proven low end
            if plan[1]:
                budget.offer(problem, plan[1], plan[2])
                inc = plan
                neck = evaluate(problem, plan[1], plan[2]).sigma_max
                hi = max(b_lo, min(mid, int(np.searchsorted(cand, neck * (1 - 1e-12), side="left"))))
            else:
                b_lo = mid + 1
                if beam == 0:
                    lo = b_lo  # proven: no plan has sigma_max below cand[lo]
                    if first:
                        found["lower"] = max(found["lower"], float(cand[lo]))
                        budget.bound(found["lower"])
    if first:
        found["lower"] = max(found["lower"], float(cand[lo]))
    if evaluate(problem, inc[1], inc[2]).sigma_max > cap(float(cand[lo])):
        plan = sum_step(ctx, tau_cap, cap(float(cand[lo])), INF)
        inc = plan if plan[1] else inc
    return evaluate(problem, inc[1], inc[2]).sigma_max, inc


def _candidates(ctx: _Ctx, kind: str, lo: float, hi: float) -> np.ndarray:
    """Sorted distinct bottleneck values in [lo, hi]: interval sums (tau), or stage-plus-link
    sums and closing stages (sigma)."""
    T = ctx.T
    parts = []
    for c in np.unique(T.cost_id):
        C = T.C[int(c)]
        x = C.ravel() if kind == "tau" else C[:, -1]
        parts.append(x[(x >= lo) & (x <= hi)])
    if kind == "sigma":
        pairs = {(int(T.cost_id[g]), int(T.link_id[g, h])) for g in range(T.G) for h in range(T.G) if g != h}
        for c, lid in pairs:
            x = (T.C[c] + T.D[lid][None, :]).ravel()
            parts.append(x[(x >= lo) & (x <= hi)])
    out = np.unique(np.concatenate(parts)) if parts else np.empty(0)
    return out[np.isfinite(out)]


def _makespan(ctx: _Ctx, budget: Budget, found: dict[str, float]) -> Plan:
    """min_t (M-1) t + g(t), best-first over intervals of candidate thresholds (module doc)."""
    from partitioner.errors import InfeasibleError
    from partitioner.problem import explain_infeasible

    problem = ctx.problem
    M, blocking = int(problem.M), problem.regime == "blocking"
    kind = "sigma" if blocking else "tau"

    def caps(t: float) -> tuple[float, float]:
        return (INF, cap(t)) if blocking else (cap(t), INF)

    def T_of(plan: Plan) -> tuple[float, float]:
        m = evaluate(problem, plan[1], plan[2])
        return (m.T_block, m.sigma_max) if blocking else (m.T_async, m.tau_max)

    seed = _tau_plan(ctx, budget)
    if not seed[1]:
        raise InfeasibleError(explain_infeasible(problem.tables))
    tau = seed[0]
    best, (best_T, _) = seed, T_of(seed)
    work = ctx.relaxed(INF, INF)  # <= sum sigma of every plan
    found["lower"] = (M - 1) * tau + work
    if M == 1:
        plan = sum_step(ctx, INF, INF, best_T)
        return plan if plan[1] else best
    cand = _candidates(ctx, kind, tau * (1 - 1e-9) - 1e-12, cap((best_T - work) / (M - 1)))
    if cand.size == 0:
        return best

    def tol(x: float) -> float:
        return x - max(1e-10 * abs(x), 1e-13)

    small = problem.G <= SMALL_G  # exact steps cost less than the relaxation's bounds there

    def bounded(a: int, b: int, g_known: float) -> tuple[float, int, int, float, float]:
        gl = max(g_known, work if small else ctx.relaxed(*caps(float(cand[b]))))
        return (M - 1) * float(cand[a]) + gl, a, b, gl, DELTA * gl

    def halves(a: int, b: int) -> tuple[tuple[int, int], ...]:
        return ((a, (a + b) // 2), ((a + b) // 2 + 1, b)) if b > a else ((a, b),)

    heap, calls = [bounded(0, cand.size - 1, 0.0)], 0
    stop = time.perf_counter() + BEAM_SHARE * budget.left(DEFAULT_LIMIT_S)
    while heap and calls < (BEAM_CALLS if not small else 0) and time.perf_counter() < stop:  # 1. beam pass
        _, a, b, _, _ = heapq.heappop(heap)
        calls += 1
        plan = sum_step(ctx, *caps(float(cand[b])), ub=best_T - (M - 1) * float(cand[a]), beam=BEAM)
        if plan[1]:
            budget.offer(problem, plan[1], plan[2])
            T, neck = T_of(plan)
            if best_T > T:
                best, best_T = plan, T
            top = min(b - 1, int(np.searchsorted(cand, neck * (1 - 1e-12), side="left")) - 1)
            for lo_i, hi_i in halves(a, top) if top >= a else ():
                if bounded(lo_i, hi_i, 0.0)[0] < tol(best_T):
                    heapq.heappush(heap, bounded(lo_i, hi_i, 0.0))
    heap = [bounded(0, cand.size - 1, 0.0)]
    ready: list[tuple[float, int, int, float, float]] = []
    while heap and len(ready) + len(heap) < (0 if small else MAX_INTERVALS):  # 2. split by the relaxation
        item = heapq.heappop(heap)
        lb, a, b, gl, _ = item
        if lb >= tol(best_T):
            heap = []
            break
        found["lower"] = max(found["lower"], min(best_T, lb, *(r[0] for r in ready[:1])))
        if (M - 1) * (float(cand[b]) - float(cand[a])) <= DELTA * gl:
            heapq.heappush(ready, item)
            continue
        for lo_i, hi_i in halves(a, b):
            heapq.heappush(heap, bounded(lo_i, hi_i, 0.0))
    heap = list(heapq.merge(heap, ready))
    heapq.heapify(heap)
    while heap:  # 3. the exact search
        lb, a, b, gl, delta = heapq.heappop(heap)
        found["lower"] = max(found["lower"], min(best_T, lb))
        budget.bound(found["lower"])
        if lb >= tol(best_T):
            break
        room = best_T - (M - 1) * float(cand[a])  # g(t_b) must be below it to help [a, b]
        ub = room if small else min(room, gl + delta)
        try:
            plan = sum_step(ctx, *caps(float(cand[b])), ub=ub)
        except TooBig:  # out of memory's reach: keep the proven bound of the open intervals
            raise TimeUp from None
        if not plan[1]:
            if ub < room:  # g(t_b) > ub: a better bound for [a, b]; retry it with a wider ub later
                heapq.heappush(heap, ((M - 1) * float(cand[a]) + ub, a, b, ub, 2 * delta))
            continue
        budget.offer(problem, plan[1], plan[2])
        T, neck = T_of(plan)
        if best_T > T:
            best, best_T = plan, T
        top = min(b - 1, int(np.searchsorted(cand, neck * (1 - 1e-12), side="left")) - 1)
        for lo_i, hi_i in halves(a, top) if top >= a else ():  # exact g(t_b) <= g(t) on [a, top]
            heapq.heappush(heap, bounded(lo_i, hi_i, plan[0]))
    found["lower"] = best_T
    return best
