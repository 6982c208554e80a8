"""`--replicas N` is exactly N replicas (partitioner.deploy.units): on small clusters (2-6 GPUs on
1-3 hosts) the answer has N replicas and its tokens/s equals a seeded brute force over every
partition of the GPUs into N parts (some unused; a part may be part of a machine or span
machines), each part valued by the same per-replica planner."""

from __future__ import annotations

import math
import random

import pytest
from test_replicas_exact import _brute

from partitioner.deploy.plan import plan_deployment
from partitioner.errors import InfeasibleError
from partitioner.models.cluster import ClusterSpec
from partitioner.models.llm import ModelSpec


def _instance(seed: int) -> tuple[ModelSpec, ClusterSpec]:
    rng = random.Random(seed)
    kinds = rng.sample(["a100-40gb", "l4", "t4"], rng.choice([1, 2, 3]))
    base = {"a100-40gb": 1.4e-3, "l4": 7.0e-3, "t4": 7.5e-3}
    layers = [{"name": "layer", "repeat": rng.randint(3, 5), "cost": {k: base[k] * rng.uniform(0.6, 1.4) for k in base},
               "memory_gb": rng.uniform(3, 12), "out_bytes": 262144, "kv_bytes_per_token": 4096}]
    model = ModelSpec.model_validate({"name": "rand", "layers": layers,
                                      "workload": {"batch": 8, "in_flight": rng.choice([1, 2, 4]), "context": 1024}})
    hosts = rng.randint(1, 3)
    gpus = rng.randint(max(2, hosts), 6)
    on = sorted(rng.randrange(hosts) for _ in range(gpus - hosts)) + list(range(hosts))  # every host has one
    devices = [{"name": f"h{h}g{i}", "gpu": rng.choice(kinds), "node": f"h{h}"} for i, h in enumerate(sorted(on))]
    links = {"intra_node": "pcie4", "inter_node": {"latency_ms": 1.0, "bandwidth_gb_s": 0.125}}
    return model, ClusterSpec.model_validate({"devices": devices, "links": links, "tp": [1]})


@pytest.mark.parametrize("seed", range(10))
def test_fixed_count_is_exactly_n_and_the_best_such(seed: int) -> None:
    model, cluster = _instance(seed)
    for n in (2, 3):
        want = _brute(model, cluster, n)
        if not math.isfinite(want):
            with pytest.raises(InfeasibleError, match=f"cannot hold {n} replicas"):
                plan_deployment(model, cluster, replicas=n, tp="off")
            continue
        d = plan_deployment(model, cluster, replicas=n, tp="off")
        assert len(d.replicas) == n
        assert d.tokens_per_s == pytest.approx(want, rel=1e-9)
        assert d.upper_bound_tokens_per_s >= want * (1 - 1e-9)
        used = [st.device for p in d.replicas for st in p.stages]
        assert len(used) == len(set(used))  # disjoint
        assert sorted(used + list(d.unused)) == sorted(x.name for x in cluster.devices)


def test_two_replicas_share_one_machine() -> None:
    """Two 2-GPU replicas on one 4-GPU machine, where the whole machine as one vector held
    both as a single unit of the count: N = 2 is now the 2 + 2 split, as N = auto finds."""
    layers = [{"name": "layer", "repeat": 4, "cost": {"l4": 0.007}, "memory_gb": 10.0, "out_bytes": 262144}]
    model = ModelSpec.model_validate({"name": "m", "layers": layers, "workload": {"batch": 8}})
    cluster = ClusterSpec.model_validate({"devices": [{"name": f"l{i}", "gpu": "l4", "node": "box"} for i in range(4)],
                                          "links": {"intra_node": "pcie4"}, "tp": [1]})
    auto = plan_deployment(model, cluster, replicas="auto", tp="off")
    two = plan_deployment(model, cluster, replicas=2, tp="off")
    assert len(auto.replicas) == len(two.replicas) == 2
    assert two.tokens_per_s == pytest.approx(auto.tokens_per_s, rel=1e-9)
    assert [[st.ordinal for st in p.stages] for p in two.replicas] == [[0, 1], [2, 3]]  # each on its own GPUs
    with pytest.raises(InfeasibleError, match="cannot hold 3 replicas"):
        plan_deployment(model, cluster, replicas=3, tp="off")


def test_a_replica_across_part_of_a_machine() -> None:
    """3 GPUs on one host and 1 on another, a model needing two cards: the second replica is one
    card of the big host with the lone card of the other (neither a whole-node union nor a part
    of one node)."""
    layers = [{"name": "layer", "repeat": 4, "cost": {"l4": 0.007}, "memory_gb": 10.0, "out_bytes": 262144}]
    model = ModelSpec.model_validate({"name": "m", "layers": layers, "workload": {"batch": 8}})
    devices = [{"name": f"a{i}", "gpu": "l4", "node": "a"} for i in range(3)] + [{"name": "b0", "gpu": "l4", "node": "b"}]
    cluster = ClusterSpec.model_validate({"devices": devices, "tp": [1], "links": {
        "intra_node": "pcie4", "inter_node": {"latency_ms": 1.0, "bandwidth_gb_s": 0.125}}})
    d = plan_deployment(model, cluster, replicas=2, tp="off")
    assert len(d.replicas) == 2 and not d.unused
    assert sorted(len({st.node for st in p.stages}) for p in d.replicas) == [1, 2]
    assert d.tokens_per_s == pytest.approx(_brute(model, cluster, 2), rel=1e-9)


