"""Synthetic heterogeneous instances for the benchmarks (algorithms.md §7).

No public benchmark has per-GPU-type cost tables, so, as algorithms.md recommends, costs are
synthesised as c[g][l] = w_l / s_type(g) x noise in [0.8, 1.25] ("unrelated" machines), with
memory limits that bind and alpha-beta links that differ within and across nodes.
"""

from __future__ import annotations

import numpy as np

from partitioner.problem import CostTables, Problem

__all__ = ["random_tables", "random_problem"]


def random_tables(
    L: int, G: int, types: int, seed: int = 0, *, noise: bool = True, per_node: int = 4, distinct: bool = False
) -> CostTables:
    """L layers on G devices of `types` GPU types, `per_node` devices per node (uniform links
    inside a node and one uniform inter-node link); `distinct`: every ordered pair of devices
    gets its own random link (no two devices interchangeable)."""
    rng = np.random.default_rng(seed)
    type_of = np.sort(rng.integers(0, types, size=G))
    type_of[:types] = np.arange(types)[: min(types, G)]
    type_of = np.sort(type_of)
    speed = np.exp(rng.uniform(0, np.log(8), size=types))  # up to 8x between types
    w = rng.uniform(0.5, 1.5, size=L) * 1e-3
    jitter = rng.uniform(0.8, 1.25, size=(types, L)) if noise else np.ones((types, L))
    cost = (w / speed[:, None] * jitter)[type_of]
    mem = rng.uniform(0.8, 1.2, size=L)
    cap_type = rng.uniform(1.5, 3.0, size=types) * mem.sum() / max(G, 1) * 1.2
    node = np.arange(G) // per_node
    same = node[:, None] == node[None, :]
    latency = np.where(same, 10e-6, 50e-6)
    bandwidth = np.where(same, 25e9, 3e9)
    if distinct:
        latency = latency * rng.uniform(0.5, 2.0, size=(G, G))
        bandwidth = bandwidth * rng.uniform(0.5, 2.0, size=(G, G))
    np.fill_diagonal(latency, 0.0)
    bandwidth = bandwidth.astype(float)
    np.fill_diagonal(bandwidth, np.inf)
    return CostTables(
        cost=cost,
        memory_gb=mem,
        cut_bytes=np.full(L, 2 * 4096 * 2 * 8.0),
        capacity_gb=cap_type[type_of],
        latency_s=latency,
        bandwidth_Bps=bandwidth,
        layer_names=tuple(f"layer.{i}" for i in range(L)),
        device_names=tuple(f"g{g}" for g in range(G)),
        gpu_names=tuple(f"type{t}" for t in type_of),
        node_names=tuple(f"node{n}" for n in node),
        params=np.ones(L),
    )


def random_problem(
    L: int, G: int, types: int, seed: int = 0, *, per_node: int = 4, distinct: bool = False, **options: object
) -> Problem:
    tables = random_tables(L, G, types, seed, per_node=per_node, distinct=distinct)
    return Problem(tables, **options)  # type: ignore[arg-type]
