"""`cpsat`: the planning problem as an OR-Tools CP-SAT model (docs/algorithms.md §5).

`solve(problem)` builds the model of `model.py` once on integer ticks (`ticks.py`) and
minimises the components of `problem.objective_key` lexicographically, one phase each:

    balanced:   tau_max, then sigma_max, then T(M)
    throughput: P (tau_max async, sigma_max blocking), then T(M)
    makespan:   T(M)                      with T from Thm 2 (async) / Thm 3 (blocking)

Each phase after the first fixes the previous optimum as `goal <= value + slack` (slack =
the rounding error of the ticks) and is hinted with the previous plan. The first phase is
hinted, and cut off, with the DP's seed (`dp.hint`: its optimum where it applies, else the
better of its listed-order optimum and its exact tau* plan) or with the caller's `hint`; when
the seed proves tau* the first phase is replaced by the constraint tau_max <= tau*. The
returned objective is recomputed exactly from the plan by `problem.evaluate`, never read from
the scaled model, and "optimal" is claimed only when each component is within the 1e-9 tie
tolerance of its phase's exact lower bound (so ticks can never decide a near tie). The
reported lower bound is the best of CP-SAT's, the seed's and `bounds.lower_bound`.
"""

from __future__ import annotations

import math
import time

from ortools.sat.python import cp_model

from partitioner.errors import InfeasibleError, PartitionerError, SolverError
from partitioner.problem import (
    Problem,
    Solution,
    capped_note,
    check_structure,
    evaluate,
    explain_infeasible,
    lex_compare,
    objective_key,
)
from partitioner.solvers.budget import Budget, TimeUp
from partitioner.solvers.cpsat import model as cpmodel
from partitioner.solvers.cpsat.search import (
    DEFAULT_TIME_LIMIT_S,
    DEFAULT_WORK,
    MIN_PHASE_S,
    Progress,
    ProgressFn,
    make_solver,
    phase_limit,
    run,
    status_name,
)
from partitioner.solvers.cpsat.ticks import Ticks, build_ticks, plan_ticks
from partitioner.solvers.dp.tables import cap

__all__ = ["solve", "DEFAULT_TIME_LIMIT_S"]

Plan = tuple[tuple[int, ...], tuple[int, ...]]
Hint = Solution | Plan | None


