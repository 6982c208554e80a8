"""Serving: closed-loop decode throughput, KV-cache capacity and the serve objective.

`capacity` (sequences whose KV fits, per stage and for the plan), `score` (`Serving`: tokens/s,
TPOT, TTFT of one plan), `search` (`--objective serve`: the best batch, in-flight count and
split under memory and latency limits, with its Pareto frontier; `run`: its K loop, per-point
bounds, tightening and pruning; `splits` and `exhaustive`: every split of a batch scored at once,
the exact inner problem under the limits; `rescue`: the least-TTFT and least-round-trip splits
when the least-bottleneck route finds nothing within the limits). Formulas:
`partitioner.analysis.closed_loop`.
"""

from __future__ import annotations

from partitioner.serving.capacity import Capacity, capacity
from partitioner.serving.score import Serving, serving_of

__all__ = ["Capacity", "capacity", "Serving", "serving_of"]
