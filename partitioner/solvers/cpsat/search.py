"""Running CP-SAT: parameters, the time budget over lexicographic phases, progress reports.

Determinism: every phase uses `num_workers=WORKERS` (2, the target machine) with
`interleave_search=True` and a fixed `random_seed`, so the workers' subsolvers are run in
deterministic batches: a solve that ends by proof (OPTIMAL/INFEASIBLE) returns the same plan
on every run. A solve cut off by its wall-clock limit depends on how far it got, so
FEASIBLE results may differ between runs (and between machines).

Correctness: CP-SAT 9.15's presolve returned a wrong "OPTIMAL" (a plan 0.4% worse than the
brute-force optimum, G=3, L=6) on this model, and on another instance "INFEASIBLE" once a
cut-off was posted on the objective expression; `keep_all_feasible_solutions_in_presolve`
fixed some cases but not all (G=3, L=6, makespan: OPTIMAL 8.499 s vs the true 8.326 s, found
at once with presolve off). Presolve is therefore switched off; tests/test_cpsat_props.py
holds the regressions. Ticks are kept small (ticks.py) for the same reason.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ortools.sat.python import cp_model

from partitioner.solvers.cpsat.ticks import Ticks

__all__ = [
    "DEFAULT_TIME_LIMIT_S",
    "WORKERS",
    "SEED",
    "Progress",
    "ProgressFn",
    "phase_limit",
    "make_solver",
    "status_name",
]

DEFAULT_TIME_LIMIT_S = 10.0  # total over all phases when Problem.time_limit_s is None
WORKERS = 2
SEED = 0
FIRST_PHASE_SHARE = 0.6  # the bottleneck phase is the hard one; later phases get the rest
MIN_PHASE_S = 0.05
PRESOLVE = False  # CP-SAT 9.15 presolve returned wrong optima on this model (module doc)
PROBING_LEVEL = 1  # level 2 (default) spent 5 s of wall time probing at L=40, G=8 before searching

ProgressFn = Callable[[float, float, float], None]


def phase_limit(budget_s: float, elapsed_s: float, k: int, n: int) -> float:
    """Wall-clock seconds for phase k of n: a share of what is left (unused time rolls over)."""
    left = max(budget_s - elapsed_s, 0.0)
    share = FIRST_PHASE_SHARE if (k == 0 and n > 1) else 1.0 / (n - k)
    return max(left * share, MIN_PHASE_S)


def make_solver(limit_s: float) -> cp_model.CpSolver:
    """A CP-SAT solver with a time limit, 2 workers, deterministic interleaved search."""
    solver = cp_model.CpSolver()
    p = solver.parameters
    p.max_time_in_seconds = float(limit_s)
    p.num_workers = WORKERS
    p.interleave_search = True
    p.random_seed = SEED
    p.cp_model_probing_level = PROBING_LEVEL
    p.cp_model_presolve = PRESOLVE  # see the module doc: presolve bug
    return solver


def status_name(status: int) -> str:
    """CP-SAT's status as text (OPTIMAL, FEASIBLE, INFEASIBLE, MODEL_INVALID, UNKNOWN)."""
    return str(cp_model.CpSolver().StatusName(status))


class Progress(cp_model.CpSolverSolutionCallback):
    """Calls `fn(incumbent_s, bound_s, elapsed_s)` on every improving solution of a phase."""

    def __init__(self, fn: ProgressFn | None, ticks: Ticks, slack: int, clock: float) -> None:
        super().__init__()
        self._fn = fn
        self._ticks = ticks
        self._slack = slack
        self._clock = clock
        self.solutions = 0

    def on_solution_callback(self) -> None:
        self.solutions += 1
        if self._fn is None:
            return
        incumbent = self._ticks.seconds(self.ObjectiveValue())
        bound = self._ticks.seconds(max(self.BestObjectiveBound() - self._slack, 0.0))
        self._fn(incumbent, min(bound, incumbent), time.perf_counter() - self._clock)
