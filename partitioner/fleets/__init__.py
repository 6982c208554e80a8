"""Capacity planning: which GPUs to add to what you own to serve a model at a target, at least cost.

    >>> from partitioner import fleet
    >>> r = fleet("examples/models/llama-3.1-8b.yaml", tokens_per_s=2000, tpot_ms=100,
    ...           market={"l4": 4, "a100-80gb": 2})
    >>> r.best.point.tokens_per_s, r.best.cost_usd_h, r.to_dict()["fleet"]

The offers come from `market` (GPU id -> most cards you may add) priced by the shipped catalogue
(presets/prices.yaml, on demand unless `spot`) with cluster.yaml `prices:` overriding it; the
search is partitioner.fleets.search over partitioner.fleets.candidates, bounded by
partitioner.fleets.bound, each fleet planned by partitioner.fleets.evaluate on the runner of
partitioner.fleets.pool. `what_if` (partitioner.fleets.marginal) is the one-change table.
"""

from __future__ import annotations

from partitioner.fleets.api import FleetResult, fleet, offers_for
from partitioner.fleets.market import Offer, Target

__all__ = ["fleet", "FleetResult", "Offer", "Target", "offers_for"]
