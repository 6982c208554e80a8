"""Seeded random small instances for the dp tests (G <= 4, L <= 7): unrelated costs, some
devices of equal type, random links (some shared), memory limits that bind, tied embeddings."""

from __future__ import annotations

import numpy as np

from partitioner.problem import CostTables

__all__ = ["small_tables"]


def small_tables(seed: int, G: int | None = None, L: int | None = None) -> CostTables:
    rng = np.random.default_rng(seed)
    G = G or int(rng.integers(1, 5))
    L = L or int(rng.integers(1, 8))
    types = int(rng.integers(1, G + 1))
    type_of = rng.integers(0, types, size=G)
    integral = rng.random() < 0.4  # integer costs make exact ties (the lexicographic steps matter)
    base = rng.integers(1, 6, size=(types, L)).astype(float) if integral else rng.uniform(0.1, 2.0, (types, L))
    cost = base[type_of]
    mem = rng.uniform(0.5, 1.5, size=L)
    caps = rng.uniform(0.35, 1.6, size=types)[type_of] * mem.sum()
    lat_levels = rng.choice([0.0, 0.2, 1.0, 3.0], size=(G, G)) if rng.random() < 0.5 else np.full((G, G), 0.5)
    bw = rng.choice([1.0, 4.0, np.inf], size=(G, G))
    if rng.random() < 0.5:  # symmetric, type-based links: equal devices stay interchangeable
        lat_levels = np.full((G, G), float(rng.choice([0.1, 1.0])))
        bw = np.full((G, G), 2.0)
    np.fill_diagonal(lat_levels, 0.0)
    np.fill_diagonal(bw, np.inf)
    return CostTables(
        cost=cost,
        memory_gb=mem,
        cut_bytes=rng.integers(0, 4, size=L).astype(float),
        capacity_gb=caps,
        latency_s=lat_levels,
        bandwidth_Bps=bw,
        layer_names=tuple(f"l{i}" for i in range(L)),
        device_names=tuple(f"d{g}" for g in range(G)),
        gpu_names=tuple(f"t{t}" for t in type_of),
        node_names=("n",) * G,
        tied_gb=float(rng.choice([0.0, 0.0, mem[0] * 0.8])) if L > 1 else 0.0,
    )
