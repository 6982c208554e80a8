"""Pipeline schedule simulation (docs/theory.md recurrences (1)/(2) and §10's open problems).

`simulate` builds one full schedule (`Schedule`: every start/finish, makespan, Gantt events);
`simulate_batch` returns the makespans of N configurations at once; `ticks` is GPipe's
synchronous clock-cycle order. Beyond the paper: serial links, bounded buffers, random stage
times, partial overlap (see `extended`); `simulate_decode` runs the closed loop of decode
(`closed_loop`: each micro-batch re-enters stage 0 after its return transfer).
"""

from __future__ import annotations

from partitioner.simulate.batch import simulate_batch
from partitioner.simulate.closed_loop import DecodeRun, decode_period_batch, simulate_decode
from partitioner.simulate.extended import REGIMES, Sampler, named_sampler
from partitioner.simulate.schedule import Event, Schedule, simulate, ticks

__all__ = [
    "REGIMES",
    "Sampler",
    "Event",
    "Schedule",
    "simulate",
    "simulate_batch",
    "ticks",
    "named_sampler",
    "DecodeRun",
    "simulate_decode",
    "decode_period_batch",
]
