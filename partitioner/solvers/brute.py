"""Exhaustive enumeration: the test oracle for `dp` and `cpsat` on tiny instances.

Enumerates every ordered choice of distinct devices (every subsequence of the listed
order when the order is fixed) and every composition of the L layers into S non-empty
contiguous stages, scores each with `partitioner.problem.evaluate` and keeps the
lexicographically best feasible one (ties: the first found, which is deterministic).

The enumeration runs in the one budget (`partitioner.solvers.budget.Budget`: the problem's
`time_limit_s`, or the caller's budget with its wall-clock deadline and work count): it checks
the budget once every `CHECK_EVERY` candidates, so the checks a solve makes are counted the same on
any machine. Past the budget, or on Ctrl-C, it returns the best plan so far with optimal=False,
status TIME_LIMIT or INTERRUPTED and the cheap lower bound of `bounds.lower_bound` (no LP).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from partitioner.errors import InfeasibleError, InputError, SolverError
from partitioner.problem import (
    Problem,
    Solution,
    capped_note,
    evaluate,
    explain_infeasible,
    lex_compare,
    objective_key,
)

if TYPE_CHECKING:
    from partitioner.solvers.budget import Budget

__all__ = ["solve", "count", "MAX_CANDIDATES", "CHECK_EVERY"]

MAX_CANDIDATES = 2_000_000
#: candidates between two budget checks: ~5-20 ms of `evaluate` calls, so Ctrl-C and a deadline
#: are noticed well within a second, while 2,000,000 candidates make at most 7,813 checks
CHECK_EVERY = 256

Best = tuple[tuple[float, ...], tuple[int, ...], tuple[int, ...]]


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


def solve(problem: Problem, budget: Budget | None = None, **_: object) -> Solution:
    """Exact optimum by enumeration; refuses instances with more than MAX_CANDIDATES plans.
    Past the budget (`budget`, else `problem.time_limit_s`) or on Ctrl-C: the best plan so far,
    not proven (SolverError / KeyboardInterrupt when none fits yet)."""
    from partitioner.interrupts import no_new_solve
    from partitioner.solvers.budget import Budget, TimeUp

    n = count(problem)
    if n > MAX_CANDIDATES:
        raise InputError(
            f"brute force would enumerate {n} plans (limit {MAX_CANDIDATES}); use --solver dp or cpsat"
        )
    no_new_solve()  # after Ctrl-C in this command, no new solve starts
    if budget is None:
        budget = Budget(problem.time_limit_s)
    start = time.perf_counter()
    found: list[Best] = []  # the best so far (a list, so an interrupted enumeration leaves it behind)
    try:
        _enumerate(problem, budget, found)
    except (TimeUp, KeyboardInterrupt) as exc:
        return _so_far(problem, found, "TIME_LIMIT" if isinstance(exc, TimeUp) else "INTERRUPTED", start)
    if not found:
        raise InfeasibleError(explain_infeasible(problem.tables) + capped_note(problem))
    key, devices, cuts = found[0]
    return Solution(
        devices=devices,
        cuts=cuts,
        solver="brute",
        optimal=True,
        objective=key,
        lower_bound=key[0],
        wall_time_s=time.perf_counter() - start,
    )


def _enumerate(problem: Problem, budget: Budget, found: list[Best]) -> None:
    """Every candidate in a fixed order; found[0] is the best feasible one so far."""
    L = problem.L
    seen = 0
    for S in range(1, min(problem.G, L) + 1):
        for inner in itertools.combinations(range(1, L), S - 1):
            cuts = (0, *inner, L)
            for devices in _device_sequences(problem, S):
                seen += 1
                if seen % CHECK_EVERY == 0:
                    budget.check()
                metrics = evaluate(problem, devices, cuts)
                if not metrics.fits:
                    continue
                key = objective_key(problem, metrics)
                if not found or lex_compare(key, found[0][0]) < 0:
                    found[:] = [(key, devices, cuts)]


def _so_far(problem: Problem, found: list[Best], status: str, start: float) -> Solution:
    """The best plan when the enumeration stopped early, with the cheap lower bound."""
    from partitioner.solvers.bounds import lower_bound

    if not found:
        if status == "INTERRUPTED":
            raise KeyboardInterrupt
        raise SolverError(f"brute: no plan found within the time limit ({problem.time_limit_s} s)")
    key, devices, cuts = found[0]
    lb = min(float(lower_bound(problem, lp=False)), key[0])
    proven = len(key) == 1 and lex_compare((lb,), key[:1]) == 0
    return Solution(
        devices=devices, cuts=cuts, solver="brute", optimal=proven, objective=key, lower_bound=lb,
        status="OPTIMAL" if proven else status, wall_time_s=time.perf_counter() - start,
    )
