"""An upper bound on the tokens/s the planner can find on a fleet, without planning it.

The serve bound's fluid part (partitioner.deploy.bounds, partitioner.deploy.bound_inputs.for_serve):
a replica at batch B decodes at most B / τ_max tokens/s, and τ_max >= L_dec / Σ r_g over its
devices (r_g: device g's best decoder layers per second at B, over the TP groups of its node), so
every deployment on devices D decodes at most Σ_{g∈D} fr_g with fr_g = max_B B·r_g / L_dec. The
bound is additive over devices, and fr_g depends only on g's GPU and the cards of its node (its TP
groups), so a fleet's bound is the owned cluster's plus one term per added box shape, each computed
once. It is at least the planner's answer on every fleet, which makes the branch and bound of
partitioner.fleets.search exact with respect to the planner. A fleet whose usable memory is below
the model's weights cannot hold it (`holds`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from partitioner.fleets.candidates import Fleet, boxes, fleet_cluster
from partitioner.fleets.market import Offer

__all__ = ["FleetBound"]


@dataclass
class FleetBound:
    """Per-box fluid rates (tokens/s) and usable memory (GB), cached by (offer index, cards)."""

    model: Any
    own: Any
    offers: tuple[Offer, ...]
    intra: str
    inter: str
    engine: str | None
    tp: str
    max_batch: int | None
    tpot_ms: float | None
    ttft_ms: float | None
    _boxes: dict[tuple[int, int], tuple[float, float]] = field(default_factory=dict)
    _own: tuple[float, float] | None = None
    need_gb: float = 0.0

    def _rates(self, cluster: Any) -> tuple[float, float]:
        """(Σ fr_g, Σ usable GB) over the devices of `cluster`; sets need_gb, the weights."""
        from partitioner.api import serve_limits
        from partitioner.costs import build_tables
        from partitioner.deploy.bound_inputs import for_serve
        from partitioner.serving.search import MAX_BATCH, batch_grid

        _, batches = serve_limits(self.model, self.tpot_ms, self.ttft_ms, self.max_batch)
        cap = min(self.max_batch or MAX_BATCH, MAX_BATCH)
        grid = [b for b in (batch_grid(cap) if batches is None else batches) if b <= cap]

        def tables_at(B: int) -> Any:
            return build_tables(self.model.with_batch(B, 1), cluster, engine=self.engine)

        first = tables_at(grid[0])
        self.need_gb = float(first.weight_gb.sum()) - first.tied_gb if first.weight_gb is not None else 0.0
        bound = for_serve(self.model, cluster, tables_at, grid, self.tp, self.engine, monotone=batches is None)
        return float(bound.fr.sum()), float(first.capacity_gb.sum())

    def _box(self, i: int, cards: int) -> tuple[float, float]:
        key = (i, cards)
        if key not in self._boxes:
            probe = tuple(cards if j == i else 0 for j in range(len(self.offers)))
            self._boxes[key] = self._rates(fleet_cluster(None, probe, self.offers, intra=self.intra, inter=self.inter,
                                                         reserve_gb=self._reserve()))
        return self._boxes[key]

    def _reserve(self) -> float | None:
        return None if self.own is None else float(self.own.reserve_gb)

    def _owned(self) -> tuple[float, float]:
        if self._own is None:
            self._own = (0.0, 0.0) if self.own is None else self._rates(self.own)
        return self._own

    def __call__(self, fleet: Fleet) -> tuple[float, float]:
        """(tokens/s bound, usable GB) of `fleet`."""
        rate, room = self._owned()
        for i, (offer, x) in enumerate(zip(self.offers, fleet, strict=True)):
            for n in boxes(x, offer.box):
                r, m = self._box(i, n)
                rate, room = rate + r, room + m
        return rate, room

    def holds(self, fleet: Fleet) -> bool:
        """Whether the fleet's usable memory can hold the weights at all (a necessary condition)."""
        _, room = self(fleet)
        return room >= self.need_gb * (1 - 1e-9)
