"""Branch and bound over fleets: the cheapest that meets the target, or the most tokens/s within a budget.

Every fleet (count vector over the offers, partitioner.fleets.candidates) has a cost c(x) and an
upper bound u(x) on the tokens/s the planner can find on it (partitioner.fleets.bound), and a
fleet whose memory cannot hold the weights is out. The planner's answer v(x) (one serve plan,
partitioner.fleets.evaluate) is computed only where it can matter:

- cheapest: fleets in order of (c, −u, x); a fleet with u(x) below the target's tokens/s cannot
  meet it and is skipped; the first fleet that meets the target is the cheapest. The search goes
  on until the 1 + R cheapest meeting fleets are known (R runners-up): it stops once the next
  fleet costs more than the (1 + R)-th.
- most: fleets within the budget in order of (−u, c, x); it stops once the next fleet's bound is
  below the (1 + R)-th best v found, since no later fleet can reach it.

So the answer equals a brute force over every fleet × the planner (tests). Fleets go out in waves
of WAVE, whatever the number of workers, and the answers are read in wave order, so the result
does not depend on who runs them. A cut by `max_evaluations`, the time cap or Ctrl-C returns the
best so far with a bound: the cheapest cost any unevaluated fleet could have, or the largest
tokens/s any could reach.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from partitioner.fleets.candidates import Fleet
from partitioner.fleets.evaluate import Job, Point
from partitioner.fleets.market import Target

__all__ = ["Scored", "SearchOutcome", "search", "WAVE", "RUNNERS_UP"]

WAVE = 8  # fleets planned per wave (independent of the worker count: the result must not depend on it)
RUNNERS_UP = 3
_TOL = 1e-9


@dataclass(frozen=True)
class Scored:
    """A planned fleet with its cost per hour and bound."""

    point: Point
    cost_usd_h: float
    bound: float


@dataclass(frozen=True)
class SearchOutcome:
    """The best fleet, the runners-up, everything planned, and the proof."""

    mode: str
    best: Scored | None
    runners_up: tuple[Scored, ...]
    planned: tuple[Scored, ...]
    candidates: int
    pruned_bound: int
    pruned_memory: int
    pruned_budget: int
    proven: bool
    stopped: str = ""
    cost_lower_bound: float | None = None  # cheapest: no unevaluated fleet meets the target for less
    tokens_upper_bound: float | None = None  # most: no unevaluated fleet decodes more
    notes: tuple[str, ...] = field(default_factory=tuple)


def meets(p: Point, target: Target) -> bool:
    """The plan serves the target: its tokens/s floor and its users (sequences in flight)."""
    if not p.feasible:
        return False
    if target.tokens_per_s is not None and p.tokens_per_s < target.tokens_per_s * (1 - _TOL):
        return False
    return target.users is None or p.sequences >= target.users


def search(fleets: list[Fleet], cost: Callable[[Fleet], float], bound: Callable[[Fleet], tuple[float, bool]],
           job: Callable[[Fleet], Job], run: Callable[[list[Job]], list[Point]], target: Target, *,
           max_evaluations: int | None = None, deadline: float | None = None,
           progress: Callable[[int, int, float], None] | None = None) -> SearchOutcome:
    """The branch and bound of the module doc. `bound(x)` gives (u(x), whether x's memory holds
    the weights); `run` plans a wave of jobs and returns their points in order."""
    budget = target.budget_usd_h
    need = target.need_tokens_per_s()
    mode = target.mode
    pruned = {"bound": 0, "memory": 0, "budget": 0}
    order: list[tuple[Fleet, float, float]] = []
    for x in fleets:
        c = cost(x)
        if budget is not None and c > budget * (1 + _TOL):
            pruned["budget"] += 1
            continue
        u, holds = bound(x)
        if not holds:
            pruned["memory"] += 1
            continue
        if mode == "cheapest" and u * (1 + _TOL) < need:
            pruned["bound"] += 1
            continue
        order.append((x, c, u))
    order.sort(key=(lambda t: (t[1], -t[2], t[0])) if mode == "cheapest" else (lambda t: (-t[2], t[1], t[0])))
    keep = 1 + RUNNERS_UP
    planned: list[Scored] = []
    good: list[Scored] = []  # meeting (cheapest) or feasible (most), ranked
    rank = (lambda s: (s.cost_usd_h, -s.point.tokens_per_s, s.point.fleet)) if mode == "cheapest" else \
        (lambda s: (-s.point.tokens_per_s, s.cost_usd_h, s.point.fleet))
    i, stopped = 0, ""

    def done(nxt: tuple[Fleet, float, float]) -> bool:
        if len(good) < keep:
            return False
        last = good[keep - 1]
        return nxt[1] > last.cost_usd_h * (1 + _TOL) if mode == "cheapest" else nxt[2] < last.point.tokens_per_s

    while i < len(order) and not done(order[i]):
        if max_evaluations is not None and len(planned) >= max_evaluations:
            stopped = f"work budget of {max_evaluations} plans"
            break
        if deadline is not None and time.monotonic() >= deadline:
            stopped = "time limit"
            break
        wave = order[i:i + WAVE]
        try:
            points = run([job(x) for x, _, _ in wave])
        except KeyboardInterrupt:
            stopped = "interrupted"
            break
        i += len(wave)
        for (_, c, u), p in zip(wave, points, strict=True):
            s = Scored(p, c, u)
            planned.append(s)
            if (meets(p, target) if mode == "cheapest" else p.feasible):
                good.append(s)
        good.sort(key=rank)
        if progress is not None:
            progress(len(planned), len(order), good[0].point.tokens_per_s if good else 0.0)
    rest = order[i:]
    best = good[0] if good else None
    if mode == "cheapest":
        lb = min([rest[0][1]] if rest else [], default=math.inf)
        proven = (best is not None and (not rest or rest[0][1] > best.cost_usd_h * (1 + _TOL))) or (best is None and not rest)
        cost_lb = min(lb, best.cost_usd_h) if best is not None else (lb if math.isfinite(lb) else None)
        return SearchOutcome(mode, best, tuple(good[1:keep]), tuple(planned), len(fleets), pruned["bound"],
                             pruned["memory"], pruned["budget"], bool(proven), stopped, cost_lower_bound=cost_lb)
    ub = max([rest[0][2]] if rest else [], default=0.0)
    proven = (best is None and not rest) or (best is not None and (not rest or rest[0][2] < best.point.tokens_per_s))
    top = max(ub, best.point.tokens_per_s if best is not None else 0.0)
    return SearchOutcome(mode, best, tuple(good[1:keep]), tuple(planned), len(fleets), pruned["bound"],
                         pruned["memory"], pruned["budget"], bool(proven), stopped, tokens_upper_bound=top)
