"""Scoring a given layout: the same numbers as the planner's own plan of that layout, every
error path, and Helix's data converted and scored (skipped without ../shared)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from partitioner.deploy.layout import score_layout
from partitioner.deploy.plan import plan_deployment
from partitioner.errors import InputError
from partitioner.models.cluster import ClusterSpec
from partitioner.models.llm import ModelSpec

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("PARTITIONER_SHARED", ROOT / ".." / "shared"))
HELIX = SHARED / "data" / "helix"
sys.path.insert(0, str(ROOT / "examples" / "helix"))


def _setup() -> tuple[ModelSpec, ClusterSpec]:
    layers = [{"name": "layer", "repeat": 6, "cost": {"l4": 0.007, "l4x2": 0.0037, "a100-40gb": 0.0014},
               "memory_gb": 6.0, "out_bytes": 262144, "kv_bytes_per_token": 4096}]
    model = ModelSpec.model_validate({"name": "m", "layers": layers, "workload": {"batch": 8, "in_flight": 2}})
    devices = [{"name": "a", "gpu": "a100-40gb", "node": "n0"}, {"name": "l0", "gpu": "l4", "node": "n1"},
               {"name": "l1", "gpu": "l4", "node": "n1"}, {"name": "l2", "gpu": "l4", "node": "n2"}]
    cluster = ClusterSpec.model_validate({"devices": devices, "tp": [1, 2],
                                          "links": {"inter_node": {"latency_ms": 1.0, "bandwidth_gb_s": 0.125}}})
    return model, cluster


def test_a_planned_deployment_scores_to_its_own_numbers() -> None:
    model, cluster = _setup()
    dep = plan_deployment(model, cluster, replicas="auto", tp="auto")
    layout = {"replicas": [{"stages": [{"devices": list(st.members or (st.device,)), "layers": [st.start, st.end]}
                                       for st in p.stages]} for p in dep.replicas]}
    scored = score_layout(model, cluster, layout)
    assert scored.tokens_per_s == pytest.approx(dep.tokens_per_s, rel=1e-12)
    for a, b in zip(scored.replicas, dep.replicas, strict=True):
        assert a.serving.tpot_s == pytest.approx(b.serving.tpot_s, rel=1e-12)
        assert [st.tp for st in a.stages] == [st.tp for st in b.stages]
    assert scored.unused == dep.unused
    assert scored.to_dict()["upper_bound_tokens_per_s"] is None


def test_a_tp_layout_uses_the_measured_group_and_memory_is_checked() -> None:
    model, cluster = _setup()
    d = score_layout(model, cluster, [[{"devices": ["l0", "l1"], "layers": [0, 6]}]])
    assert d.replicas[0].stages[0].tp == 2 and d.replicas[0].stages[0].tau == pytest.approx(6 * 0.0037)
    over = score_layout(model, cluster, [[{"devices": ["l2"], "layers": [0, 6]}]])  # 36 GB on 23 GB
    assert not over.replicas[0].feasible and "stage 0 needs" in over.replicas[0].reason


@pytest.mark.parametrize(("layout", "message"), [
    ([], "non-empty list of replicas"),
    ([[{"devices": ["zz"], "layers": [0, 6]}]], "unknown device 'zz'"),
    ([[{"devices": ["a"], "layers": [0, 3]}, {"devices": ["a"], "layers": [3, 6]}]], "used twice"),
    ([[{"devices": ["a", "l0"], "layers": [0, 6]}]], "one node"),
    ([[{"devices": ["a"], "layers": [0, 3]}, {"devices": ["l2"], "layers": [4, 6]}]], r"expected \[3"),
    ([[{"devices": ["a"], "layers": [0, 5]}]], "the model has 6"),
    ([[{"layers": [0, 6]}]], "needs devices"),
])
def test_layout_errors(layout: object, message: str) -> None:
    model, cluster = _setup()
    with pytest.raises(InputError, match=message):
        score_layout(model, cluster, layout)


def test_chain_decomposition_by_hand() -> None:
    from helix_data import chains

    nodes = [("L4", 0, 5), ("L4", 0, 3), ("T4", 3, 8), ("T4", 5, 8), ("A100", 2, 6)]
    pipes, unused = chains(nodes, num_layers=8)
    # first: node 0 [0,5) then node 2 (contains 5, reaches 8; node 3 ties at 8, lower index wins)
    assert pipes[0] == [0, 2]
    # second: node 1 [0,3), node 4 contains 3 (reaches 6), node 3 contains 6
    assert pipes[1] == [1, 4, 3] and unused == []


@pytest.mark.skipif(not HELIX.is_dir(), reason="../shared/data/helix is absent")
def test_helix_clusters_and_layouts_convert() -> None:
    from helix_data import chains, cluster_yaml, layout, layout_for_cluster, profile_yaml

    ae = HELIX / "artifact_evaluation"
    c24 = cluster_yaml(ae / "single_cluster/config/cluster24.ini", "cluster24")
    gpus = [d["gpu"] for d in c24["devices"]]
    assert (gpus.count("a100-40gb"), gpus.count("l4"), gpus.count("t4")) == (4, 8, 12)
    c42 = ClusterSpec.model_validate(cluster_yaml(ae / "high_heterogeneity/config/cluster42.ini", "cluster42"))
    assert len(c42.devices) == 64 and len({d.node for d in c42.devices}) == 42
    model = ModelSpec.model_validate(profile_yaml(HELIX / "simulator/model_manager/llama2_70b"))
    assert {"l4x2", "t4x2", "t4x4", "a100-40gb", "v100"} <= set(model.layers[0].cost)
    d = ae / "single_cluster/layout_llama70b/separate"
    nodes = layout(d / "a100_solution_file.ini", d / "a100_simulator_cluster.ini")
    assert nodes == [("A100", 20 * i, 20 * i + 20) for i in range(4)]
    reps = layout_for_cluster(nodes, [[0, 1, 2, 3]], c24)
    scored = score_layout(model, ClusterSpec.model_validate(c24), {"replicas": [{"stages": reps[0]}]})
    assert scored.replicas[0].feasible and scored.tokens_per_s > 0
    sw = ae / "single_cluster/layout_llama70b/swarm"
    pipes, _ = chains(layout(sw / "swarm_sol.ini", sw / "simulator_cluster.ini"))
    assert pipes  # swarm's 4-layer spans give at least one disjoint chain over 80 layers
