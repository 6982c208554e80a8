"""A stage cap (`Problem.max_stages` = N) solved exactly by the DP over device subsets.

A plan of at most N stages uses at most N devices (one device per stage), so its devices lie in
some subset D of n = min(N, G) devices; conversely every plan of the problem restricted to D has
at most n stages. The capped optimum is therefore the best, over the C(G, n) subsets D, of the
uncapped optimum on D (in fixed order the restriction keeps the listed order, so every plan on
D is a plan of the whole problem). Each restricted problem goes to `partitioner.solvers` "auto"
(the exact DP where it applies); the best is re-scored on the whole problem. Proven optimal when
every subset was solved optimally; beyond MAX_SUBSETS subsets `solve` returns None and the caller
runs CP-SAT with its stage-count constraint (partitioner.solvers.cpsat.model).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable

from partitioner.errors import InfeasibleError
from partitioner.problem import (
    Problem,
    Solution,
    capped_note,
    evaluate,
    explain_infeasible,
    lex_compare,
    objective_key,
    select_rows,
)

__all__ = ["MAX_SUBSETS", "solve"]

MAX_SUBSETS = 64  # C(G, N) restricted solves at most; beyond it CP-SAT takes the cap as a constraint


def solve(problem: Problem, solve_auto: Callable[[Problem], Solution]) -> Solution | None:
    """The capped optimum (module doc), or None when there are more than MAX_SUBSETS subsets;
    `solve_auto` solves one uncapped subset (partitioner.solvers' auto, passed in so that this
    module does not import the package that imports it)."""
    cap = problem.max_stages
    assert cap is not None  # only called for a capped problem
    n = min(cap, problem.G)
    if math.comb(problem.G, n) > MAX_SUBSETS:
        return None
    best: tuple[tuple[float, ...], tuple[int, ...], tuple[int, ...]] | None = None
    proven, lower = True, math.inf
    for rows in itertools.combinations(range(problem.G), n):
        sub = dataclasses.replace(problem, tables=select_rows(problem.tables, list(rows)), max_stages=None)
        try:
            sol = solve_auto(sub)
        except InfeasibleError:
            continue
        proven = proven and sol.optimal
        lower = min(lower, sol.lower_bound)
        devices = tuple(rows[g] for g in sol.devices)
        key = objective_key(problem, evaluate(problem, devices, sol.cuts))
        if best is None or lex_compare(key, best[0]) < 0:
            best = (key, devices, tuple(sol.cuts))
    if best is None:
        raise InfeasibleError(explain_infeasible(problem.tables) + capped_note(problem))
    key, devices, cuts = best
    return Solution(devices=devices, cuts=cuts, solver="dp", optimal=proven, objective=key,
                    lower_bound=min(lower, key[0]), status="OPTIMAL" if proven else "FEASIBLE")
