"""Link-distinct free order, every objective: the searches around `subsets.sum_step`.

T(M) (the makespan objective) = min over the bottleneck threshold t of (M-1) t + g(t) (the
parametric form of `makespan`): a best-first search over index intervals [a, b] of the sorted
candidate thresholds (interval sums, plus delays in blocking), whose bound is (M-1) t_a + g(t_b);
g(t_b) is asked only for plans below best_T - (M-1) t_a, so a pruned call closes the whole
interval, and a plan found with bottleneck t' closes [t', t_b]. The relaxation's g bounds every
open interval, so a search stopped by the time limit still reports a proven lower bound.
Balanced and throughput: tau* is exact on the class lattice (tau does not depend on links);
sigma* (balanced, blocking throughput) is bisected over the candidate values, the relaxation's
feasibility giving a proven low end, beam witnesses a low incumbent and exact probes closing the
rest; then one sum step under the caps. Every step reports plans and bounds to the budget, so a
search stopped by the time limit (or by MAX_CELLS) returns the best plan with a real gap.
"""

from __future__ import annotations

import heapq
import time

import numpy as np

from partitioner.problem import Problem, Solution, objective_key
from partitioner.solvers.budget import Budget, TimeUp
from partitioner.solvers.dp import subsets, sweep
from partitioner.solvers.dp.lattice import lattice_size
from partitioner.solvers.dp.space import Space
from partitioner.solvers.dp.subsets import BEAM, Ctx, TooBig, sum_step
from partitioner.solvers.dp.tables import cap, device_classes

__all__ = ["applies", "preferred", "solve", "MAX_G"]

Plan = tuple[float, tuple[int, ...], tuple[int, ...]]
INF = float(np.inf)
MAX_G = 30  # masks are int64; beyond a few dozen devices the relaxation is all there is
MAX_CLASS_LATTICE = 200_000  # the class lattice the heuristic H lives on
SIGMA_BEAM = 256  # beam of the sigma bisection, whose witnesses set the period (64 left 3 % at G=24)
DELTA = 0.002  # the first ub of an exact sum step: the relaxation's g plus this share of it
DEFAULT_CELLS = 500_000_000  # DP cells (Ctx.tick) for budgets without a deadline beyond SMALL_G: about
# CP-SAT's default 10 s on one core (measured 4.7e7-8.5e7 cells per CPU second on link-distinct G = 12-24,
# L = 64-128 of benchmarks/instances.random_problem), the same answer on any machine
BEAM_CALLS = 24  # sum steps of the beam pass
BEAM_SHARE = 0.3  # ... and at most this share of the time left
MAX_INTERVALS = 64  # threshold intervals the relaxation splits before the exact search


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


def solve(problem: Problem, budget: Budget) -> Solution:
    """The exact optimum (module doc) or, past the budget's deadline, the best plan so far with
    the relaxation's proven lower bound. The search is exponential in G, so a budget without a
    deadline gets DEFAULT_CELLS DP cells (about CP-SAT's default limit) unless the instance is
    small: counted in cells, not in steps (whose sizes differ 100-fold between instances) nor in
    seconds, so the answer is the same on an idle and a loaded machine."""
    if budget.deadline is None and problem.G > subsets.SMALL_G:
        budget.work_limit = budget.work + DEFAULT_CELLS
    ctx = Ctx(problem, budget.check, spend=budget.spend)
    found = {"lower": 0.0}
    try:
        plan = _makespan(ctx, budget, found) if problem.objective == "makespan" else _lexi(ctx, budget, found)
    except (TimeUp, TooBig, KeyboardInterrupt) as exc:
        from partitioner.solvers.bounds import lower_bound

        budget.bound(max(found["lower"], lower_bound(problem, lp=False)))  # the cheap bound, no LP
        out = budget.best_solution("INTERRUPTED" if isinstance(exc, KeyboardInterrupt) else "TIME_LIMIT")
        if out is None:
            raise
        return out
    key = objective_key(problem, budget.score(problem, plan[1], plan[2]))
    return Solution(devices=plan[1], cuts=plan[2], solver="dp", optimal=True, objective=key, lower_bound=key[0],
                    status="OPTIMAL", wall_time_s=budget.elapsed(), stats=(("subset_states", float(ctx.states)),))


def _tau_plan(ctx: Ctx, budget: Budget) -> Plan:
    plan = Space(ctx.T, coarse=ctx.co.lat).tau_plan()
    if plan[1]:
        budget.offer(ctx.problem, plan[1], plan[2])
    return plan


