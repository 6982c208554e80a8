"""`cpsat`: the planning problem as an OR-Tools CP-SAT model (issue 4, algorithms.md §5).

`solve(problem)` builds the model of `model.py` once on integer ticks (`ticks.py`) and
minimises the components of `problem.objective_key` lexicographically, one phase each:

    balanced:   tau_max, then sigma_max, then T(M)
    throughput: P (tau_max async, sigma_max blocking), then T(M)
    makespan:   T(M)                      with T from Thm 2 (async) / Thm 3 (blocking)

Each phase after the first fixes the previous optimum as `goal <= value + slack` (slack =
the rounding error of the ticks, far below the 1e-9 tie tolerance) and is hinted with the
previous plan. The first phase is hinted, and cut off, with the DP's plan (its optimum where
it applies, else its exact optimum in the listed device order) or with the caller's `hint`. The returned objective is
recomputed exactly from the plan by `problem.evaluate`, never read from the scaled model.
"""

from __future__ import annotations

import time

from ortools.sat.python import cp_model

from partitioner.errors import InfeasibleError, PartitionerError, SolverError
from partitioner.problem import Problem, Solution, check_structure, evaluate, explain_infeasible, objective_key
from partitioner.solvers.cpsat import model as cpmodel
from partitioner.solvers.cpsat.search import (
    DEFAULT_TIME_LIMIT_S,
    Progress,
    ProgressFn,
    make_solver,
    phase_limit,
    status_name,
)
from partitioner.solvers.cpsat.ticks import Ticks, build_ticks, plan_ticks

__all__ = ["solve", "DEFAULT_TIME_LIMIT_S"]

Plan = tuple[tuple[int, ...], tuple[int, ...]]
Hint = Solution | Plan | None


def solve(problem: Problem, *, progress: ProgressFn | None = None, hint: Hint = None) -> Solution:
    """Lexicographic optimum of `problem` by CP-SAT within `problem.time_limit_s` (10 s default).

    progress(incumbent_s, bound_s, elapsed_s) is called on each improving solution of each
    phase (values of that phase's component). Raises InfeasibleError when no plan fits and
    SolverError when CP-SAT fails or finds no plan in time.
    """
    clock = time.perf_counter()
    ticks = build_ticks(problem)
    model, v = cpmodel.build(problem, ticks)
    plan = _seed_plan(problem, hint)
    budget = DEFAULT_TIME_LIMIT_S if problem.time_limit_s is None else float(problem.time_limit_s)
    names = cpmodel.phases(problem)
    optimal, lower, statuses = True, 0.0, []
    branches = conflicts = 0.0
    for k, name in enumerate(names):
        goal = v.goals[name]
        model.Minimize(goal)
        model.ClearHints()
        if plan is not None:
            for var, value in cpmodel.assignment(v, *plan):
                model.AddHint(var, value)
            for goal_name, value in plan_ticks(ticks, problem.regime, *plan).items():
                model.AddHint(v.goals[goal_name], value)
            if k == 0:
                model.Add(goal <= plan_ticks(ticks, problem.regime, *plan)[name])
        solver = make_solver(phase_limit(budget, time.perf_counter() - clock, k, len(names)))
        status = solver.Solve(model, Progress(progress, ticks, ticks.slack(name), clock))
        statuses.append(status_name(status))
        branches += solver.NumBranches()
        conflicts += solver.NumConflicts()
        plan, value = _outcome(problem, model, solver, status, v, plan, ticks, name, k)
        if k == 0:
            lower = ticks.seconds(max(solver.BestObjectiveBound() - ticks.slack(name), 0.0))
        optimal = optimal and status == cp_model.OPTIMAL
        if status == cp_model.UNKNOWN:
            break  # out of time: keep the previous phase's plan
        if k < len(names) - 1:
            model.Add(goal <= value + ticks.slack(name))
    if plan is None:  # unreachable: _outcome raises when no plan is known
        raise SolverError("cpsat: no plan")
    return _solution(problem, plan, optimal, lower, statuses, clock, branches, conflicts, ticks.scale)


