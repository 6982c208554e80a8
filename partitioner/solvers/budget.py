"""The one budget type: a wall-clock cap and a count of work, and one incumbent for a whole solve.

`Budget(limit_s, progress)` starts the clock (None: no wall-clock cap). `work` counts the
solve's steps (`check()` calls, or `spend(n)` for a step of n cells) and `work_limit` stops it after that many, so that a solve
without the user's wall-clock limit ends at the same point on an idle and on a loaded machine;
`partitioner.planning.request.PlanRequest` carries one as the whole request's budget. Solver phases call `check()` between steps (it
raises `TimeUp` past the deadline), `offer(problem, devices, cuts)` for every plan they find,
and `bound(value)` for every valid lower bound on the first objective component. When time
runs out or the user presses Ctrl-C, `best_solution` turns what is known into a `Solution`:
the best plan so far, optimal=False, its lower bound and gap. Progress: `progress(incumbent,
bound, elapsed)` is called for each improving plan once a solve has run for `QUIET_S`.

A command of many solves (`partition report`) keeps one Budget for the whole run: each phase
asks `spent()` before it starts more work (the work limit, the deadline, or a Ctrl-C since the
budget started: `partitioner.interrupts`), runs its solves in `within()` (what is left of the
deadline, a fresh incumbent) and `charge`s the steps they took; `why()` names what stopped it,
`cut(part)` records each part it cut short for the command to say so (`notes`), and a search
over many sub-solves (partitioner.solvers.engine_clock) keeps why it stopped in `stopped`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from partitioner import interrupts
from partitioner.problem import Metrics, Problem, Solution, evaluate, lex_compare, objective_key

DEFAULT_TIME_LIMIT_S = 10.0  # the whole search's wall clock when Problem.time_limit_s is None (auto, CP-SAT)

__all__ = ["clock", "now", "Budget", "TimeUp", "ProgressFn", "QUIET_S", "DEFAULT_TIME_LIMIT_S"]

ProgressFn = Callable[[float, float, float], None]
#: The clock every Budget reads (seconds); tests replace it with a counting fake, so time-limit
#: behaviour is tested by the checks a solve makes rather than by the wall time of a loaded box.
clock: Callable[[], float] = time.perf_counter


def now() -> float:
    """`clock()` as it is now (a replaced clock included): the deadlines of the replica search
    (partitioner.deploy) read it too, so one fake clock drives every time-limit check."""
    return clock()


QUIET_S = 1.0  # solves shorter than this print nothing
SCORED = 16  # plans whose Metrics `Budget.score` keeps (the phases of one solve re-score a few plans)


class TimeUp(Exception):
    """The budget's deadline passed (internal: callers turn it into the best plan so far)."""


