"""An upper bound on the tokens/s the planner can find on a fleet, without planning it.

The serve bound's fluid part (partitioner.deploy.bounds, partitioner.deploy.bound_inputs.for_serve):
a replica at batch B decodes at most B / τ_max tokens/s, and τ_max >= L_dec / Σ r_g over its
devices (r_g: device g's best decoder layers per second at B, over the TP groups of its node), so
every deployment on devices D decodes at most Σ_{g∈D} fr_g with fr_g = max_B B·r_g / L_dec. The
bound is additive over devices, and fr_g depends only on g's GPU and the cards of its node (its TP
groups), so a fleet's bound is the owned cluster's plus one term per added box shape, each computed
once. Without TP groups a replica also decodes at most B / τ_head, τ_head the least cost of the
LM-head layer (with the per-token fixed cost it carries) over every GPU type on offer, so no
device adds more than c = max_B B / τ_head: min(fr_g, c) per device (Σ_r min(Σ_{g∈r} fr_g, c) ≤
Σ_g min(fr_g, c)), which keeps the bound additive and tight for small models, where the fixed
cost per token binds. It is at least the planner's answer on every fleet, which makes the branch
and bound of partitioner.fleets.search exact with respect to the planner. A fleet whose usable memory is below
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
    _cap: float | None = None
    _probe: list[tuple[int, Any]] = field(default_factory=list)  # (B, cost rows: one per offer, then own devices)
    _rows: dict[frozenset[int], float] = field(default_factory=dict)
    need_gb: float = 0.0

    def _grid(self) -> tuple[list[int], bool]:
        """The serve objective's batch grid (as partitioner.deploy.serve.serve_inputs builds it), and
        whether it is the roofline's (monotone)."""
        from partitioner.api import serve_limits
        from partitioner.serving.search import serve_grid

        _, batches = serve_limits(self.model, self.tpot_ms, self.ttft_ms, self.max_batch)
        return serve_grid(batches, self.max_batch), batches is None

    def cap(self) -> float:
        """c of the module doc (tokens/s one replica can reach at most); inf with TP groups."""
        if self._cap is None:
            self._cap = float("inf") if self.tp != "off" else self._head_cap()
        return self._cap

    def _head_cap(self) -> float:
        from partitioner.costs import build_tables
        from partitioner.models.cluster import ClusterSpec

        gpus = {o.gpu: o.gpu for o in self.offers}
        devices = [{"name": f"probe-{i}", "gpu": g, "node": f"probe-{i}"} for i, g in enumerate(gpus)]
        if self.own is not None:
            devices += [d.model_dump(by_alias=True, exclude_none=True) for d in self.own.devices]
        probe = ClusterSpec.model_validate({"name": "probe", "devices": devices,
                                           **({} if self.own is None else {"reserve_gb": self.own.reserve_gb})})
        grid, _ = self._grid()
        best = 0.0
        for B in grid:
            t = build_tables(self.model.with_batch(B, 1), probe, engine=self.engine)
            head = [i for i, k in enumerate(t.kinds) if k == "head"] or [t.L - 1]
            best = max(best, B / float(t.cost[:, head[-1]].min()))
            self._probe.append((B, t.cost))
        return best

    def per_device(self, present: frozenset[int]) -> float:
        """max_B B / Σ_l min over the GPU types present (offer indices; your devices always) of the
        layer's cost: a replica of S stages has τ_max >= Σ_s τ_s / S >= that sum / S, so each of
        its devices adds at most this much (module doc); inf with TP groups."""
        if self.cap() == float("inf"):
            return float("inf")
        if present not in self._rows:
            n_off = len(self.offers)
            best = 0.0
            for B, cost in self._probe:
                rows = [r for r in range(cost.shape[0]) if r >= n_off or r in present]
                best = max(best, B / float(cost[rows].min(axis=0).sum())) if rows else best
            self._rows[present] = best
        return self._rows[present]

    def _rates(self, cluster: Any) -> tuple[float, float]:
        """(Σ fr_g, Σ usable GB) over the devices of `cluster`; sets need_gb, the weights."""
        import numpy as np

        from partitioner.costs import build_tables
        from partitioner.deploy.bound_inputs import for_serve

        grid, monotone = self._grid()

        def tables_at(B: int) -> Any:
            return build_tables(self.model.with_batch(B, 1), cluster, engine=self.engine)

        first = tables_at(grid[0])
        self.need_gb = float(first.weight_gb.sum()) - first.tied_gb if first.weight_gb is not None else 0.0
        bound = for_serve(self.model, cluster, tables_at, grid, self.tp, self.engine, monotone=monotone)
        return float(np.minimum(bound.fr, self.cap()).sum()), float(first.capacity_gb.sum())

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
        """(tokens/s bound, usable GB) of `fleet`: the least of the per-device bounds summed and of
        the devices times `per_device` (each a bound on every deployment, so their minimum is too)."""
        rate, room = self._owned()
        for i, (offer, x) in enumerate(zip(self.offers, fleet, strict=True)):
            for n in boxes(x, offer.box):
                r, m = self._box(i, n)
                rate, room = rate + r, room + m
        devices = sum(fleet) + (0 if self.own is None else len(self.own.devices))
        present = frozenset(i for i, x in enumerate(fleet) if x)
        return min(rate, devices * self.per_device(present)), room

    def holds(self, fleet: Fleet) -> bool:
        """Whether the fleet's usable memory can hold the weights at all (a necessary condition)."""
        _, room = self(fleet)
        return room >= self.need_gb * (1 - 1e-9)