def _seed_plan(problem: Problem, hint: Hint) -> Plan | None:
    """A feasible plan to hint with: the caller's, else the DP's; canonical for the symmetry break."""
    if hint is None:
        plan = _dp_plan(problem)
    elif isinstance(hint, Solution):
        plan = (tuple(hint.devices), tuple(hint.cuts))
    else:
        plan = (tuple(hint[0]), tuple(hint[1]))
    if plan is None:
        return None
    check_structure(problem, *plan)
    if not evaluate(problem, *plan).fits:
        return None
    return cpmodel.canonical(problem, plan[0]), plan[1]


def _dp_plan(problem: Problem) -> Plan | None:
    """The DP's plan: its optimum where it applies, else its exact fixed-order optimum (`dp.hint`)."""
    try:
        from partitioner.solvers import dp  # type: ignore[attr-defined]

        found = dp.hint(problem)
    except (ImportError, AttributeError, PartitionerError):
        return None
    if not getattr(found, "feasible", True):
        return None
    return tuple(found.devices), tuple(found.cuts)


def _outcome(
    problem: Problem,
    model: cp_model.CpModel,
    solver: cp_model.CpSolver,
    status: int,
    v: cpmodel.Vars,
    plan: Plan | None,
    ticks: Ticks,
    name: str,
    k: int,
) -> tuple[Plan | None, int]:
    """Map a phase's status to (plan, objective ticks) or the typed error (style rule 10)."""
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return _extract(solver, v), int(round(solver.ObjectiveValue()))
    if status == cp_model.INFEASIBLE and k == 0 and plan is None:
        raise InfeasibleError(explain_infeasible(problem.tables))
    if status == cp_model.MODEL_INVALID:
        raise SolverError(f"cpsat: CP-SAT rejected the model (MODEL_INVALID): {model.Validate()}")
    if status == cp_model.UNKNOWN and plan is not None:
        return plan, plan_ticks(ticks, problem.regime, *plan)[name]
    if status == cp_model.UNKNOWN:
        limit = solver.parameters.max_time_in_seconds
        raise SolverError(
            f"cpsat: no plan found within the time limit ({limit:.3g} s for the {name} phase, "
            f"G={problem.G}, L={problem.L}); raise --time-limit or use --solver dp"
        )
    raise SolverError(f"cpsat: phase {name!r} ended {status_name(status)} although a plan is known")


# [START extract]
def _extract(solver: cp_model.CpSolver, v: cpmodel.Vars) -> Plan:
    """(devices, cuts) from the w[l][g] values of the solver's best solution."""
    owner = [next(g for g, x in enumerate(row) if solver.BooleanValue(x)) for row in v.w]
    devices = [owner[0]]
    cuts = [0]
    for l in range(1, len(owner)):
        if owner[l] != owner[l - 1]:
            devices.append(owner[l])
            cuts.append(l)
    cuts.append(len(owner))
    return tuple(devices), tuple(cuts)


def _solution(
    problem: Problem,
    plan: Plan,
    optimal: bool,
    lower: float,
    statuses: list[str],
    clock: float,
    branches: float,
    conflicts: float,
    scale: float,
) -> Solution:
    """The Solution, with the objective recomputed exactly by `problem.evaluate`."""
    metrics = evaluate(problem, *plan)
    if not metrics.fits:
        raise SolverError(f"cpsat: extracted plan {plan} breaks a memory limit (internal error)")
    key = objective_key(problem, metrics)
    wall = time.perf_counter() - clock
    return Solution(
        devices=plan[0],
        cuts=plan[1],
        solver="cpsat",
        optimal=optimal,
        objective=key,
        lower_bound=min(lower, key[0]),
        status="OPTIMAL" if optimal else "FEASIBLE",
        wall_time_s=wall,
        stats=(
            ("wall_time", wall),
            ("branches", branches),
            ("conflicts", conflicts),
            ("phases", float(len(statuses))),
            ("ticks_per_s", scale),
        ),
    )