def _lexi(ctx: Ctx, budget: Budget, found: dict[str, float]) -> Plan:
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
    found["lower"] = tau  # the period: tau_max >= tau*, and sigma_max >= tau_max
    budget.bound(tau)
    tau_cap, sigma_cap, inc = (INF if sigma_first else cap(tau)), INF, seed
    if problem.objective == "balanced" or sigma_first:
        sigma, inc = _sigma_step(ctx, budget, found, tau_cap, tau, seed, first=sigma_first)
        sigma_cap = cap(sigma)
    m = budget.score(problem, inc[1], inc[2])
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
    ctx: Ctx, budget: Budget, found: dict[str, float], tau_cap: float, tau: float, seed: Plan, *, first: bool
) -> tuple[float, Plan]:
    """sigma* = min sigma_max over plans with tau <= tau_cap, by bisection over the candidate
    values: the relaxation's feasibility gives the low end (a proven bound), an exact probe is
    one unpruned-by-cost sum step (only states the relaxation can finish under the cap are kept).
    Returns sigma* and a plan attaining it."""
    problem = ctx.problem
    top = budget.score(problem, seed[1], seed[2]).sigma_max
    quick = sum_step(ctx, tau_cap, INF, INF, beam=BEAM)  # any plan: its sigma_max is a cap too
    inc = seed
    if quick[1] and budget.score(problem, quick[1], quick[2]).sigma_max < top:
        inc, top = quick, budget.score(problem, quick[1], quick[2]).sigma_max
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
                neck = budget.score(problem, plan[1], plan[2]).sigma_max
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
    if budget.score(problem, inc[1], inc[2]).sigma_max > cap(float(cand[lo])):
        plan = sum_step(ctx, tau_cap, cap(float(cand[lo])), INF)
        inc = plan if plan[1] else inc
    return budget.score(problem, inc[1], inc[2]).sigma_max, inc


def _candidates(ctx: Ctx, kind: str, lo: float, hi: float) -> np.ndarray:
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


def _makespan(ctx: Ctx, budget: Budget, found: dict[str, float]) -> Plan:
    """min_t (M-1) t + g(t), best-first over intervals of candidate thresholds (module doc)."""
    from partitioner.errors import InfeasibleError
    from partitioner.problem import explain_infeasible

    problem = ctx.problem
    M, blocking = int(problem.M), problem.regime == "blocking"
    kind = "sigma" if blocking else "tau"

    def caps(t: float) -> tuple[float, float]:
        return (INF, cap(t)) if blocking else (cap(t), INF)

    def T_of(plan: Plan) -> tuple[float, float]:
        m = budget.score(problem, plan[1], plan[2])
        return (m.T_block, m.sigma_max) if blocking else (m.T_async, m.tau_max)

    if ctx.dense is not None:  # small: K probes a round over every state
        def scored(plan: Plan) -> tuple[float, float]:
            budget.offer(problem, plan[1], plan[2])
            return T_of(plan)

        probe = sweep.dense_probe(ctx.dense, lambda *a: subsets.backtrack(ctx, *a))
        lb = float(problem.tables.cost.min(axis=0).max())
        found_plan = sweep.min_makespan(probe, lambda lo, hi: _candidates(ctx, kind, lo, hi), scored, M, blocking,
                                        lb, found, budget.check)
        if not found_plan[1]:
            raise InfeasibleError(explain_infeasible(problem.tables))
        return found_plan
    seed = _tau_plan(ctx, budget)
    if not seed[1]:
        raise InfeasibleError(explain_infeasible(problem.tables))
    tau = seed[0]
    best, (best_T, _) = seed, T_of(seed)
    found["lower"] = M * tau  # T >= (M-1) tau_max + tau_max, and tau_max >= tau*
    work = ctx.relaxed(INF, INF)  # <= sum sigma of every plan
    found["lower"] = (M - 1) * tau + max(work, tau)  # sum sigma >= tau_max >= tau*
    if M == 1:
        plan = sum_step(ctx, INF, INF, best_T)
        return plan if plan[1] else best
    cand = _candidates(ctx, kind, tau * (1 - 1e-9) - 1e-12, cap((best_T - work) / (M - 1)))
    if cand.size == 0:
        return best

    def tol(x: float) -> float:
        return x - max(1e-10 * abs(x), 1e-13)

    small = problem.G <= subsets.SMALL_G  # exact steps cost less than the relaxation's bounds there

    def bounded(a: int, b: int, g_known: float) -> tuple[float, int, int, float, float]:
        gl = max(g_known, work if small else ctx.relaxed(*caps(float(cand[b]))))
        return (M - 1) * float(cand[a]) + gl, a, b, gl, DELTA * gl

    def halves(a: int, b: int) -> tuple[tuple[int, int], ...]:
        return ((a, (a + b) // 2), ((a + b) // 2 + 1, b)) if b > a else ((a, b),)

    heap, calls = [bounded(0, cand.size - 1, 0.0)], 0
    # a wall-clock share only under the user's limit; otherwise BEAM_CALLS alone (load-independent)
    stop = time.perf_counter() + BEAM_SHARE * budget.left(0.0) if budget.deadline is not None else float("inf")
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