@pytest.mark.parametrize("seed", range(3))
def test_fixed_count_with_machines_as_tp_groups(seed: int) -> None:
    """`--tp node`: a replica's GPUs on one machine are one TP group (the whole machine, or a
    degree it allows); brute force over the partitions whose parts keep to that."""
    from test_replicas_exact import _best_partition

    from partitioner import solvers
    from partitioner.costs import build_tables
    from partitioner.deploy.plan import replica_planner
    from partitioner.problem import Problem

    rng = random.Random(seed)
    layers = [{"name": "layer", "repeat": 4, "cost": {"l4": 0.007 * rng.uniform(0.8, 1.2), "l4x2": 0.004,
                                                      "l4x3": 0.003}, "memory_gb": rng.uniform(6, 10),
               "out_bytes": 262144}]
    model = ModelSpec.model_validate({"name": "m", "layers": layers, "workload": {"batch": 8}})
    sizes = [rng.choice([2, 3]), rng.choice([1, 2])]
    devices = [{"name": f"h{h}g{i}", "gpu": "l4", "node": f"h{h}"} for h, k in enumerate(sizes) for i in range(k)]
    cluster = ClusterSpec.model_validate({"devices": devices, "tp": [1, 2], "links": {
        "intra_node": "pcie4", "inter_node": {"latency_ms": 1.0, "bandwidth_gb_s": 0.125}}})
    node = [d.node for d in cluster.devices]
    planner = replica_planner(model, cluster, base=build_tables(model, cluster), make=lambda t: Problem(t, M=8),
                              solve=lambda p: solvers.solve(p, "auto"), tp="node", sizes=None, M=8)

    def v(part: list[int]) -> float:
        try:
            return float(planner(sorted(part)).serving.tokens_per_s)
        except InfeasibleError:
            return 0.0

    def allowed(part: list[int]) -> bool:
        return all(sum(1 for g in part if node[g] == n) in (0, 1, 2, node.count(n)) for n in set(node))

    want = _best_partition(len(devices), 2, v, allowed)
    if not math.isfinite(want):
        with pytest.raises(InfeasibleError, match="cannot hold 2 replicas"):
            plan_deployment(model, cluster, replicas=2, tp="node")
        return
    d = plan_deployment(model, cluster, replicas=2, tp="node")
    assert len(d.replicas) == 2
    assert d.tokens_per_s == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("replicas", [2, "auto"])
def test_relabelled_replica_maps_gpus_by_kind(replicas: int | str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two machines of one node kind that list their cards in different orders ([4090, 3090] and
    [3090, 4090]): the second replica reuses the first one's plan moved onto the other machine
    (whole nodes: GPU units switched off), and each stage lands on a card of the GPU it was planned
    for, with that card's listed position as its ordinal (a positional map sent the 4090's layers
    to the 3090)."""
    from partitioner.deploy import units

    monkeypatch.setattr(units, "MAX_UNIT_VECTORS", 1)
    layers = [{"name": "layer", "repeat": 8, "cost": {"rtx-4090": 0.004, "rtx-3090": 0.009}, "memory_gb": 3.5,
               "out_bytes": 262144}]
    model = ModelSpec.model_validate({"name": "m", "layers": layers, "workload": {"batch": 8}})
    devices = [{"name": "a0", "gpu": "rtx-4090", "node": "a"}, {"name": "a1", "gpu": "rtx-3090", "node": "a"},
               {"name": "b0", "gpu": "rtx-3090", "node": "b"}, {"name": "b1", "gpu": "rtx-4090", "node": "b"}]
    cluster = ClusterSpec.model_validate({"devices": devices, "tp": [1], "links": {
        "intra_node": "pcie4", "inter_node": {"latency_ms": 1.0, "bandwidth_gb_s": 0.125}}})
    d = plan_deployment(model, cluster, replicas=replicas, tp="off")
    assert len(d.replicas) == 2 and not d.unused
    gpu = {x.name: x.gpu_id for x in cluster.devices}
    listed = {x.name: [y.name for y in cluster.devices if y.node == x.node].index(x.name) for x in cluster.devices}
    for p in d.replicas:
        assert len({st.node for st in p.stages}) == 1
        for st in p.stages:
            assert st.gpu == gpu[st.device] and st.ordinal == listed[st.device]
    a, b = ({st.gpu: st.end - st.start for st in p.stages} for p in d.replicas)
    assert a == b and a["rtx-4090"] > a["rtx-3090"]  # the same plan on each machine
