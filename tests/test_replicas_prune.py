"""The replica planner's cheaper serve search (partitioner.serving.run, "Pruning"): pruned
batches and a start batch leave the best plan unchanged and the upper bound valid, on seeded
small clusters; capacity.sequence_cap by hand."""

from __future__ import annotations

import numpy as np
import pytest
from test_replicas_serve import _instance

from partitioner.api import serve_limits
from partitioner.costs import build_tables
from partitioner.problem import CostTables
from partitioner.serving.capacity import capacity, sequence_cap
from partitioner.serving.search import search


def _tables(seed: int):  # type: ignore[no-untyped-def]
    model, cluster = _instance(seed)
    limits, batches = serve_limits(model, None, None, None)
    return (lambda B: build_tables(model.with_batch(B, 1), cluster)), limits, batches


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("start", [None, 2, 5])
def test_pruned_search_keeps_the_best_and_a_valid_bound(seed: int, start: int | None) -> None:
    tables_at, limits, batches = _tables(seed)
    full = search(tables_at, batches, limits=limits)
    fast = search(tables_at, batches, limits=limits, prune=True, start=start)
    assert fast.best.serving.tokens_per_s == pytest.approx(full.best.serving.tokens_per_s, rel=1e-12)
    assert fast.upper_bound >= full.best.serving.tokens_per_s * (1 - 1e-12)
    assert fast.solves <= full.solves + 2  # the start batch may be searched once more, never much more
    assert fast.batches == sorted(fast.batches)


def test_sequence_cap_by_hand_and_above_every_plan() -> None:
    # 2 devices of 10 and 6 GB, 3 layers of 2 GB weights, 1 GB of KV per sequence in each layer:
    # Σ weights 6 GB, 3 GB per sequence: (16 − 6) / 3 = 3.33 sequences at most over any plan
    L, G = 3, 2
    t = CostTables(cost=np.ones((G, L)), memory_gb=np.full(L, 2.0), cut_bytes=np.zeros(L),
                   capacity_gb=np.array([10.0, 6.0]), latency_s=np.zeros((G, G)), bandwidth_Bps=np.full((G, G), np.inf),
                   layer_names=("a", "b", "c"), device_names=("x", "y"), gpu_names=("g", "g"), node_names=("n", "m"),
                   weight_gb=np.full(L, 2.0), kv_bytes_per_token=np.full(L, 1e9 / 100), context=100)
    assert sequence_cap(t) == pytest.approx(10.0 / 3.0, rel=1e-6)
    for devices, cuts in [((0, 1), (0, 2, 3)), ((0, 1), (0, 1, 3)), ((0,), (0, 3)), ((1, 0), (0, 1, 3))]:
        n = capacity(t, devices, cuts).max_sequences
        assert n is not None and n <= sequence_cap(t)
