"""One budget and Ctrl-C for the whole `--engine` order-restricted search.

`partitioner.solvers.engine_order` solves many sub-problems (one per device sequence the
engine can launch). `problem.time_limit_s` bounds all of them together, as one `Budget`
(partitioner.solvers.budget, the one budget type): each sub-solve gets what is left of it
(`solve`), and once it is spent (or on Ctrl-C, also when a sub-solver caught the interrupt
itself and returned its best plan with status INTERRUPTED) the budget's `stopped` is set and
no further sub-problem is started. The search then returns the best launchable plan found so
far (`finish`), not proven, with the lower bound of the unrestricted problem's solve (the
restricted optimum is never below the unrestricted one, so that bound holds for every
launchable plan).
"""

from __future__ import annotations

import dataclasses

from partitioner.errors import SolverError
from partitioner.problem import Problem, Solution
from partitioner.solvers.budget import Budget

__all__ = ["Stopped", "solve", "finish", "MIN_SUB_S"]

MIN_SUB_S = 0.05  # a sub-solve started just before the deadline still gets this long


class Stopped(Exception):
    """The search's budget is spent or Ctrl-C was pressed: start no further sub-problem."""


def _left(budget: Budget) -> float | None:
    return None if budget.deadline is None else budget.left(0.0)


def solve(budget: Budget, problem: Problem, solver: str) -> Solution:
    """`partitioner.solvers.solve` with what is left of `budget`; Stopped when it is spent."""
    from partitioner import solvers

    left = _left(budget)
    if budget.stopped or (left is not None and left <= 0):
        budget.stopped = budget.stopped or "TIME_LIMIT"
        raise Stopped
    sub = problem if left is None else dataclasses.replace(problem, time_limit_s=max(MIN_SUB_S, left))
    try:
        sol = solvers.solve(sub, solver)
    except KeyboardInterrupt:
        budget.stopped = "INTERRUPTED"
        raise Stopped from None
    except SolverError:  # no plan within its share of the budget
        if (_left(budget) or 1.0) <= 0:
            budget.stopped = "TIME_LIMIT"
            raise Stopped from None
        raise
    if sol.status == "INTERRUPTED":  # the sub-solver caught Ctrl-C: keep its plan, then stop
        budget.stopped = "INTERRUPTED"
    return sol


def finish(budget: Budget, best: Solution | None, base: Solution, engine: str) -> Solution | None:
    """`best` as the search's answer when it stopped early (None: it did not stop)."""
    if not budget.stopped:
        return None
    why = "time limit" if budget.stopped == "TIME_LIMIT" else "Ctrl-C"
    if best is None:
        raise SolverError(f"--engine {engine}: stopped ({why}) before a plan {engine} can launch was found; "
                          "raise --time-limit")
    lower = min(base.lower_bound, best.objective[0])
    return dataclasses.replace(best, solver=best.solver if best.solver.endswith(f"+{engine}-order") else
                               f"{best.solver}+{engine}-order", optimal=False, lower_bound=lower, status=budget.stopped)
