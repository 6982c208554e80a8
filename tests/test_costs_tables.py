"""build_tables: shapes, names, links, profiles, and seeded property checks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from partitioner.costs import build_tables
from partitioner.costs.roofline import Hardware
from partitioner.costs.roofline import precision_bytes as base_bytes
from partitioner.models import ClusterSpec, ModelSpec
from partitioner.models.engines import resolve_engine

TWO_NODES = {
    "devices": [
        {"name": "a", "gpu": "rtx-3090", "node": "n1"},
        {"name": "b", "gpu": "rtx-3090", "node": "n1"},
        {"name": "c", "gpu": "t4", "node": "n2", "memory_gb": 10, "reserve_gb": 0.5},
    ],
    "links": {"intra_node": "pcie4", "inter_node": {"latency_ms": 2, "bandwidth_gb_s": 0.5}},
    "reserve_gb": 2,
}


def test_roofline_tables_layout():
    t = build_tables(ModelSpec(preset="llama-3.1-8b"), ClusterSpec.model_validate(TWO_NODES))
    assert t.cost.shape == (3, 34)
    assert t.layer_names[:2] == ("embed", "layer.0") and t.layer_names[-2:] == ("layer.31", "lm_head")
    assert t.layer_kinds == ("embed",) + ("decoder",) * 32 + ("head",)
    assert t.device_names == ("a", "b", "c") and t.gpu_names == ("rtx-3090", "rtx-3090", "t4")
    assert t.node_names == ("n1", "n1", "n2") and t.model_name == "Llama-3.1-8B"
    assert list(t.capacity_gb) == [22.0, 22.0, 9.5]
    assert t.cut_bytes[-1] == 0 and np.all(t.cut_bytes[:-1] == 1 * 4096 * 2 * 2)
    assert np.all(t.cost > 0) and np.all(t.memory_gb > 0)


def test_link_matrices_defaults_and_diagonal():
    t = build_tables(ModelSpec(preset="llama-3.1-8b"), ClusterSpec.model_validate(TWO_NODES))
    assert np.all(np.diag(t.latency_s) == 0) and np.all(np.isinf(np.diag(t.bandwidth_Bps)))
    hop = resolve_engine("generic").hop_overhead_ms / 1e3  # the engine's per-hop cost, on every link
    assert t.latency_s[0, 1] == pytest.approx(0.015e-3 + hop) and t.bandwidth_Bps[0, 1] == 25e9  # pcie4
    assert t.latency_s[0, 2] == pytest.approx(2e-3 + hop) and t.bandwidth_Bps[2, 0] == 0.5e9


def test_pairs_override_one_pair_and_its_reverse_unless_listed():
    data = dict(TWO_NODES, pairs=[
        {"from": "a", "to": "c", "latency_ms": 7, "bandwidth_gb_s": 3},
        {"from": "b", "to": "c", "latency_ms": 1, "bandwidth_gb_s": 1},
        {"from": "c", "to": "b", "latency_ms": 4, "bandwidth_gb_s": 2},
    ])
    t = build_tables(ModelSpec(preset="llama-3.1-8b"), ClusterSpec.model_validate(data))
    hop = resolve_engine("generic").hop_overhead_ms / 1e3
    assert (t.latency_s[0, 2], t.bandwidth_Bps[0, 2]) == (pytest.approx(7e-3 + hop), 3e9)
    assert (t.latency_s[2, 0], t.bandwidth_Bps[2, 0]) == (pytest.approx(7e-3 + hop), 3e9)  # reverse
    assert (t.latency_s[1, 2], t.latency_s[2, 1]) == (pytest.approx(1e-3 + hop), pytest.approx(4e-3 + hop))


def test_profile_repeat_names_and_device_name_wins():
    model = ModelSpec.model_validate({"layers": [
        {"name": "emb", "kind": "embed", "cost": {"rtx-3090": 0.001, "t4": 0.002}, "memory_gb": 1.5, "params": 10},
        {"name": "blk", "repeat": 3, "cost": {"rtx-3090": 0.01, "b": 0.5, "t4": 0.02}, "memory_gb": 2, "out_bytes": 64},
    ]})
    t = build_tables(model, ClusterSpec.model_validate(TWO_NODES))
    assert t.layer_names == ("emb", "blk.0", "blk.1", "blk.2")
    assert t.layer_kinds == ("embed", "decoder", "decoder", "decoder")
    np.testing.assert_allclose(t.cost[:, 1], [0.01, 0.5, 0.02])
    np.testing.assert_allclose(t.cost[:, 0], [0.001, 0.001, 0.002])
    assert list(t.memory_gb) == [1.5, 2, 2, 2] and list(t.cut_bytes) == [0, 64, 64, 64]
    assert list(t.params) == [10, 0, 0, 0] and t.tied_gb == 0.0


_WORKLOAD = st.fixed_dictionaries({
    "batch": st.integers(1, 64),
    "prompt_tokens": st.integers(1, 4096),
    "in_flight": st.integers(1, 8),
    "phase": st.sampled_from(["decode", "prefill"]),
    "weights": st.sampled_from(["bf16", "fp8", "int4", 4.85]),
})


@settings(max_examples=40)
@given(w=_WORKLOAD, preset=st.sampled_from(["llama-3.1-8b", "mixtral-8x7b", "qwen2.5-7b", "llama-3.2-1b"]))
def test_more_work_never_costs_less(w, preset):
    """Monotone in batch and context; every time at least the fixed overhead; memory additive."""
    cluster = ClusterSpec.model_validate(TWO_NODES)
    w = dict(w, context=w["prompt_tokens"] + 100)
    base = build_tables(ModelSpec(preset=preset, workload=w), cluster)
    bigger = build_tables(ModelSpec(preset=preset, workload=dict(w, batch=w["batch"] + 1, context=w["context"] * 2)), cluster)
    assert np.all(bigger.cost >= base.cost * (1 - 1e-12))
    assert np.all(bigger.memory_gb >= base.memory_gb)
    assert np.all(base.cost > 0)
    # the per-token fixed cost rides on the LM head, once per pipeline
    assert np.all(base.cost[:, -1] >= [Hardware.of(d.spec, 8 * base_bytes(w["weights"]), None).t_token for d in cluster.devices])
    assert np.all(np.isfinite(base.cost)) and np.all(base.cut_bytes >= 0)
    # a card with more bandwidth and compute (same family defaults) is never slower
    fast = ClusterSpec(devices=[{"name": "x", "gpu": "h100-sxm"}, {"name": "y", "gpu": "a100-40gb"}])
    t = build_tables(ModelSpec(preset=preset, workload=w), fast)
    assert np.all(t.cost[0] <= t.cost[1])
