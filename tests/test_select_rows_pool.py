"""`select_rows` (partitioner.problem) under an engine KV pool (`engine: vllm` in cluster.yaml):
the pool is sized per row, so a sub-cluster (a replica, a TP-group configuration, a stage-capped
solve) must see its own rows' memory. A plan on the sub-tables has the same KV capacity as the
same plan on the whole cluster's tables with the rows mapped back."""

from __future__ import annotations

import pytest

from partitioner.costs import build_tables
from partitioner.deploy.plan import plan_deployment
from partitioner.models.cluster import ClusterSpec
from partitioner.models.llm import ModelSpec
from partitioner.problem import select_rows
from partitioner.serving.capacity import capacity

_GPUS = ["a100-80gb", "l4", "t4", "a100-40gb"]


def _pair() -> tuple[ModelSpec, ClusterSpec]:
    model = ModelSpec.model_validate({"preset": "llama-3.1-8b",
                                      "workload": {"weights": "bf16", "batch": 8, "in_flight": 2, "context": 4096}})
    devices = [{"name": f"d{i}", "gpu": g, "node": f"n{i}"} for i, g in enumerate(_GPUS)]
    cluster = ClusterSpec.model_validate({"devices": devices, "engine": "vllm", "links": {
        "intra_node": "pcie4", "inter_node": {"latency_ms": 0.5, "bandwidth_gb_s": 1.25}}})
    return model, cluster


@pytest.mark.parametrize("rows", [[1], [2, 0], [3, 1], [1, 2, 3]])
def test_sub_tables_size_their_own_pool(rows: list[int]) -> None:
    model, cluster = _pair()
    full = build_tables(model, cluster)
    assert full.kv_pool is not None
    sub = select_rows(full, rows)
    cuts = tuple(round(i * full.L / len(rows)) for i in range(len(rows) + 1))
    got = capacity(sub, tuple(range(len(rows))), cuts)
    want = capacity(full, tuple(rows), cuts)
    assert got.kv_tokens == want.kv_tokens and got.max_sequences == want.max_sequences
    assert got.stage_kv_tokens == want.stage_kv_tokens


def test_each_replica_sized_on_its_own_gpus() -> None:
    """Two replicas under vLLM's pool: each one's KV capacity is that of its own GPUs."""
    model, cluster = _pair()
    full = build_tables(model, cluster)
    d = plan_deployment(model, cluster, replicas=2, tp="off")
    index = {dev.name: g for g, dev in enumerate(cluster.devices)}
    for p in d.replicas:
        devices = tuple(index[st.device] for st in p.stages)
        cuts = (*(st.start for st in p.stages), p.stages[-1].end)
        assert p.serving.kv_tokens == capacity(full, devices, cuts).kv_tokens


@pytest.mark.parametrize("order", [[1, 3], [2, 0, 1]])
def test_engine_order_restrict_keeps_pool_and_serving_fields(order: list[int]) -> None:
    """`engine_order.restrict` (the fixed-order sub-problem of `plan --engine`) keeps the workload
    and sizes the engine's pool on its own rows, as select_rows does."""
    from partitioner.problem import Problem
    from partitioner.solvers import engine_order

    model, cluster = _pair()
    full = build_tables(model, cluster)
    sub = engine_order.restrict(Problem(full, M=2), order)
    assert sub.order == "fixed"
    t = sub.tables
    assert t.kv_pool is not None and t.prefill_cost is not None and t.weight_gb is not None
    assert (t.batch, t.in_flight, t.context, t.engine_id) == (full.batch, full.in_flight, full.context, full.engine_id)
    cuts = tuple(round(i * full.L / len(order)) for i in range(len(order) + 1))
    got = capacity(t, tuple(range(len(order))), cuts)
    assert got.kv_tokens == capacity(full, tuple(order), cuts).kv_tokens
    assert t.device_names == tuple(full.device_names[g] for g in order)
