"""`dp`: the exact dynamic-programming solver (issue 4; algorithms.md §3).

Steps: the period tau* (§3a fixed order, §3b free order over device classes with bisection),
the lexicographic sigma step (§3c), the exact min T(M) by branch and bound (§3d), each solved
over the same plan space (`space.Space`). Every objective x regime x order is exact; free order
is NP-hard with all devices distinct, so `applies` bounds the lattice sizes (thresholds below)
and `auto` falls back to CP-SAT beyond them.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from partitioner.errors import InfeasibleError, InputError
from partitioner.problem import Problem, Solution, evaluate, explain_infeasible, objective_key
from partitioner.solvers.dp.fixed import Plan
from partitioner.solvers.dp.lattice import Lattice, lattice_size
from partitioner.solvers.dp.makespan import min_makespan
from partitioner.solvers.dp.sigma import balanced, throughput
from partitioner.solvers.dp.space import Space
from partitioner.solvers.dp.tables import build_tables, device_classes

__all__ = ["solve", "applies", "hint", "free_tau", "work", "MAX_TAU_LATTICE", "MAX_STAGE_WORK", "MAX_MATRIX"]

MAX_TAU_LATTICE = 200_000  # prod(m_t + 1) over (cost, capacity) classes: tau step (§3b)
MAX_STAGE_WORK = 100_000_000  # prod(m_t + 1) * T^2 * (L+1) * w over link-aware classes: sigma/sum steps
MAX_MATRIX = 60_000_000  # (L+1)^2 x distinct cost rows: the interval-cost matrices in memory
MAKESPAN_CALLS = 25  # sum-step calls of the makespan branch and bound (measured 10-45)


def _longest_stage(problem: Problem) -> int:
    """w: the most layers one stage can hold on the roomiest device (the DP band width)."""
    t = problem.tables
    Pm = np.concatenate(([0.0], np.cumsum(t.memory_gb)))
    room = float(np.max(t.capacity_gb)) * (1 + 1e-9) + 1e-12
    ends = np.searchsorted(Pm, Pm + room, side="right") - 1
    return max(1, int((ends - np.arange(t.L + 1)).max()))


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
        out["stage_work"] = lattice_size(fine) * len(fine) ** 2 * J * _longest_stage(problem)
    return out


def applies(problem: Problem) -> bool:
    """True when `solve` is exact and affordable: always in fixed order (polynomial) unless the
    cost matrices would not fit MAX_MATRIX; in free order when the (cost, capacity) lattice is
    <= MAX_TAU_LATTICE and the link-aware sigma/sum work is <= MAX_STAGE_WORK (divided by
    MAKESPAN_CALLS for the makespan objective, which calls the sum step repeatedly)."""
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


def _space(problem: Problem) -> Space:
    T = build_tables(problem.tables)
    if problem.order == "fixed":
        return Space(T)
    fine = Lattice.build(device_classes(problem.tables, links=True))
    coarse = Lattice.build(device_classes(problem.tables, links=False))
    return Space(T, fine=fine, coarse=coarse)


def solve(problem: Problem) -> Solution:
    """The exact optimum of `problem` (issue 4 objectives); raises InputError when the instance is
    outside `applies` and InfeasibleError when no plan fits the memory limits."""
    if not applies(problem):
        raise InputError(f"dp does not apply to this instance ({work(problem)}); use --solver cpsat or auto")
    start = time.perf_counter()
    space = _space(problem)

    def T_of(plan: Plan) -> tuple[float, float]:
        m = evaluate(problem, plan[1], plan[2])
        if problem.regime == "async":
            return m.T_async, m.tau_max
        return m.T_block, m.sigma_max

    if problem.objective == "balanced":
        plan = balanced(space)
    elif problem.objective == "throughput":
        plan = throughput(space, problem.regime)
    else:
        plan = min_makespan(space, problem.regime, int(problem.M), T_of)[0]
    if not plan[1]:
        raise InfeasibleError(explain_infeasible(problem.tables))
    metrics = evaluate(problem, plan[1], plan[2])
    key = objective_key(problem, metrics)
    stats = (("probes", float(space.calls)),)
    if space.fine is not None:
        stats += (("classes", float(space.fine.T)), ("lattice", float(space.fine.coords.shape[0])))
    return Solution(
        devices=plan[1], cuts=plan[2], solver="dp", optimal=True, objective=key,
        lower_bound=key[0], status="OPTIMAL", wall_time_s=time.perf_counter() - start, stats=stats,
    )


def free_tau(problem: Problem) -> float | None:
    """The exact minimum tau_max in free order by the (cost, capacity) lattice (§3b), or None when
    that lattice exceeds MAX_TAU_LATTICE. inf when no plan fits."""
    classes = device_classes(problem.tables, links=False)
    if lattice_size(classes) > MAX_TAU_LATTICE:
        return None
    return Space(build_tables(problem.tables), coarse=Lattice.build(classes)).tau()


def hint(problem: Problem) -> Solution:
    """A good feasible plan for any instance (for CP-SAT's AddHint): `solve` where it applies;
    otherwise the exact optimum restricted to the listed device order, reported with
    optimal=False and, as lower bound, the exact free-order tau* when the period comes first and
    the tau lattice is small, else `bounds.lower_bound` without the LP."""
    if applies(problem):
        return solve(problem)
    start = time.perf_counter()
    fixed = solve(dataclasses.replace(problem, order="fixed"))
    key = objective_key(problem, evaluate(problem, fixed.devices, fixed.cuts))
    from partitioner.solvers.bounds import lower_bound

    lb = lower_bound(problem, lp=False)
    if problem.objective == "balanced" or (problem.objective == "throughput" and problem.regime == "async"):
        tau = free_tau(problem) if problem.order == "free" else None
        lb = max(lb, tau) if tau is not None else lb
    return dataclasses.replace(
        fixed, optimal=False, objective=key, lower_bound=min(lb, key[0]), status="FEASIBLE",
        wall_time_s=time.perf_counter() - start,
    )
