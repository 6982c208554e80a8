"""Several replicas inside one machine (partitioner.deploy.split, and on small clusters GPU sets,
partitioner.deploy.units): on a one-node cluster every partition of its GPUs into disjoint
pipelines (unused GPUs allowed) is searched, so the plan agrees with a seeded brute force over
all device partitions; with small machines beside it as well."""

from __future__ import annotations

import random

import pytest
from test_replicas_exact import _brute

from partitioner.deploy.plan import plan_deployment
from partitioner.models.cluster import ClusterSpec
from partitioner.models.llm import ModelSpec


def _instance(seed: int, nodes: int = 1) -> tuple[ModelSpec, ClusterSpec]:
    rng = random.Random(seed)
    kinds = rng.sample(["a100-40gb", "l4", "t4"], rng.choice([2, 3]))
    base = {"a100-40gb": 1.4e-3, "l4": 7.0e-3, "t4": 7.5e-3}
    layers = [{"name": "layer", "repeat": rng.randint(4, 6), "cost": {k: base[k] * rng.uniform(0.6, 1.4) for k in base},
               "memory_gb": rng.uniform(3, 9), "out_bytes": 262144, "kv_bytes_per_token": 4096}]
    model = ModelSpec.model_validate({"name": "rand", "layers": layers,
                                      "workload": {"batch": 8, "in_flight": rng.choice([1, 2, 4]), "context": 1024}})
    devices = []
    for n in range(nodes):
        devices += [{"name": f"m{n}g{i}", "gpu": rng.choice(kinds), "node": f"m{n}"}
                    for i in range(rng.randint(4, 6) if n == 0 else rng.randint(1, 2))]
    links = {"intra_node": "pcie4", "inter_node": {"latency_ms": 1.0, "bandwidth_gb_s": 0.125}}
    return model, ClusterSpec.model_validate({"devices": devices, "links": links, "tp": [1]})


@pytest.mark.parametrize("units", ["gpus", "nodes"])
@pytest.mark.parametrize("seed", range(6))
def test_one_machine_split_agrees_with_brute_force(seed: int, units: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Over GPU sets, and over whole nodes with the lone machine's exact packing (deploy.split,
    what clusters of more than MAX_UNIT_VECTORS GPU sets search)."""
    from partitioner.deploy import units as unit_module

    if units == "nodes":
        monkeypatch.setattr(unit_module, "MAX_UNIT_VECTORS", 0)
    model, cluster = _instance(seed)
    want = _brute(model, cluster, None)
    d = plan_deployment(model, cluster, replicas="auto", tp="off")
    assert d.tokens_per_s == pytest.approx(want, rel=1e-9)
    assert d.upper_bound_tokens_per_s >= want * (1 - 1e-9)
    used = [st.device for p in d.replicas for st in p.stages]
    assert len(used) == len(set(used))
    assert sorted(d.unused) == sorted(x.name for x in cluster.devices if x.name not in used)


@pytest.mark.parametrize("seed", range(4))
def test_split_with_whole_node_replicas(seed: int) -> None:
    """A big node and 1-2 small ones (at most 63 GPU sets, so the search runs over GPU sets,
    partitioner.deploy.units): it agrees with the brute force over every partition of the GPUs,
    which is never below the family of whole nodes or parts of one node."""
    model, cluster = _instance(seed, nodes=3)
    node = [x.node for x in cluster.devices]

    def in_family(part: list[int]) -> bool:
        nodes = {node[g] for g in part}
        whole = all(sum(1 for h in range(len(node)) if node[h] == n) == sum(1 for g in part if node[g] == n)
                    for n in nodes)
        return len(nodes) == 1 or whole

    family = _brute(model, cluster, None, in_family)
    want = _brute(model, cluster, None)
    assert want >= family * (1 - 1e-12)
    d = plan_deployment(model, cluster, replicas="auto", tp="off")
    assert d.tokens_per_s == pytest.approx(want, rel=1e-9)
