"""Running CP-SAT: parameters, the time budget over lexicographic phases, progress, Ctrl-C.

Workers: a fixed count, DEFAULT_WORKERS, never the cores the machine leaves idle, so a run does
not depend on the load; `PARTITIONER_CPSAT_WORKERS` pins another count. With
`interleave_search=True` and a fixed `random_seed` the subsolvers run in deterministic batches
(CP-SAT's sat_parameters.proto: the interleaved search is deterministic whatever num_workers
is). Limits: a solve is limited in CP-SAT's deterministic time (`max_deterministic_time`, its
count of work, about a second each on one core: `make_solver(work=...)`), with or without a
wall-clock limit from the user, so the same inputs give the same plan on an idle and on a loaded
machine; the user's `--time-limit` is a wall-clock cap on top (`cap_s`). Only a solve that the
cap cuts off depends on how far it got, so only then may FEASIBLE results differ.

Presolve: CP-SAT 9.15's presolve returned a wrong OPTIMAL and a false INFEASIBLE on models
this planner builds (two reproducers: docs/cpsat-presolve.md); both come from its inclusion
detection. With `presolve_inclusion_work_limit = 0` both reproducers and every brute-force
property test answer correctly (benchmarks/solvers_presolve.py: 0 wrong of 480, against 7
with the default and 7 with keep_all_feasible_solutions_in_presolve), and the solves are
2-3x faster than with presolve off, so presolve is on with that limit. `extra_parameters` is
how the benchmark compares settings. Ctrl-C: the solve runs in a worker thread; KeyboardInterrupt in the main thread stops
the search, and the caller keeps the best plan found so far.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

from ortools.sat.python import cp_model

from partitioner.solvers.budget import DEFAULT_TIME_LIMIT_S
from partitioner.solvers.cpsat.ticks import Ticks

__all__ = [
    "DEFAULT_TIME_LIMIT_S",
    "workers",
    "DEFAULT_WORKERS",
    "DEFAULT_WORK",
    "SEED",
    "Progress",
    "ProgressFn",
    "phase_limit",
    "make_solver",
    "status_name",
    "run",
    "extra_parameters",
]

MAX_WORKERS = 8
DEFAULT_WORKERS = 2  # fixed (module doc): the interleaved search gives the same plan for any count
DEFAULT_WORK = 10.0  # deterministic-time units per solve (a user's wall-clock limit only caps it)
WORK_WALL_CAP_S = 10.0  # the wall-clock backstop of a work-limited solve (make_solver)
SEED = 0
FIRST_PHASE_SHARE = 0.6  # the bottleneck phase is the hard one; later phases get the rest
MIN_PHASE_S = 0.05
PRESOLVE = True  # with INCLUSION_WORK_LIMIT = 0 (module doc: the 9.15 presolve bugs)
INCLUSION_WORK_LIMIT = 0
extra_parameters: dict[str, Any] = {}  # set by benchmarks/solvers_presolve.py only
PROBING_LEVEL = 1  # level 2 (default) spent 5 s of wall time probing at L=40, G=8 before searching

ProgressFn = Callable[[float, float, float], None]


def usable_cpus() -> int:
    """Cores this process may run on: its affinity mask, capped by a cgroup v2 CPU quota."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    try:
        with open("/sys/fs/cgroup/cpu.max") as f:
            quota, period = f.read().split()[:2]
        if quota != "max":
            n = min(n, max(1, int(float(quota) // float(period))))
    except (OSError, ValueError):
        pass
    return max(1, n)


def workers() -> int:
    """CP-SAT threads for one solve (module doc): PARTITIONER_CPSAT_WORKERS if set, else the fixed
    DEFAULT_WORKERS; at most MAX_WORKERS."""
    pinned = os.environ.get("PARTITIONER_CPSAT_WORKERS", "").strip()
    if pinned.isdigit() and int(pinned) > 0:
        return min(int(pinned), MAX_WORKERS)
    return DEFAULT_WORKERS


def phase_limit(budget_s: float, elapsed_s: float, k: int, n: int) -> float:
    """Wall-clock seconds for phase k of n: a share of what is left (unused time rolls over)."""
    left = max(budget_s - elapsed_s, 0.0)
    share = FIRST_PHASE_SHARE if (k == 0 and n > 1) else 1.0 / (n - k)
    return max(left * share, MIN_PHASE_S)


def make_solver(limit_s: float, work: float | None = None, cap_s: float | None = None) -> cp_model.CpSolver:
    """A CP-SAT solver with a wall-clock limit, `workers()` workers, deterministic interleaved
    search; with `work` the limit is that much deterministic time instead (module doc), capped
    by `cap_s` wall-clock seconds (the user's limit) and WORK_WALL_CAP_S."""
    solver = cp_model.CpSolver()
    p = solver.parameters
    if work is None:
        p.max_time_in_seconds = float(limit_s)
    else:
        p.max_deterministic_time = max(float(work), 1e-3)
        # a wall-clock backstop: on some models (near ties at large M) CP-SAT's deterministic time
        # hardly advances and a work-limited solve ran for minutes; past WORK_WALL_CAP_S the answer
        # is the best so far, as under a user's limit (so only such rare solves depend on load)
        p.max_time_in_seconds = WORK_WALL_CAP_S if cap_s is None else min(WORK_WALL_CAP_S, max(float(cap_s), 1e-3))
    p.num_workers = workers()
    p.interleave_search = True
    p.random_seed = SEED
    p.cp_model_probing_level = PROBING_LEVEL
    p.cp_model_presolve = PRESOLVE  # see the module doc: presolve bugs
    p.presolve_inclusion_work_limit = INCLUSION_WORK_LIMIT
    p.catch_sigint_signal = False  # Ctrl-C is handled by `run` in the main thread
    for key, value in extra_parameters.items():
        setattr(p, key, value)
    return solver


def run(solver: cp_model.CpSolver, model: cp_model.CpModel, callback: cp_model.CpSolverSolutionCallback) -> tuple[Any, bool]:
    """Solve in a worker thread; returns (status, interrupted). On Ctrl-C the search is stopped
    and the best solution so far is kept (status FEASIBLE, or UNKNOWN when there is none)."""
    out: dict[str, Any] = {}
    done = threading.Event()  # not Thread.is_alive: an interrupted join can make it lie

    def work() -> None:
        try:
            out["status"] = solver.solve(model, callback)
        except BaseException as exc:  # re-raised in the caller's thread
            out["error"] = exc
        finally:
            done.set()

    threading.Thread(target=work, daemon=True).start()
    interrupted = False
    while not done.is_set():
        try:
            done.wait(0.05)
        except KeyboardInterrupt:
            interrupted = True
            solver.stop_search()
    if "error" in out:
        raise out["error"]
    return out["status"], interrupted


def status_name(status: int) -> str:
    """CP-SAT's status as text (OPTIMAL, FEASIBLE, INFEASIBLE, MODEL_INVALID, UNKNOWN)."""
    return str(cp_model.CpSolver().status_name(status))


class Progress(cp_model.CpSolverSolutionCallback):
    """Calls `fn(incumbent_s, bound_s, elapsed_s)` on every improving solution of a phase."""

    def __init__(self, fn: ProgressFn | None, ticks: Ticks, component: str, clock: float) -> None:
        super().__init__()
        self._fn = fn
        self._ticks = ticks
        self._name = component
        self._slack = ticks.slack(component)
        self._clock = clock
        self.solutions = 0

    def on_solution_callback(self) -> None:
        self.solutions += 1
        if self._fn is None:
            return
        incumbent = self._ticks.seconds(self.objective_value, self._name)
        bound = self._ticks.seconds(max(self.best_objective_bound - self._slack, 0.0), self._name)
        self._fn(incumbent, min(bound, incumbent), time.perf_counter() - self._clock)
