"""Exhaustive enumeration: the test oracle for `dp` and `cpsat` on tiny instances.

Enumerates every ordered choice of distinct devices (every subsequence of the listed
order when the order is fixed) and every composition of the L layers into S non-empty
contiguous stages, scores each with `partitioner.problem.evaluate` and keeps the
lexicographically best feasible one (ties: the first found, which is deterministic).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterator

from partitioner.errors import InfeasibleError, InputError
from partitioner.problem import (
    Problem,
    Solution,
    capped_note,
    evaluate,
    explain_infeasible,
    lex_compare,
    objective_key,
)

__all__ = ["solve", "count", "MAX_CANDIDATES"]

MAX_CANDIDATES = 2_000_000


def _device_sequences(problem: Problem, S: int) -> Iterator[tuple[int, ...]]:
    if problem.order == "fixed":
        return itertools.combinations(range(problem.G), S)
    return itertools.permutations(range(problem.G), S)


def count(problem: Problem) -> int:
    """Number of (device sequence, cut) candidates the enumeration visits."""
    G, L = problem.G, problem.L
    total = 0
    for S in range(1, min(G, L) + 1):
        seqs = math.comb(G, S) if problem.order == "fixed" else math.perm(G, S)
        total += seqs * math.comb(L - 1, S - 1)
    return total


def solve(problem: Problem) -> Solution:
    """Exact optimum by enumeration; refuses instances with more than MAX_CANDIDATES plans."""
    n = count(problem)
    if n > MAX_CANDIDATES:
        raise InputError(
            f"brute force would enumerate {n} plans (limit {MAX_CANDIDATES}); use --solver dp or cpsat"
        )
    start = time.perf_counter()
    best: tuple[tuple[float, ...], tuple[int, ...], tuple[int, ...]] | None = None
    L = problem.L
    for S in range(1, min(problem.G, L) + 1):
        for inner in itertools.combinations(range(1, L), S - 1):
            cuts = (0, *inner, L)
            for devices in _device_sequences(problem, S):
                metrics = evaluate(problem, devices, cuts)
                if not metrics.fits:
                    continue
                key = objective_key(problem, metrics)
                if best is None or lex_compare(key, best[0]) < 0:
                    best = (key, devices, cuts)
    if best is None:
        raise InfeasibleError(explain_infeasible(problem.tables) + capped_note(problem))
    key, devices, cuts = best
    return Solution(
        devices=devices,
        cuts=cuts,
        solver="brute",
        optimal=True,
        objective=key,
        lower_bound=key[0],
        wall_time_s=time.perf_counter() - start,
    )
