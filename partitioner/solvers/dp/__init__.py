"""`dp`: the exact dynamic-programming solver (docs/algorithms.md §3).

Steps: the period tau* (§3a fixed order, §3b free order over device classes with bisection,
and a plan attaining it backtracked from the reachability DP), the lexicographic sigma step
(§3c), the exact min T(M) (§3d), each solved over the same plan space (`space.Space`). In free
order the period steps visit only the states that can still finish under their caps
(`banded`, O(S T w) for S kept states: a thin band at tau*), and the makespan steps count
only the scarce classes (`relaxed`, decremental state-space relaxation, O(L w N_K T) per pass).
`applies` bounds the listed lattices (thresholds below). Beyond them `hint` still proves what
it can (`_relaxed`): tau* from a reach over merged classes (`relaxed_tau`), then the relaxed
steps, which raise `Unaffordable` when they would need too many counted classes; only then
does `auto` hand the instance to CP-SAT, seeded by `hint` (its best plan and bound).
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from partitioner.errors import InfeasibleError, InputError, SolverError
from partitioner.problem import Problem, Solution, evaluate, explain_infeasible, lex_compare, objective_key
from partitioner.solvers.budget import Budget, TimeUp
from partitioner.solvers.dp import distinct
from partitioner.solvers.dp.fixed import Plan
from partitioner.solvers.dp.lattice import Lattice, lattice_size
from partitioner.solvers.dp.makespan import min_makespan
from partitioner.solvers.dp.relaxed import Unaffordable
from partitioner.solvers.dp.relaxed_tau import relaxed_tau
from partitioner.solvers.dp.sigma import balanced, throughput
from partitioner.solvers.dp.space import Space
from partitioner.solvers.dp.tables import build_tables, device_classes

__all__ = ["solve", "applies", "hint", "free_tau", "free_tau_plan", "work", "MAX_TAU_LATTICE", "MAX_STAGE_WORK", "MAX_MATRIX"]

MAX_TAU_LATTICE = 200_000  # prod(m_t + 1) over (cost, capacity) classes: tau step (§3b)
MAX_STAGE_WORK = 100_000_000  # prod(m_t + 1) * T * (L+1) over link-aware classes: the states
# (v, t, j) the sigma/sum steps could keep; at the tau* cap only a thin band of them is kept
MAX_MATRIX = 60_000_000  # (L+1)^2 x distinct cost rows: the interval-cost matrices in memory
MAX_FINE_LATTICE = 2_000_000  # link-aware lattice the relaxed route still builds (`_relaxed`)
MAX_RELAXED_CLASSES = 12  # link-aware classes up to which `hint` tries the relaxed route
MAKESPAN_CALLS = 200  # the makespan search caps stages far above tau*, so its bands are wide


def work(problem: Problem) -> dict[str, int]:
    """Sizes `applies` compares with its thresholds (free-order lattices, cost matrices)."""
    t = problem.tables
    J = t.L + 1
    rows = len({bytes(t.cost[g].tobytes()) + bytes(str(t.capacity_gb[g]), "ascii") for g in range(t.G)})
    out = {"matrix": J * J * rows}
    if problem.order == "free":
        coarse = device_classes(t, links=False)
        fine = device_classes(t, links=True)
        out["tau_lattice"] = lattice_size(coarse)
        out["fine_lattice"] = lattice_size(fine)
        out["stage_work"] = out["fine_lattice"] * len(fine) * J
    return out


def applies(problem: Problem) -> bool:
    """`_lattice_applies`, or link-distinct free order within `distinct.applies` (Held-Karp over
    subsets); never under a stage cap that binds (`capped`: auto then runs CP-SAT)."""
    return not capped(problem) and (_lattice_applies(problem) or distinct.applies(problem))


def capped(problem: Problem) -> bool:
    """A stage cap below min(G, L), the most stages any plan can have."""
    cap = problem.max_stages
    return cap is not None and cap < min(problem.G, problem.L)


def _lattice_applies(problem: Problem) -> bool:
    """True when `solve` is exact and affordable: always in fixed order (polynomial) unless the
    cost matrices would not fit MAX_MATRIX; in free order when the (cost, capacity) lattice is
    <= MAX_TAU_LATTICE and the link-aware state bound is <= MAX_STAGE_WORK (divided by
    MAKESPAN_CALLS for the makespan objective, whose sum steps run at loose caps)."""
    try:
        w = work(problem)
    except (ValueError, TypeError):
        return False
    if w["matrix"] > MAX_MATRIX:
        return False
    if problem.order == "fixed":
        return True
    budget = MAX_STAGE_WORK // (MAKESPAN_CALLS if problem.objective == "makespan" else 1)
    return w["tau_lattice"] <= MAX_TAU_LATTICE and w["stage_work"] <= budget


def _space(problem: Problem, banded_ok: bool = True, known_tau: Plan | None = None) -> Space:
    T = build_tables(problem.tables)
    if problem.order == "fixed":
        return Space(T)
    fine_cls = device_classes(problem.tables, links=True)
    fine = Lattice.build(fine_cls) if lattice_size(fine_cls) <= MAX_FINE_LATTICE else Lattice.virtual(fine_cls)
    coarse = None if known_tau is not None else Lattice.build(device_classes(problem.tables, links=False))
    return Space(T, fine=fine, coarse=coarse, banded_ok=banded_ok, known_tau=known_tau)


def solve(problem: Problem, budget: Budget | None = None, **_: object) -> Solution:
    """The exact optimum of `problem` (the objectives of docs/algorithms.md §1); raises InputError when the instance is
    outside `applies` and InfeasibleError when no plan fits the memory limits. Past the time
    limit (`problem.time_limit_s`, or the caller's `budget`) or on Ctrl-C it returns the best
    plan found so far with optimal=False and its lower bound (SolverError / KeyboardInterrupt
    when there is none yet)."""
    if capped(problem):
        raise InputError(f"dp does not take a stage cap (max_stages {problem.max_stages}); use --solver cpsat, "
                         "brute or auto")
    from partitioner.interrupts import no_new_solve

    no_new_solve()  # after Ctrl-C in this command, no new solve starts
    lattice = _lattice_applies(problem)
    if not lattice and not distinct.applies(problem):
        raise InputError(f"dp does not apply to this instance ({work(problem)}); use --solver cpsat or auto")
    if budget is None:
        budget = Budget(problem.time_limit_s)
    if not lattice or distinct.preferred(problem):
        return distinct.solve(problem, budget)
    try:
        return _solve(problem, budget)
    except (TimeUp, KeyboardInterrupt) as exc:
        status = "TIME_LIMIT" if isinstance(exc, TimeUp) else "INTERRUPTED"
        from partitioner.solvers.bounds import lower_bound

        budget.bound(lower_bound(problem, lp=False))
        found = budget.best_solution(status)
        if found is not None:
            return found
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise SolverError(f"dp: no plan found within the time limit ({problem.time_limit_s} s)") from None


def _watch(problem: Problem, space: Space, budget: Budget) -> None:
    """Let the steps report plans and bounds to the budget and stop at its deadline."""
    tau_first = problem.objective != "makespan"  # tau* bounds tau_max and sigma_max >= tau_max

    def seen(kind: str, plan: Plan) -> None:
        if kind == "tau" and tau_first:
            budget.bound(plan[0])
        budget.offer(problem, plan[1], plan[2])

    space.check = budget.check
    space.on_plan = seen
    space.on_bound = budget.bound if problem.objective == "makespan" else None


def _solve(problem: Problem, budget: Budget, banded_ok: bool = True, known_tau: Plan | None = None) -> Solution:
    start = time.perf_counter()
    space = _space(problem, banded_ok, known_tau)
    _watch(problem, space, budget)

    def T_of(plan: Plan) -> tuple[float, float]:
        m = budget.score(problem, plan[1], plan[2])
        if problem.regime == "async":
            return m.T_async, m.tau_max
        return m.T_block, m.sigma_max

    def sigma_of(plan: Plan) -> float:
        return budget.score(problem, plan[1], plan[2]).sigma_max

    if problem.objective == "balanced":
        plan = balanced(space, sigma_of)
    elif problem.objective == "throughput":
        plan = throughput(space, problem.regime, sigma_of)
    else:
        work_lb = float(problem.tables.cost.min(axis=0).sum()) * (1 - 1e-12)
        plan, _, bound = min_makespan(space, problem.regime, int(problem.M), T_of, work_lb)
    if not plan[1]:
        raise InfeasibleError(explain_infeasible(problem.tables))
    key = objective_key(problem, budget.score(problem, plan[1], plan[2]))
    if problem.objective == "makespan" and lex_compare((bound,), key) < 0:  # relaxed route, incomplete
        from partitioner.solvers.bounds import makespan_bound

        budget.bound(max(bound, makespan_bound(problem, space.tau())))
        budget.offer(problem, plan[1], plan[2])
        found = budget.best_solution("FEASIBLE")
        assert found is not None
        return dataclasses.replace(found, wall_time_s=time.perf_counter() - start)
    stats: tuple[tuple[str, float], ...] = (("probes", float(space.calls)),)
    if space.fine is not None:
        stats += (("classes", float(space.fine.T)), ("lattice", float(lattice_size([list(c) for c in space.fine.classes]))))
    return Solution(
        devices=plan[1], cuts=plan[2], solver="dp", optimal=True, objective=key,
        lower_bound=key[0], status="OPTIMAL", wall_time_s=time.perf_counter() - start, stats=stats,
    )


def free_tau(problem: Problem) -> float | None:
    """The exact minimum tau_max in free order by the (cost, capacity) lattice (§3b), or None when
    that lattice exceeds MAX_TAU_LATTICE. inf when no plan fits."""
    return free_tau_plan(problem)[0]


def free_tau_plan(problem: Problem) -> tuple[float | None, tuple[int, ...], tuple[int, ...]]:
    """(tau*, devices, cuts): a free-order plan attaining the exact minimum tau_max, backtracked
    from the reachability DP; (None, (), ()) beyond MAX_TAU_LATTICE, (inf, (), ()) if none fits."""
    classes = device_classes(problem.tables, links=False)
    if lattice_size(classes) > MAX_TAU_LATTICE:
        return None, (), ()
    return Space(build_tables(problem.tables), coarse=Lattice.build(classes)).tau_plan()


def _relaxed(problem: Problem, budget: Budget | None) -> tuple[Solution | None, Plan | None]:
    """(the exact optimum beyond `applies` when the relaxed steps converge within their state cap,
    else None or a makespan plan with its bound; the merged-class reach's (tau bound, plan) when
    the tau lattice is too large, else None)."""
    if problem.order != "free" or len(device_classes(problem.tables, links=True)) > MAX_RELAXED_CLASSES:
        return None, None  # many link-aware classes (link-distinct devices): no scarce few to count
    budget = budget if budget is not None else Budget(None)
    known = None
    if lattice_size(device_classes(problem.tables, links=False)) > MAX_TAU_LATTICE:
        known = relaxed_tau(build_tables(problem.tables), device_classes(problem.tables, links=False),
                            check=budget.check)
        if not known[1]:
            return None, known
    try:
        return _solve(problem, budget, banded_ok=False, known_tau=known), known
    except (Unaffordable, MemoryError):
        return None, known
    except (TimeUp, KeyboardInterrupt):
        from partitioner.solvers.bounds import lower_bound

        budget.bound(lower_bound(problem, lp=False))  # the caller reports the best plan so far with it
        raise


def _reraise(found: Solution) -> Solution:
    """A seed step that stopped early stops the whole solve (Ctrl-C or the time limit)."""
    if found.status == "INTERRUPTED":
        raise KeyboardInterrupt
    if found.status == "TIME_LIMIT":
        raise TimeUp
    return found


def hint(problem: Problem, budget: Budget | None = None) -> Solution:
    """A good feasible plan for any instance (for CP-SAT's AddHint): `solve` where it applies;
    otherwise the better (by `objective_key`) of the exact optimum in the listed device order
    and, in free order, the tau*-attaining plan of the reachability DP. It is reported with
    optimal=False and as lower bound the best of `bounds.lower_bound` (fluid LP, memory floor)
    and the exact free-order tau* (the period itself, or the makespan bound built on it)."""
    if _lattice_applies(problem):  # (the subset search would spend the caller's whole budget)
        return _reraise(solve(problem, budget))
    from partitioner.solvers.bounds import lower_bound, makespan_bound

    exact, merged = _relaxed(problem, budget)
    if exact is not None and exact.optimal:
        return exact

    start = time.perf_counter()
    tau = None
    plans = []
    if problem.order == "free":
        tau, devices, cuts = free_tau_plan(problem)
        if tau is None and merged is not None:  # lattice too large: the merged-class reach's answer
            tau, devices, cuts = merged
        if devices:
            plans.append((devices, cuts))
            if budget is not None:
                budget.offer(problem, devices, cuts)
    listed = Budget(None if budget is None else budget.left(0.0) if budget.deadline else None)
    period = dataclasses.replace(problem, objective="throughput")
    if problem.objective == "makespan" and _lattice_applies(period):  # (period, T) optimum: a T(M) incumbent
        found = _reraise(solve(period, Budget(listed.left(0.0) if listed.deadline else None)))
        plans.append((found.devices, found.cuts))
        if budget is not None:
            budget.offer(problem, found.devices, found.cuts)
    try:
        fixed = solve(dataclasses.replace(problem, order="fixed"), listed)  # its bounds are not ours
    except InfeasibleError:
        if not plans and exact is None:
            raise
    else:
        if budget is not None:
            budget.offer(problem, fixed.devices, fixed.cuts)
        _reraise(fixed)
        plans.append((fixed.devices, fixed.cuts))
    lb = lower_bound(problem)
    if exact is not None:  # an incomplete relaxed makespan search: its plan and its real bound
        plans.append((exact.devices, exact.cuts))
        lb = max(lb, exact.lower_bound)
    best = min(plans, key=lambda pc: objective_key(problem, evaluate(problem, *pc)))
    key = objective_key(problem, evaluate(problem, *best))
    if tau is not None and np.isfinite(tau):
        if problem.objective in ("balanced", "throughput"):
            lb = max(lb, tau)  # tau_max, or sigma_max >= tau_max >= tau* (blocking throughput)
        elif problem.objective == "makespan":
            lb = max(lb, makespan_bound(problem, tau))
    proven = lex_compare((lb,), key[:1]) == 0 and len(key) == 1
    if budget is not None:
        budget.bound(min(lb, key[0]))
        budget.offer(problem, *best)
    return Solution(
        devices=best[0], cuts=best[1], solver="dp", optimal=proven, objective=key, lower_bound=min(lb, key[0]),
        status="OPTIMAL" if proven else "FEASIBLE", wall_time_s=time.perf_counter() - start,
    )
