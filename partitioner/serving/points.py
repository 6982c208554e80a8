"""The points of the serve search: limits, one evaluated (B, K), the result, the grid, the frontier.

See `partitioner.serving.search` for the search and why its grid is enough.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import numpy as np

from partitioner.problem import RTOL, CostTables, Problem, Solution
from partitioner.serving.score import Serving
from partitioner.serving.splits import Splits

__all__ = ["Limits", "Point", "SearchResult", "batch_grid", "in_flight_points", "with_in_flight", "limit_reason",
           "binding", "pareto", "EXACT_GRID"]

EXACT_GRID = 64


@dataclass(frozen=True)
class Limits:
    """Optional limits of the serve objective (None: none)."""

    tpot_s: float | None = None
    ttft_s: float | None = None
    max_batch: int | None = None


@dataclass
class Point:
    """One evaluated (B, K) with its split and serving numbers; period_lb bounds P at (B, K)."""

    problem: Problem
    solution: Solution
    serving: Serving
    period_lb: float
    w_lb: float = 0.0

    @property
    def proven(self) -> bool:
        return self.serving.tpot_s <= self.period_lb * (1 + RTOL) + 1e-15

    def to_dict(self) -> dict[str, object]:
        t, s = self.problem.tables, self.serving
        return {
            "batch": s.batch, "in_flight": s.in_flight,
            "devices": [t.device_names[g] for g in self.solution.devices], "cuts": list(self.solution.cuts),
            "tokens_per_s": s.tokens_per_s, "tpot_s": s.tpot_s, "ttft_s": s.ttft_s,
            "max_sequences": s.max_sequences, "tokens_per_s_per_gpu": s.tokens_per_s_per_gpu,
            "tokens_per_s_per_user": s.tokens_per_s_per_user,
        }


@dataclass
class SearchResult:
    """The best point, the Pareto frontier (tokens/s up, TPOT down) and what was searched."""

    best: Point
    frontier: list[Point]
    points: int
    solves: int
    batches: list[int]
    wall_time_s: float
    upper_bound: float = math.inf  # tokens/s: max over searched (B, K) of K·B / (period bound)
    notes: list[str] = field(default_factory=list)

    @property
    def proven(self) -> bool:
        """No split at any searched (B, K) can beat the best (its bound is the best's value)."""
        return self.upper_bound <= self.best.serving.tokens_per_s * (1 + RTOL)

    @property
    def status(self) -> str:
        """OPTIMAL exactly when proven; TIME_LIMIT when the time limit or Ctrl-C cut the grid;
        else FEASIBLE (searched to the end, a gap left): never OPTIMAL beside optimal false."""
        if self.proven:
            return "OPTIMAL"
        return "TIME_LIMIT" if self.notes else "FEASIBLE"

    @property
    def lower_bound(self) -> float:
        """Seconds per token no plan of the grid beats: 1 / upper_bound, 1 / tokens/s when proven."""
        top = 1.0 / self.best.serving.tokens_per_s
        return top if self.proven else min(top, 1.0 / self.upper_bound)


def batch_grid(limit: int) -> list[int]:
    """1..min(64, limit), then powers of two up to limit, and limit itself (module doc)."""
    grid = list(range(1, min(EXACT_GRID, limit) + 1))
    p = EXACT_GRID * 2
    while p < limit:
        grid.append(p)
        p *= 2
    if limit > EXACT_GRID:
        grid.append(limit)
    return grid


def in_flight_points(sp: Splits, B: int, tpot_cap: float, ttft_ok: np.ndarray,
                     most: int) -> Iterator[tuple[int, np.ndarray]]:
    """The in-flight counts K searched at batch B, each with the splits allowed to run it (here
    every split: K is free). K runs from 1 while some split can still gain: one that fits K + 1
    sequences' KV, meets the TTFT limit and is still round-trip bound at K (K·w_max < R) with
    (K + 1)·w_max and R within the TPOT cap. Without one, every split meeting the limits at a
    larger K' is bottleneck-bound at K already, so its tokens/s at K' is its B/w_max at K and its
    TPOT is larger: K' is dominated (partitioner.serving.run, "K"). An engine that ties K to
    the pipeline depth (e.g. K = S or S + 1) swaps this function."""
    every = np.ones(sp.w.shape, dtype=bool)
    room = ttft_ok & (sp.trip <= tpot_cap)
    for K in range(1, most + 1):
        if not (sp.N >= K * B).any():
            return
        yield K, every
        nxt = (K + 1) * sp.w
        if not (room & (sp.N >= (K + 1) * B) & (K * sp.w < sp.trip) & (nxt <= tpot_cap)).any():
            return


def with_in_flight(t: CostTables, K: int) -> CostTables:
    """The tables with K micro-batches of t.batch sequences in flight: memory = weights + KV."""
    if t.weight_gb is None or t.kv_bytes_per_token is None:
        return replace(t, in_flight=K)
    kv = t.kv_bytes_per_token * t.context * t.batch * K / 1e9
    return replace(t, memory_gb=t.weight_gb + kv, in_flight=K)


def limit_reason(s: Serving, limits: Limits) -> str | None:
    if limits.tpot_s is not None and s.tpot_s > limits.tpot_s * (1 + RTOL):
        return "tpot_limit"
    if limits.ttft_s is not None and (s.ttft_s is None or s.ttft_s > limits.ttft_s * (1 + RTOL)):
        return "ttft_limit"
    return None


def binding(best: Point, ok: list[Point], limits: Limits) -> str:
    """What stops more tokens/s: the bottleneck, or whatever blocks the next K at the same B."""
    s = best.serving
    if s.decode_bound == "bottleneck":
        return "bottleneck"
    if s.max_sequences is not None and s.max_sequences < s.batch * (s.in_flight + 1):
        return "kv_capacity"
    nxt = [p for p in ok if p.serving.batch == s.batch and p.serving.in_flight == s.in_flight + 1]
    if not nxt and limits.tpot_s is not None:
        return "tpot_limit"
    if not nxt and limits.ttft_s is not None:
        return "ttft_limit"
    return "round_trip"


def pareto(points: list[Point]) -> list[Point]:
    """Points no other beats on both tokens/s (higher) and TPOT (lower), by rising TPOT. Over the
    exact inner problem (splits.py: each (B, K) keeps its least-TPOT split, the only one no other
    split at that (B, K) dominates) this is the whole frontier of the grid's plans."""
    out: list[Point] = []
    for p in sorted(points, key=lambda p: (p.serving.tpot_s, -p.serving.tokens_per_s)):
        if out and p.serving.tokens_per_s <= out[-1].serving.tokens_per_s * (1 + RTOL):
            continue
        while out and p.serving.tpot_s <= out[-1].serving.tpot_s * (1 + RTOL):
            out.pop()  # the same TPOT within RTOL and more tokens/s
        out.append(p)
    return out


