"""The replica bound built from a model and cluster: per-unit rates, the workload's bound, the serve bound.

The bound itself (tokens/s = K·B/P with P >= K·τ_lb and P >= R_lb, partitioner.analysis.closed_loop)
is partitioner.deploy.bounds.ReplicaBound; this module computes its inputs: each device's best
decoder layers per second over the TP groups holding it, t-normalised (r_g of τ_lb = L_dec / Σ r_g),
and each layer's least cost on any unit holding the device (low[g][l] of R_lb), from the TP group
tables (partitioner.costs.groups). `for_workload` is the bound at the workload's B and K;
`for_serve` the largest over every batch of the serve objective's grid (partitioner.serving.search,
"B"), cut into octaves, with the sequences K·B that the memory beyond the weights holds
(partitioner.serving.capacity).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from partitioner.deploy.bounds import ReplicaBound
from partitioner.problem import CostTables

__all__ = ["unit_rates", "for_workload", "MaxBound", "for_serve"]

def unit_rates(model: Any, cluster: Any, base: CostTables, tp: str, engine: Any = None) -> tuple[dict[int, float], np.ndarray]:
    """Per device: its best decoder layers per second over the TP groups holding it (t-normalised),
    and per device and layer the least cost of any unit holding it."""
    from partitioner.costs.groups import candidate_groups, group_tables

    rates: dict[int, float] = {}
    lows = base.cost.copy()
    if tp != "off":
        groups = [g for g in candidate_groups(cluster, whole_nodes=tp == "node") if g.t > 1]
        if groups:
            gt = group_tables(model, cluster, groups, base, engine)
            dec = [i for i, k in enumerate(gt.kinds) if k == "decoder"] or list(range(gt.L))
            for gr, row, full in zip(groups, gt.cost[:, dec], gt.cost, strict=True):
                for g in gr.members:
                    rates[g] = max(rates.get(g, 0.0), float(1.0 / row.min()) / gr.t)
                    lows[g] = np.minimum(lows[g], full)
    return rates, lows


def _need(t: CostTables) -> float:
    return float(t.memory_gb.sum()) - (t.tied_gb if t.L > 1 else 0.0)


def for_workload(model: Any, cluster: Any, base: CostTables, tp: str, engine: Any = None) -> ReplicaBound:
    """The bound at the workload's batch B and in-flight count K (the tables `base`)."""
    rates, lows = unit_rates(model, cluster, base, tp, engine)
    return ReplicaBound(base, cluster, rates, lows, _need(base))


class MaxBound:
    """The largest of several bounds (one per range of batch sizes): the serve objective's."""

    def __init__(self, parts: list[ReplicaBound]) -> None:
        self.parts = parts
        self.need = min(p.need for p in parts)
        self.fr = np.max([p.fr for p in parts], axis=0)

    def __call__(self, devices: list[int]) -> float:
        return max(p(devices) for p in self.parts)

    def fluid(self, devices: list[int]) -> float:
        return float(self.fr[devices].sum())

    def prepare(self, nk: Any) -> None:
        for p in self.parts:
            p.prepare(nk)
        self.rates = np.max([p.rates for p in self.parts], axis=0)

    def vectors(self, X: np.ndarray) -> np.ndarray:
        return np.max([p.vectors(X) for p in self.parts], axis=0)

    memory_aware = True

    def joint(self, devices: list[int]) -> float:
        """The largest part's memory-aware bound; a part whose fluid bound (>= its joint one) is
        below the best so far is skipped."""
        best = 0.0
        for plain, p in sorted(((p.fluid(devices), p) for p in self.parts), key=lambda t: -t[0]):
            if plain <= best:
                break
            best = max(best, p.joint(devices))
        return best

    def tail(self, c: int) -> float:
        return max(p.tail(c) for p in self.parts)


def for_serve(model: Any, cluster: Any, tables_at: Any, batches: list[int], tp: str, engine: Any = None,
              monotone: bool = False) -> MaxBound:
    """The bound over every batch B of `batches` and every K (the serve objective). The batches
    are cut into octaves [2^i, 2^(i+1)); over an octave, the fluid rate is the largest of its batches', the
    layer costs the least, and the range counts only when its smallest B fits as one micro-batch;
    the sequences are what the memory beyond the weights (at the smallest B) holds; the bound is
    the largest over octaves. `monotone` (the roofline: τ(B) rises and τ(B)/B falls with B,
    partitioner.serving.search "B") needs only each octave's end batches."""
    octaves: dict[int, list[int]] = {}
    for B in batches:
        octaves.setdefault(int(math.log2(B)), []).append(B)
    chunks = list(octaves.values())
    first = tables_at(batches[0])
    weights = float(first.weight_gb.sum()) - first.tied_gb if first.weight_gb is not None else _need(first)
    kv = (float(np.sum(first.kv_bytes_per_token)) * first.context / 1e9 if first.kv_bytes_per_token is not None
          else 0.0)
    parts = []
    for chunk in chunks:
        grid = [chunk[0], chunk[-1]] if monotone and len(chunk) > 1 else chunk
        fr = np.zeros(first.G)
        lows = np.full_like(first.cost, np.inf)
        for B in grid:
            t = tables_at(int(B))
            rates, low = unit_rates(model.with_batch(int(B), 1), cluster, t, tp, engine)
            fr = np.maximum(fr, ReplicaBound(t, cluster, rates, low, _need(t)).fr)
            lows = np.minimum(lows, low)
        parts.append(ReplicaBound(first, cluster, {}, lows, _need(first), fluid_rate=fr, seq_cap=(weights, kv),
                                  batch_floor=float(chunk[0]) if kv > 0 else 0.0))
    return MaxBound(parts)