def solve(
    problem: Problem,
    *,
    progress: ProgressFn | None = None,
    hint: Hint = None,
    use_dp: bool = True,
    budget: Budget | None = None,
) -> Solution:
    """Lexicographic optimum of `problem` by CP-SAT within `problem.time_limit_s` (10 s default).

    progress(incumbent_s, bound_s, elapsed_s) is called on each improving solution of each
    phase (values of that phase's component). `hint` (a Solution or (devices, cuts)) seeds the
    search; without one the DP's `hint` does (unless `use_dp` is False). When the seed proves
    its first component (the DP's exact tau*), that phase is not re-solved. Every "optimal"
    claim is re-checked against the exact lower bound of its phase (`_certified`). Raises
    InfeasibleError when no plan fits and SolverError when CP-SAT finds no plan in time;
    Ctrl-C returns the best plan so far (status "INTERRUPTED").
    """
    from partitioner.interrupts import no_new_solve

    no_new_solve()  # after Ctrl-C in this command, no new solve starts
    if budget is None:
        budget = Budget(problem.time_limit_s, progress)  # None: limited in work (search.py doc)
    clock = time.perf_counter()
    try:
        ticks = build_ticks(problem)
        seed = _seed(problem, hint, use_dp, budget)
        if seed is not None and _no_time_to_build(problem, budget):  # the model would outlast the time left
            start = (tuple(seed.devices), tuple(seed.cuts))
            check_structure(problem, *start)
            if evaluate(problem, *start).fits:
                return _out_of_time(problem, start, seed, budget)
        model, v = cpmodel.build(problem, ticks)
    except (KeyboardInterrupt, TimeUp) as exc:
        # stopped in the DP seed or the model build: the best plan so far keeps a valid bound even
        # when the stop came before any phase recorded one (the cheap bound, no LP: quick after Ctrl-C)
        budget.bound(_quick_bound(problem))
        found = budget.best_solution("INTERRUPTED" if isinstance(exc, KeyboardInterrupt) else "TIME_LIMIT")
        if found is None:
            raise
        return found
    plan = None if seed is None else (tuple(seed.devices), tuple(seed.cuts))
    if plan is not None:
        check_structure(problem, *plan)
        plan = (cpmodel.canonical(problem, plan[0]), plan[1]) if evaluate(problem, *plan).fits else None
    names = cpmodel.phases(problem)
    if plan is not None and budget.deadline is not None and budget.left(0.0) < MIN_PHASE_S:
        return _out_of_time(problem, plan, seed, budget)  # building the model used the budget up
    lowers = [0.0] * len(names)
    proven = [False] * len(names)
    statuses: list[str] = []
    first = 0
    if plan is not None and seed is not None and _proves_first(problem, seed):
        lowers[0], proven[0], first = seed.lower_bound, True, 1
        statuses.append("OPTIMAL")
        budget.bound(seed.lower_bound)
        budget.offer(problem, *plan)
        model.add(v.goals[names[0]] <= _tick_cap(ticks, names[0], seed.lower_bound))
    branches = conflicts = work_used = 0.0
    interrupted = False
    for k in range(first, len(names)):
        name = names[k]
        goal = v.goals[name]
        model.minimize(goal)
        model.clear_hints()
        if plan is not None:
            for var, value in cpmodel.assignment(v, *plan):
                model.add_hint(var, value)
            for goal_name, value in plan_ticks(ticks, problem.regime, *plan).items():
                model.add_hint(v.goals[goal_name], value)
            if k == 0:
                model.add(goal <= plan_ticks(ticks, problem.regime, *plan)[name])
        # the phases share DEFAULT_WORK, the same on any machine; a user's limit only caps the wall clock (search.py doc)
        cap = None if budget.deadline is None else phase_limit(budget.left(0.0), 0.0, k, len(names))
        solver = make_solver(0.0, work=phase_limit(DEFAULT_WORK - work_used, 0.0, k, len(names)), cap_s=cap)
        status, interrupted = run(solver, model, Progress(progress, ticks, name, budget.start))
        statuses.append(status_name(status))
        work_used += float(solver.response_proto.deterministic_time)
        branches += solver.num_branches
        conflicts += solver.num_conflicts
        plan, value = _outcome(problem, model, solver, status, v, plan=plan, ticks=ticks, name=name, k=k)
        if plan is not None:
            budget.offer(problem, *plan)
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            lowers[k] = ticks.seconds(max(solver.best_objective_bound - ticks.slack(name), 0.0), name)
            proven[k] = status == cp_model.OPTIMAL
        if k == 0:
            budget.bound(lowers[0])
        if status == cp_model.UNKNOWN or interrupted:
            break  # out of time or stopped: keep the best plan so far
        if k < len(names) - 1:
            model.add(goal <= value + ticks.slack(name))
    if plan is None:  # unreachable: _outcome raises when no plan is known
        raise SolverError("cpsat: no plan")
    stats = {"branches": branches, "conflicts": conflicts, "phases": float(len(statuses)), "ticks_per_s": ticks.scale,
             "T_ticks_per_s": ticks.T_scale}
    lower = max(lowers[0], 0.0 if seed is None else seed.lower_bound, _static_bound(problem))
    return _solution(problem, plan, proven=proven, lowers=lowers, lower=lower, clock=clock, stats=stats,
                     status="INTERRUPTED" if interrupted else "")


def _no_time_to_build(problem: Problem, budget: Budget) -> bool:
    """Whether building the CP-SAT model (which checks no budget) would outlast the time left: about
    BUILD_S_PER_LINK per link literal (L x G^2), the estimate `solvers._auto` uses too. On 64 GPUs
    a build took 1.7 s of CPU per solve, and 13 solves of a 1 s limit took 22 s."""
    from partitioner.solvers import BUILD_S_PER_LINK

    if budget.deadline is None:
        return False
    return budget.left(0.0) < problem.L * problem.G**2 * BUILD_S_PER_LINK


def _out_of_time(problem: Problem, plan: Plan, seed: Solution | None, budget: Budget) -> Solution:
    """The seed plan, unimproved, when no time is left for a CP-SAT phase."""
    budget.offer(problem, *plan)
    budget.bound(max(0.0 if seed is None else seed.lower_bound, _static_bound(problem)))
    found = budget.best_solution("TIME_LIMIT")
    assert found is not None
    return found


def _seed(problem: Problem, hint: Hint, use_dp: bool, budget: Budget | None = None) -> Solution | None:
    """The caller's hint as a Solution-like seed, else the DP's `hint` (None without either)."""
    if isinstance(hint, Solution):
        return hint
    if hint is not None:
        devices, cuts = tuple(hint[0]), tuple(hint[1])
        check_structure(problem, devices, cuts)
        return Solution(devices=devices, cuts=cuts, solver="hint", optimal=False, objective=(), lower_bound=0.0)
    if not use_dp:
        return None
    found = _dp_plan(problem, budget)
    if found is None:
        return None
    if isinstance(found, Solution):
        return found
    return Solution(devices=found[0], cuts=found[1], solver="hint", optimal=False, objective=(), lower_bound=0.0)


def _proves_first(problem: Problem, seed: Solution) -> bool:
    """True when the seed's lower bound equals its first component and that component is the
    tau phase (the DP's exact tau*): then the first CP-SAT phase has nothing left to prove."""
    if not seed.objective or cpmodel.phases(problem)[0] != "tau":
        return False
    key = objective_key(problem, evaluate(problem, tuple(seed.devices), tuple(seed.cuts)))
    return lex_compare((seed.lower_bound,), key[:1]) == 0


