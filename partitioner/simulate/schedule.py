"""The full schedule of one pipeline: every micro-batch on every stage and link (docs/theory.md recurrences (1)/(2)).

`simulate(tau, d, M, regime)` evaluates recurrence (1) (async: a link is a pure delay, the stage
is not blocked) or (2) (blocking: the send occupies the stage) of docs/theory.md exactly, and the
extensions of `extended` (serial links, bounded buffers, random stage times, partial overlap),
through `engine.run` with N = 1. `ticks(M, S)` is the synchronous clock-cycle order of GPipe
(torchgpipe `clock_cycles`), the fill-drain order recurrence (1) follows when all tau are equal.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from partitioner.analysis.inputs import ArrayLike, as_d, as_M, as_tau
from partitioner.errors import InputError
from partitioner.simulate import engine
from partitioner.simulate.extended import (
    Sampler,
    as_buffers,
    as_occupancy,
    blocked_share,
    draw_tau,
)

__all__ = ["Event", "Schedule", "simulate", "ticks"]


@dataclass(frozen=True)
class Event:
    """One bar of a Gantt chart. kind: "compute" or "hold" on a stage, "send" on a link."""

    kind: str
    micro_batch: int
    lane: int  # stage index for compute/hold, link index s (s -> s+1) for send
    start: float
    finish: float


@dataclass(frozen=True, eq=False)
class Schedule:
    """Start/finish of every micro-batch m on every stage s and link s (seconds).

    start, finish   (M, S)    compute of m on stage s
    release         (M, S)    stage s is free for m+1 (> finish while held or sending)
    send_start/send_finish (M, S-1)  transfer of m on link s -> s+1 (arrival at s+1)
    tau             (M, S)    the stage times used (constant rows unless sampled)
    """

    regime: str
    tau: np.ndarray
    d: np.ndarray
    start: np.ndarray
    finish: np.ndarray
    release: np.ndarray
    send_start: np.ndarray
    send_finish: np.ndarray

    @property
    def M(self) -> int:
        return int(self.start.shape[0])

    @property
    def S(self) -> int:
        return int(self.start.shape[1])

    @property
    def makespan(self) -> float:
        """T(M) = finish of the last micro-batch on the last stage (docs/theory.md §2)."""
        return float(self.finish[-1, -1])

    @property
    def sojourn(self) -> np.ndarray:
        """Time each micro-batch spends in the pipeline: exit minus compute start on stage 0 (Errors 2)."""
        return self.finish[:, -1] - self.start[:, 0]

    def events(self) -> list[Event]:
        """Timeline for a Gantt chart, sorted by start time (holds only where non-empty)."""
        out: list[Event] = []
        for m in range(self.M):
            for s in range(self.S):
                t0, t1, t2 = (float(a[m, s]) for a in (self.start, self.finish, self.release))
                out.append(Event("compute", m, s, t0, t1))
                if t2 > t1:
                    out.append(Event("hold", m, s, t1, t2))
                if s < self.S - 1:
                    out.append(Event("send", m, s, float(self.send_start[m, s]), float(self.send_finish[m, s])))
        return sorted(out, key=lambda e: (e.start, e.kind, e.lane, e.micro_batch))


def simulate(
    tau: ArrayLike,
    d: ArrayLike | None = None,
    M: int = 1,
    regime: str = "async",
    *,
    serial_links: bool = False,
    link_occupancy: ArrayLike | None = None,
    buffer: int | list[int | None] | None = None,
    rho: float | None = None,
    tau_sampler: Sampler | tuple[str, float | None] | None = None,
    seed: Any = None,
) -> Schedule:
    """Builds the schedule of M micro-batches through stages tau joined by links d.

    regime: "async" (recurrence 1), "blocking" (recurrence 2) or "partial" (needs rho: the
    stage is blocked for (1-rho) of each send). serial_links: one transfer at a time per link,
    each occupying it `link_occupancy` (default d). buffer: K slots before each stage (None =
    infinite). tau_sampler: random (M, S) stage times, seeded by `seed`. See `extended`.
    """
    t = as_tau(tau)
    dd = as_d(d, t.size)
    M = as_M(M)
    beta = blocked_share(regime, rho)
    occ = as_occupancy(serial_links, link_occupancy, dd)
    buffers = as_buffers(buffer, t.size)
    p = draw_tau(tau_sampler, t, M, seed)
    p = np.broadcast_to(t, (M, t.size)).copy() if p is None else p
    tr = engine.run(
        p[:, :, None], dd[:, None], None if occ is None else occ[:, None], beta, buffers, record=True
    )
    traced = (tr.start, tr.finish, tr.release, tr.send_start, tr.send_finish)
    arrays = [a[..., 0] for a in traced]  # type: ignore[index]
    return Schedule(regime, p, dd, *arrays)


def ticks(M: int, S: int) -> Iterator[list[tuple[int, int]]]:
    """Clock cycles of synchronous fill-drain: at tick k, the pairs (m, s) with m + s = k.

    M + S - 1 ticks (the (S+M-1) of Cor 1's GPipe estimate); after torchgpipe `clock_cycles`.
    """
    M = as_M(M)
    if isinstance(S, bool) or not isinstance(S, int) or S < 1:
        raise InputError(f"S must be an integer >= 1 (got {S!r})")
    for k in range(M + S - 1):
        yield [(k - s, s) for s in range(max(0, k - M + 1), min(S, k + 1))]
