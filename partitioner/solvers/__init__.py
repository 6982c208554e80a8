"""Solvers: each module exposes `solve(problem) -> Solution` (house rule 2).

Exact: `dp` (dynamic programming), `cpsat` (OR-Tools CP-SAT), `brute` (exhaustive, tests).
Engine baselines: `even` (vLLM), `memory` (llama.cpp), `params` (DeepSpeed), `speed` (Metis-like).
`auto` runs the exact DP wherever it applies and CP-SAT otherwise.

Modules are imported lazily so that `partition --help` never loads ortools.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from partitioner.errors import InputError, SolverError
from partitioner.problem import Problem, Solution
from partitioner.registry import AUTO, BASELINES, EXACT, SOLVER_CHOICES, SOLVERS

__all__ = ["SOLVERS", "EXACT", "BASELINES", "solve", "get"]

MAX_CPSAT_LINKS = 2_000_000  # L * G^2 link literals: beyond it auto returns the DP's seed and bound
BUILD_S_PER_LINK = 2e-5  # measured: building the CP-SAT model costs ~10-35 us per link literal


def get(name: str) -> Callable[..., Solution]:
    """The `solve` function of solver `name` ("auto" included)."""
    if name == AUTO:
        return _auto
    if name not in SOLVERS:
        valid = ", ".join(SOLVER_CHOICES)
        raise InputError(f"unknown solver {name!r}; valid solvers: {valid}")
    module = importlib.import_module(SOLVERS[name])
    return module.solve


def solve(problem: Problem, solver: str = "auto", **kwargs: Any) -> Solution:
    """Run solver `name` on `problem`."""
    return get(solver)(problem, **kwargs)


def _auto(problem: Problem, progress: Any = None, **kwargs: Any) -> Solution:
    """The exact DP wherever it applies, CP-SAT (seeded by what the DP found: its tau* plan and
    bound) otherwise, all within one wall-clock budget (`problem.time_limit_s`; when unset, CP-SAT
    is limited in deterministic work instead, cpsat.search); past it, or on Ctrl-C, the best
    plan so far with its bound."""
    from partitioner.solvers.budget import DEFAULT_TIME_LIMIT_S, Budget, TimeUp

    dp = importlib.import_module(SOLVERS["dp"])
    if dp.capped(problem):  # a stage cap: the DP over device subsets, else CP-SAT with the cap as a
        from partitioner.solvers import capped  # constraint (a DP seed over the cap is not used)

        found = capped.solve(problem, lambda sub: solve(sub, "auto"))
        if found is not None:
            return found
        return importlib.import_module(SOLVERS["cpsat"]).solve(problem, progress=progress, **kwargs)
    if dp.applies(problem):  # ortools is not even imported then (0.5 s)
        return dp.solve(problem, Budget(problem.time_limit_s, progress))
    # No wall-clock limit from the user: none here either, so that the answer does not depend on the
    # machine's load (the DP's steps are bounded by their own state caps, CP-SAT's in work).
    limit = DEFAULT_TIME_LIMIT_S if problem.time_limit_s is None else problem.time_limit_s
    budget = Budget(problem.time_limit_s, progress)
    try:
        seed = dp.hint(problem, budget)
    except (TimeUp, KeyboardInterrupt) as exc:
        from partitioner.solvers.bounds import lower_bound

        budget.bound(lower_bound(problem, lp=False))  # the cheap bound (no LP): never a bound of 0
        found = budget.best_solution("TIME_LIMIT" if isinstance(exc, TimeUp) else "INTERRUPTED")
        if found is None and isinstance(exc, TimeUp):
            raise SolverError(f"auto: no plan found within the time limit ({limit:g} s)") from None
        if found is None:
            raise
        return found
    if seed.optimal:  # proven on every key (dp.hint claims it only then)
        return seed
    links = problem.L * problem.G**2
    if links > MAX_CPSAT_LINKS or links * BUILD_S_PER_LINK > 0.5 * (budget.left(0.0) if budget.deadline else limit):
        return budget.best_solution("FEASIBLE") or seed  # no time (or memory) to build the CP-SAT model
    budget.solver = "cpsat"
    cpsat = importlib.import_module(SOLVERS["cpsat"])  # ortools only now: 0.5-0.8 s of imports
    return cpsat.solve(problem, progress=progress, hint=seed, budget=budget, **kwargs)
