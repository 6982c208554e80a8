"""Interchangeable device classes where the links allow them (dp.tables.device_classes)."""

from __future__ import annotations

import numpy as np

from partitioner.problem import CostTables, Problem
from partitioner.solvers import dp
from partitioner.solvers.dp.tables import device_classes


def cluster(node: list[int], gpu: list[int], override: tuple[int, int] | None = None) -> CostTables:
    G, L = len(node), 6
    n = np.array(node)
    same = n[:, None] == n[None, :]
    lat = np.where(same, 1e-5, 5e-5)
    bw = np.where(same, 2.5e10, 3e9)
    if override is not None:  # one pair of nodes gets its own, faster link
        a, b = override
        pair = ((n[:, None] == a) & (n[None, :] == b)) | ((n[:, None] == b) & (n[None, :] == a))
        lat = np.where(pair, 2e-5, lat)
    np.fill_diagonal(lat, 0.0)
    bw = bw.astype(float)
    np.fill_diagonal(bw, np.inf)
    cost = np.array([[1.0 + 0.5 * k] * L for k in gpu])
    return CostTables(
        cost=cost, memory_gb=np.ones(L), cut_bytes=np.full(L, 1e5), capacity_gb=np.full(G, 4.0),
        latency_s=lat, bandwidth_Bps=bw, layer_names=tuple(f"l{i}" for i in range(L)),
        device_names=tuple(f"d{g}" for g in range(G)), gpu_names=tuple(f"t{k}" for k in gpu),
        node_names=tuple(f"n{k}" for k in node),
    )


def test_same_gpu_on_separate_nodes_with_one_uniform_link_is_one_class() -> None:
    t = cluster(node=[0, 1, 2, 3], gpu=[0, 0, 0, 1])
    assert device_classes(t, links=True) == [[0, 1, 2], [3]]


def test_several_devices_per_node_group_by_node_and_gpu() -> None:
    # two nodes of two GPUs of one type: swapping GPUs across nodes changes who is local
    t = cluster(node=[0, 0, 1, 1], gpu=[0, 0, 0, 0])
    assert device_classes(t, links=True) == [[0, 1], [2, 3]]


def test_a_pair_override_splits_only_the_classes_it_touches() -> None:
    # nodes 0..3 each hold one GPU of type 0, node 4 one of type 1; a faster link joins nodes 0 and 1
    t = cluster(node=[0, 1, 2, 3, 4], gpu=[0, 0, 0, 0, 1], override=(0, 1))
    assert device_classes(t, links=True) == [[0, 1], [2, 3], [4]]


def test_interchangeability_keeps_free_order_exact_and_in_the_dp() -> None:
    t = cluster(node=list(range(12)), gpu=[0] * 6 + [1] * 6)
    p = Problem(t, order="free")
    assert len(device_classes(t, links=True)) == 2 and dp.applies(p)
    assert dp.solve(p).optimal
