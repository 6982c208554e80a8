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

from partitioner.errors import InputError
from partitioner.problem import Problem, Solution

__all__ = ["SOLVERS", "EXACT", "BASELINES", "solve", "get"]

SOLVERS: dict[str, str] = {
    "dp": "partitioner.solvers.dp",
    "cpsat": "partitioner.solvers.cpsat",
    "brute": "partitioner.solvers.brute",
    "even": "partitioner.solvers.baselines.even",
    "memory": "partitioner.solvers.baselines.memory",
    "params": "partitioner.solvers.baselines.params",
    "speed": "partitioner.solvers.baselines.speed",
}
EXACT: tuple[str, ...] = ("dp", "cpsat", "brute")
BASELINES: tuple[str, ...] = ("even", "memory", "params", "speed")


def get(name: str) -> Callable[..., Solution]:
    """The `solve` function of solver `name` ("auto" included)."""
    if name == "auto":
        return _auto
    if name not in SOLVERS:
        valid = ", ".join(["auto", *SOLVERS])
        raise InputError(f"unknown solver {name!r}; valid solvers: {valid}")
    module = importlib.import_module(SOLVERS[name])
    return module.solve  # type: ignore[no-any-return]


def solve(problem: Problem, solver: str = "auto", **kwargs: Any) -> Solution:
    """Run solver `name` on `problem`."""
    return get(solver)(problem, **kwargs)


def _auto(problem: Problem, **kwargs: Any) -> Solution:
    """The exact DP wherever it applies, CP-SAT (hinted by whatever the DP found) otherwise."""
    dp = importlib.import_module(SOLVERS["dp"])
    if dp.applies(problem):
        return dp.solve(problem)  # type: ignore[no-any-return]
    cpsat = importlib.import_module(SOLVERS["cpsat"])
    return cpsat.solve(problem, **kwargs)  # type: ignore[no-any-return]