def _tick_cap(ticks: Ticks, name: str, seconds: float) -> int:
    """Ticks that every plan whose exact value is within the tie tolerance of `seconds` stays under."""
    return math.ceil(cap(seconds) / ticks.seconds(1.0, name)) + ticks.slack(name)


def _static_bound(problem: Problem) -> float:
    """bounds.lower_bound (fluid LP, memory floor, makespan bound); 0 if it cannot be computed."""
    try:
        from partitioner.solvers.bounds import lower_bound

        return float(lower_bound(problem))
    except PartitionerError:
        return 0.0


def _quick_bound(problem: Problem) -> float:
    """bounds.lower_bound without its LP (memory floor, makespan bound); 0 if it cannot be computed."""
    try:
        from partitioner.solvers.bounds import lower_bound

        return float(lower_bound(problem, lp=False))
    except PartitionerError:
        return 0.0


def _dp_plan(problem: Problem, budget: Budget | None = None) -> Solution | Plan | None:
    """The DP's seed (`dp.hint`): its optimum where it applies, else the better of its exact
    listed-order optimum and its tau*-attaining free-order plan, with its lower bound."""
    try:
        from partitioner.solvers import dp

        found = dp.hint(problem, budget)
    except PartitionerError:
        return None
    return found if found.feasible else None


def _outcome(
    problem: Problem,
    model: cp_model.CpModel,
    solver: cp_model.CpSolver,
    status: int,
    v: cpmodel.Vars,
    *,
    plan: Plan | None,
    ticks: Ticks,
    name: str,
    k: int,
) -> tuple[Plan | None, int]:
    """Map a phase's status to (plan, objective ticks) or the typed error (style rule 10)."""
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return _extract(solver, v), round(solver.objective_value)
    if status == cp_model.INFEASIBLE and k == 0 and plan is None:
        raise InfeasibleError(explain_infeasible(problem.tables) + capped_note(problem))
    if status == cp_model.MODEL_INVALID:
        raise SolverError(f"cpsat: CP-SAT rejected the model (MODEL_INVALID): {model.validate()}")
    if status == cp_model.UNKNOWN and plan is not None:
        return plan, plan_ticks(ticks, problem.regime, *plan)[name]
    if status == cp_model.UNKNOWN:
        limit = solver.parameters.max_time_in_seconds
        within = (f"the time limit ({limit:.3g} s" if math.isfinite(limit) else
                  f"the work limit ({solver.parameters.max_deterministic_time:.3g} deterministic s")
        raise SolverError(
            f"cpsat: no plan found within {within} for the {name} phase, "
            f"G={problem.G}, L={problem.L}); raise --time-limit or use --solver dp"
        )
    raise SolverError(f"cpsat: phase {name!r} ended {status_name(status)} although a plan is known")


# [START extract]
def _extract(solver: cp_model.CpSolver, v: cpmodel.Vars) -> Plan:
    """(devices, cuts) from the w[l][g] values of the solver's best solution."""
    owner = [next(g for g, x in enumerate(row) if solver.boolean_value(x)) for row in v.w]
    devices = [owner[0]]
    cuts = [0]
    for ly in range(1, len(owner)):
        if owner[ly] != owner[ly - 1]:
            devices.append(owner[ly])
            cuts.append(ly)
    cuts.append(len(owner))
    return tuple(devices), tuple(cuts)


def _certified(problem: Problem, key: tuple[float, ...], proven: list[bool], lowers: list[float]) -> bool:
    """An "optimal" claim stands only if every phase ended OPTIMAL and the plan's exact value of
    every component is within the tie tolerance of that phase's exact lower bound (the CP-SAT
    bound minus the rounding slack): near ties that the ticks could not tell apart fail it."""
    return all(proven) and all(lex_compare((x,), (max(lb, 0.0),)) <= 0 for x, lb in zip(key, lowers, strict=True))


def _solution(
    problem: Problem,
    plan: Plan,
    *,
    proven: list[bool],
    lowers: list[float],
    lower: float,
    clock: float,
    stats: dict[str, float],
    status: str,
) -> Solution:
    """The Solution, with the objective recomputed exactly by `problem.evaluate`."""
    metrics = evaluate(problem, *plan)
    if not metrics.fits:
        raise SolverError(f"cpsat: extracted plan {plan} breaks a memory limit (internal error)")
    key = objective_key(problem, metrics)
    optimal = _certified(problem, key, proven, lowers)
    wall = time.perf_counter() - clock
    return Solution(
        devices=plan[0],
        cuts=plan[1],
        solver="cpsat",
        optimal=optimal,
        objective=key,
        lower_bound=key[0] if optimal else min(lower, key[0]),
        status="OPTIMAL" if optimal else (status or "FEASIBLE"),
        wall_time_s=wall,
        stats=(("wall_time", wall), *stats.items()),
    )