class Budget:
    def __init__(self, limit_s: float | None, progress: ProgressFn | None = None) -> None:
        self.start = clock()
        self.deadline = None if limit_s is None else self.start + float(limit_s)
        self.progress = progress
        self.best: tuple[tuple[float, ...], tuple[int, ...], tuple[int, ...]] | None = None
        self.lower = 0.0
        self.solver = "dp"
        self.work = 0  # check() calls so far: the solve's steps, counted the same on any machine
        self.work_limit: int | None = None  # steps after which check() stops the solve (None: no count)
        self._scored: dict[tuple[object, ...], tuple[object, Metrics]] = {}
        self.sigints = interrupts.count()  # Ctrl-C presses before this budget started
        self.notes: list[str] = []  # the parts cut short (`cut`), in order, for the command's output
        self.stopped = ""  # a search of many solves that stopped early: "TIME_LIMIT" or "INTERRUPTED"

    def score(self, problem: Problem, devices: tuple[int, ...], cuts: tuple[int, ...]) -> Metrics:
        """`evaluate`, remembered for the last SCORED plans: the phases of one solve score the
        same plan several times (offer, the sigma or T step, the final key). Metrics depend only
        on the tables, M and the plan (the order only in the plan check `evaluate` makes first); the
        entry keeps the tables alive, so their id is not reused."""
        key = (id(problem.tables), int(problem.M), problem.order, tuple(devices), tuple(cuts))
        if key not in self._scored:
            if len(self._scored) >= SCORED:
                self._scored.pop(next(iter(self._scored)))
            self._scored[key] = (problem.tables, evaluate(problem, tuple(devices), tuple(cuts)))
        return self._scored[key][1]

    def elapsed(self) -> float:
        return clock() - self.start

    def left(self, default_s: float) -> float:
        """Seconds left (default_s from now when the budget has no deadline)."""
        if self.deadline is None:
            return default_s
        return max(self.deadline - clock(), 0.0)

    def check(self) -> None:
        self.spend(1)

    def spend(self, steps: int) -> None:
        """`check()` after `steps` units of work (a search whose steps differ in size counts its
        cells, e.g. partitioner.solvers.dp.subsets), so `work_limit` stops it at the same point on
        any machine."""
        self.work += int(steps)
        if self.work_limit is not None and self.work > self.work_limit:
            raise TimeUp
        if self.deadline is not None and clock() > self.deadline:
            raise TimeUp

    def interrupted(self) -> bool:
        """Whether Ctrl-C was pressed since this budget started (partitioner.interrupts)."""
        return interrupts.since(self.sigints)

    def spent(self, pending: int = 0) -> bool:
        """Whether no further work should start: the work so far plus `pending` steps not yet
        charged reached `work_limit`, the deadline passed, or Ctrl-C was pressed. Counts nothing."""
        return bool(self.why(pending))

    def why(self, pending: int = 0) -> str:
        """What spent the budget ("Ctrl-C", "the time limit", "the work budget"; "" while it lasts)."""
        if self.interrupted():
            return "Ctrl-C"
        if self.deadline is not None and clock() > self.deadline:
            return "the time limit"
        if self.work_limit is not None and self.work + pending >= self.work_limit:
            return "the work budget"
        return ""

    def cut(self, part: str, why: str = "") -> None:
        """Record that `part` of a many-solve command was cut short (by `why`, default `why()`)."""
        note = f"{part}: cut short by {why or self.why() or 'the time limit'}"
        if note not in self.notes:
            self.notes.append(note)

    def charge(self, steps: int) -> None:
        """Count `steps` of work done outside `check()` (a sub-search's solves and scored points)."""
        self.work += max(int(steps), 0)

    def within(self, work: int | None = None) -> Budget:
        """A fresh budget (own incumbent and bound) for one solve or search inside this one: what
        is left of the deadline, `work` steps (None: no work limit), the same Ctrl-C mark; the
        caller charges its `work` back."""
        sub = Budget(None, self.progress)
        sub.deadline, sub.work_limit = self.deadline, work
        sub.sigints = self.sigints
        return sub

    def bound(self, value: float) -> None:
        if not math.isnan(value) and value > self.lower:
            self.lower = float(value)

    def offer(self, problem: Problem, devices: tuple[int, ...], cuts: tuple[int, ...]) -> None:
        if not devices:
            return
        m = self.score(problem, tuple(devices), tuple(cuts))
        if not m.fits:
            return
        key = objective_key(problem, m)
        if self.best is None or lex_compare(key, self.best[0]) < 0:
            self.best = (key, tuple(devices), tuple(cuts))
            self.report(key[0])

    def report(self, incumbent: float) -> None:
        if self.progress is not None and self.elapsed() >= QUIET_S:
            self.progress(incumbent, min(self.lower, incumbent), self.elapsed())

    def best_solution(self, status: str) -> Solution | None:
        """The best plan so far as a non-optimal Solution (None when there is none)."""
        if self.best is None:
            return None
        key, devices, cuts = self.best
        lb = min(self.lower, key[0])
        proven = len(key) == 1 and lex_compare((lb,), key[:1]) == 0
        return Solution(
            devices=devices, cuts=cuts, solver=self.solver, optimal=proven, objective=key, lower_bound=lb,
            status="OPTIMAL" if proven else status, wall_time_s=self.elapsed(),
        )
