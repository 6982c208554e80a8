"""One wall-clock budget and Ctrl-C for the whole `--engine` order-restricted search.

`partitioner.solvers.engine_order` solves many sub-problems (one per device sequence the
engine can launch). `problem.time_limit_s` bounds all of them together: each sub-solve gets
what is left of it, and once it is spent (or on Ctrl-C, also when a sub-solver caught the
interrupt itself and returned its best plan with status INTERRUPTED) no further sub-problem
is started. The search then returns the best launchable plan found so far, not proven, with
the lower bound of the unrestricted problem's solve (the restricted optimum is never below
the unrestricted one, so that bound holds for every launchable plan).
"""

from __future__ import annotations

import dataclasses
import time

from partitioner.errors import SolverError
from partitioner.problem import Problem, Solution
from partitioner.solvers.budget import Budget

__all__ = ["Stopped", "SearchClock", "MIN_SUB_S"]

MIN_SUB_S = 0.05  # a sub-solve started just before the deadline still gets this long


class Stopped(Exception):
    """The search's budget is spent or Ctrl-C was pressed: start no further sub-problem."""


class SearchClock:
    """The order-restricted search's stop state over the one budget type (partitioner.solvers.budget)."""

    def __init__(self, limit_s: float | None) -> None:
        self.budget = Budget(limit_s)
        self.stopped = ""  # "", "TIME_LIMIT" or "INTERRUPTED"

    @property
    def deadline(self) -> float | None:
        return self.budget.deadline

    def left(self) -> float | None:
        return None if self.budget.deadline is None else self.budget.deadline - time.perf_counter()

    def solve(self, problem: Problem, solver: str) -> Solution:
        """`partitioner.solvers.solve` with what is left of the budget; Stopped when it is spent."""
        from partitioner import solvers

        left = self.left()
        if self.stopped or (left is not None and left <= 0):
            self.stopped = self.stopped or "TIME_LIMIT"
            raise Stopped
        sub = problem if left is None else dataclasses.replace(problem, time_limit_s=max(MIN_SUB_S, left))
        try:
            sol = solvers.solve(sub, solver)
        except KeyboardInterrupt:
            self.stopped = "INTERRUPTED"
            raise Stopped from None
        except SolverError:  # no plan within its share of the budget
            if self.left() is not None and (self.left() or 0.0) <= 0:
                self.stopped = "TIME_LIMIT"
                raise Stopped from None
            raise
        if sol.status == "INTERRUPTED":  # the sub-solver caught Ctrl-C: keep its plan, then stop
            self.stopped = "INTERRUPTED"
        return sol

    def finish(self, best: Solution | None, base: Solution, engine: str) -> Solution | None:
        """`best` as the search's answer when it stopped early (None: it did not stop)."""
        if not self.stopped:
            return None
        why = "time limit" if self.stopped == "TIME_LIMIT" else "Ctrl-C"
        if best is None:
            raise SolverError(f"--engine {engine}: stopped ({why}) before a plan {engine} can launch was found; "
                              "raise --time-limit")
        lower = min(base.lower_bound, best.objective[0])
        return dataclasses.replace(best, solver=best.solver if best.solver.endswith(f"+{engine}-order") else
                                   f"{best.solver}+{engine}-order", optimal=False, lower_bound=lower, status=self.stopped)
