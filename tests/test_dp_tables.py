"""The DP's arrays (`dp.tables`) against their definitions: interval costs and memory fit per
stage (`problem.stage_memory`, `Metrics.fits`), link ids numbered by first appearance."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import KINDS, instance

from partitioner.problem import RTOL, stage_memory
from partitioner.solvers.dp import tables


@pytest.mark.parametrize("seed", range(40))
def test_interval_costs_and_link_ids_match_their_definitions(seed: int) -> None:
    t, _ = instance(seed, KINDS[seed % len(KINDS)])
    T = tables.build_tables.__wrapped__(t)  # (uncached)
    L, G = t.L, t.G
    for g in range(G):
        C = T.C[int(T.cost_id[g])]
        for i in range(L + 1):
            for j in range(L + 1):
                fits = j > i and stage_memory(t, i, j) <= float(t.capacity_gb[g]) * (1 + RTOL) + 1e-12
                want = float(np.sum(t.cost[g, i:j])) if fits else np.inf
                assert C[i, j] == pytest.approx(want, rel=1e-12, abs=1e-15) if fits else np.isinf(C[i, j])
    seen: dict[tuple[float, float], int] = {}
    for g in range(G):
        for h in range(G):
            if g != h:
                key = (float(t.latency_s[g, h]), float(t.bandwidth_Bps[g, h]))
                assert int(T.link_id[g, h]) == seen.setdefault(key, len(seen))
                assert np.array_equal(T.delay(g, h), tables._delay_vector(t, g, h))


@pytest.mark.parametrize("seed", range(40))
def test_successor_links_are_the_distinct_links_to_later_devices(seed: int) -> None:
    t, _ = instance(seed, KINDS[seed % len(KINDS)])
    T = tables.build_tables.__wrapped__(t)
    for u in range(t.G):
        assert T.successor_links(u) == sorted({int(T.link_id[u, h]) for h in range(u + 1, t.G)})
