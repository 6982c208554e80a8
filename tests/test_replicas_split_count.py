"""`--replicas N` above the GPU-set limit (partitioner.deploy.units): the fixed count searches whole
machines and machines cut into equal parts, so N replicas come out whenever the parts can hold
them (4 machines of 8 GPUs, `--replicas 8` and `16`); the answer is the best of that family (a
brute force over the same family agrees), never above the best over every partition of the GPUs,
whose value the stated upper bound covers, and proven only where parts of one GPU were searched
(then it equals that brute force). The limit is lowered in the test to keep the instances small."""

from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_export_replica_count import _gpus, _port
from test_replicas_exact import _best_partition

from partitioner.cli import main
from partitioner.deploy import units
from partitioner.deploy.plan import plan_deployment
from partitioner.errors import InfeasibleError
from partitioner.export import render
from partitioner.models.cluster import ClusterSpec
from partitioner.models.llm import ModelSpec

MODEL = "name: small\nlayers: [{name: layer, repeat: 4, cost: {l4: 0.007}, memory_gb: 2.0, out_bytes: 262144}]\n" \
        "workload: {batch: 8}\n"


@pytest.mark.parametrize("n", [8, 16])
def test_four_hosts_of_eight_give_exactly_n(tmp_path: Path, n: int) -> None:
    """6,561 GPU sets: --replicas 8 and 16 split the machines (whole machines give 4 at most), not
    proven, with a finite upper bound; the exports launch N replicas on disjoint GPUs and ports."""
    model, cluster, out = tmp_path / "m.yaml", tmp_path / "c.yaml", tmp_path / "plan.json"
    model.write_text(MODEL)
    rows = [f"  - {{name: h{h}-{i}, gpu: l4, node: h{h}}}\n" for h in range(4) for i in range(8)]
    cluster.write_text("devices:\n" + "".join(rows) + "links: {intra_node: pcie4, inter_node: 10gbe}\n")
    r = CliRunner().invoke(main, ["plan", str(model), str(cluster), "--replicas", str(n), "--json", "--out", str(out)])
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    assert doc["serving"]["replicas"] == len(doc["replicas"]) == n
    devices = [name for rep in doc["replicas"] for st in rep["stages"] for name in st.get("devices", [st["device"]])]
    assert len(devices) == len(set(devices))
    total, upper = doc["serving"]["tokens_per_s"], doc["upper_bound_tokens_per_s"]
    assert doc["optimal"] is False and upper is not None and math.isfinite(upper) and upper >= total > 0
    assert doc["gap"] == pytest.approx((upper - total) / upper, rel=1e-6)
    for target in ("vllm", "llamacpp"):
        steps = [s for s in render(doc, target).steps if re.fullmatch(r"r\d+", s.tag)]
        assert len({s.tag for s in steps}) == n, target
        for host in {s.host for s in steps}:
            on = [s for s in steps if s.host == host]
            gpus = [g for tag in {s.tag for s in on} for g in set().union(*(_gpus(s) for s in on if s.tag == tag))]
            assert len(gpus) == len(set(gpus)), (target, host)
            ports = [p for tag in {s.tag for s in on} for p in {_port(s) for s in on if s.tag == tag} if p]
            assert len(ports) == len(set(ports)), (target, host)


def _instance(seed: int) -> tuple[ModelSpec, ClusterSpec]:
    rng = random.Random(seed)
    base = {"a100-40gb": 1.4e-3, "l4": 7.0e-3, "t4": 7.5e-3}
    layers = [{"name": "layer", "repeat": rng.randint(3, 5), "cost": {k: base[k] * rng.uniform(0.6, 1.4) for k in base},
               "memory_gb": rng.uniform(3, 10), "out_bytes": 262144, "kv_bytes_per_token": 4096}]
    model = ModelSpec.model_validate({"name": "rand", "layers": layers,
                                      "workload": {"batch": 8, "in_flight": rng.choice([1, 2]), "context": 1024}})
    devices = [{"name": f"h{h}g{i}", "gpu": gpu, "node": f"h{h}"}
               for h, (gpu, k) in enumerate([(rng.choice(["l4", "t4"]), 4), (rng.choice(["l4", "t4", "a100-40gb"]), 2)])
               for i in range(k)]
    links = {"intra_node": "pcie4", "inter_node": {"latency_ms": 1.0, "bandwidth_gb_s": 0.125}}
    return model, ClusterSpec.model_validate({"devices": devices, "links": links, "tp": [1]})


def _values(model: ModelSpec, cluster: ClusterSpec):  # type: ignore[no-untyped-def]
    from partitioner import solvers
    from partitioner.costs import build_tables
    from partitioner.deploy.plan import replica_planner
    from partitioner.problem import Problem

    planner = replica_planner(model, cluster, base=build_tables(model, cluster), make=lambda t: Problem(t, M=8),
                              solve=lambda p: solvers.solve(p, "auto"), tp="off", sizes=(1,), M=8)
    memo: dict[frozenset[int], float] = {}

    def v(devs: list[int]) -> float:
        key = frozenset(devs)
        if key not in memo:
            try:
                memo[key] = float(planner(sorted(devs)).serving.tokens_per_s)
            except InfeasibleError:
                memo[key] = 0.0
        return memo[key]

    return v


def _over(items: list[list[int]], n: int, v) -> float:  # type: ignore[no-untyped-def]
    """The best partition of `items` (each a list of GPUs) into n replicas."""
    return _best_partition(len(items), n, lambda part: v([g for i in part for g in items[i]]))


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("exhaustive", [True, False])
def test_split_family_agrees_with_brute_force(seed: int, n: int, exhaustive: bool,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A 4-GPU and a 2-GPU machine: 15 GPU sets, above a limit lowered to 1. With parts of one GPU
    in the family (`exhaustive`) the answer is the best over every partition; without (at most 6
    vectors per member: whole machines and the 4-GPU machine in pairs; a cut into 3 + 1 is 8) it
    is the best over that family, and the best over every partition lies between it and its upper
    bound."""
    monkeypatch.setattr(units, "MAX_UNIT_VECTORS", 1)
    if not exhaustive:
        monkeypatch.setattr(units, "MAX_SPLIT_VECTORS", 6)
    model, cluster = _instance(seed)
    v = _values(model, cluster)
    everything = _over([[g] for g in range(6)], n, v)
    family = max(_over([[0, 1, 2, 3], [4, 5]], n, v), _over([[0, 1], [2, 3], [4, 5]], n, v))
    want = everything if exhaustive else family
    if not math.isfinite(want):  # "cannot hold" only where proven, else "not proven"
        from partitioner.deploy.plan import SearchStopped

        proven = exhaustive or not math.isfinite(everything)
        with pytest.raises((InfeasibleError, SearchStopped) if proven else SearchStopped) as err:
            plan_deployment(model, cluster, replicas=n, tp="off")
        assert exhaustive <= isinstance(err.value, InfeasibleError)
        return
    d = plan_deployment(model, cluster, replicas=n, tp="off")
    assert len(d.replicas) == n
    assert d.tokens_per_s == pytest.approx(want, rel=1e-9)
    assert d.upper_bound_tokens_per_s >= everything * (1 - 1e-9) and math.isfinite(d.upper_bound_tokens_per_s)
    if d.optimal:
        assert d.tokens_per_s == pytest.approx(everything, rel=1e-9)
    if not exhaustive:
        assert not d.optimal
    used = [st.device for p in d.replicas for st in p.stages]
    assert len(used) == len(set(used))


def test_bridged_cards_are_one_kind_only_where_swapping_keeps_every_link() -> None:
    from partitioner.deploy.kinds import gpu_kinds
    from partitioner.models import load_cluster

    rack = load_cluster(Path(__file__).parents[1] / "examples" / "clusters" / "a100-l4-t4.yaml")
    assert gpu_kinds(rack).counts == (2, 2, 2, 4)  # the NVLink-bridged A100s swap; 135 GPU sets, not 1,024
    devices = [{"name": f"g{i}", "gpu": "l4", "node": "box"} for i in range(3)]
    one_way = ClusterSpec.model_validate({"devices": devices, "links": {"intra_node": "pcie4"}, "pairs": [
        {"from": "g0", "to": "g1", "latency_ms": 0.01, "bandwidth_gb_s": 200},
        {"from": "g1", "to": "g0", "latency_ms": 0.01, "bandwidth_gb_s": 100}]})
    assert sorted(gpu_kinds(one_way).counts) == [1, 1, 1]  # g0 -> g1 is not g1 -> g0: no swap keeps it


@pytest.mark.parametrize("seed", range(4))
def test_fixed_count_with_a_bridged_pair_agrees_with_brute_force(seed: int) -> None:
    """One NVLink-bridged pair among 4-5 cards on two hosts: the bridged cards are one kind, and
    --replicas 2 equals the brute force over every partition valued on the real links."""
    rng = random.Random(seed)
    layers = [{"name": "layer", "repeat": 4, "cost": {"l4": 0.007 * rng.uniform(0.8, 1.2)},
               "memory_gb": rng.uniform(6, 12), "out_bytes": 4 << 20}]
    model = ModelSpec.model_validate({"name": "m", "layers": layers, "workload": {"batch": 8}})
    k = rng.choice([2, 3])
    devices = [{"name": f"a{i}", "gpu": "l4", "node": "a"} for i in range(3)] + \
              [{"name": f"b{i}", "gpu": "l4", "node": "b"} for i in range(k)]
    cluster = ClusterSpec.model_validate({"devices": devices, "tp": [1], "links": {
        "intra_node": "pcie3", "inter_node": {"latency_ms": 1.0, "bandwidth_gb_s": 0.125}}, "pairs": [
        {"from": "a0", "to": "a1", "latency_ms": 0.005, "bandwidth_gb_s": 300}]})
    v = _values(model, cluster)
    want = _over([[g] for g in range(len(devices))], 2, v)
    if not math.isfinite(want):
        with pytest.raises(InfeasibleError, match="cannot hold 2 replicas"):
            plan_deployment(model, cluster, replicas=2, tp="off")
        return
    d = plan_deployment(model, cluster, replicas=2, tp="off")
    assert len(d.replicas) == 2
    assert d.tokens_per_s == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("cap", [1024, 8, 7])
def test_no_n_replicas_in_the_family_is_not_a_proof(cap: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 4-GPU and a 2-GPU machine, a model needing 3 cards: 2 replicas exist (3 cards of the big
    machine; its last card with the small machine). Parts of one GPU (15 vectors) find them, and so
    does the cut into the fewest cards that hold the model (3 + 1, 8 vectors), not proven; whole
    machines and pairs (6) do not: then "not proven" (exit 4), never "cannot hold". 3 replicas need
    more memory than the 6 cards have: that is proven."""
    from partitioner.deploy.plan import SearchStopped

    monkeypatch.setattr(units, "MAX_UNIT_VECTORS", 1)
    monkeypatch.setattr(units, "MAX_SPLIT_VECTORS", cap)
    layers = [{"name": "layer", "repeat": 6, "cost": {"l4": 0.007}, "memory_gb": 10.0, "out_bytes": 262144}]
    model = ModelSpec.model_validate({"name": "m", "layers": layers, "workload": {"batch": 8}})
    devices = [{"name": f"a{i}", "gpu": "l4", "node": "a"} for i in range(4)] + \
              [{"name": f"b{i}", "gpu": "l4", "node": "b"} for i in range(2)]
    cluster = ClusterSpec.model_validate({"devices": devices, "tp": [1], "links": {
        "intra_node": "pcie4", "inter_node": {"latency_ms": 1.0, "bandwidth_gb_s": 0.125}}})
    if cap >= 8:
        d = plan_deployment(model, cluster, replicas=2, tp="off")
        assert len(d.replicas) == 2 and not d.unused
        assert d.solver == "replicas over machines in parts of 3 GPUs"
        if cap > 8:  # parts of one GPU searched: the GPU-set search's proof and bound
            monkeypatch.setattr(units, "MAX_UNIT_VECTORS", 512)
            exact = plan_deployment(model, cluster, replicas=2, tp="off")
            assert d.tokens_per_s == pytest.approx(exact.tokens_per_s, rel=1e-9)
            assert (d.optimal, d.upper_bound_tokens_per_s) == (exact.optimal, exact.upper_bound_tokens_per_s)
            monkeypatch.setattr(units, "MAX_UNIT_VECTORS", 1)
    else:
        with pytest.raises(SearchStopped, match="not proven: no 2 replicas") as stop:
            plan_deployment(model, cluster, replicas=2, tp="off")
        assert math.isfinite(stop.value.upper_bound) and stop.value.exit_code == 4
    with pytest.raises(InfeasibleError, match="cannot hold 3 replicas"):
        plan_deployment(model, cluster, replicas=3, tp="off")


def test_a_family_answer_meeting_the_fluid_bound_is_proven(monkeypatch: pytest.MonkeyPatch) -> None:
    """4 machines of 2 GPUs (81 GPU sets, above a limit lowered to 1), four micro-batches in
    flight: each whole machine runs its pair at the fluid rate of its two GPUs, so 4 replicas meet
    the fluid bound of all 8 and that proves them, though only whole machines were searched;
    with one micro-batch in flight (the round trip bounds each replica) they do not, and the
    answer is not proven."""
    monkeypatch.setattr(units, "MAX_UNIT_VECTORS", 1)
    monkeypatch.setattr(units, "MAX_SPLIT_VECTORS", 1)  # no cut: parts of one GPU would be exhaustive
    devices = [{"name": f"h{h}-{i}", "gpu": "l4", "node": f"h{h}"} for h in range(4) for i in range(2)]
    cluster = ClusterSpec.model_validate({"devices": devices, "tp": [1], "links": {
        "intra_node": "pcie4", "inter_node": {"latency_ms": 1.0, "bandwidth_gb_s": 1.25}}})
    for k, proven in ((4, True), (1, False)):
        layers = [{"name": "layer", "repeat": 4, "cost": {"l4": 0.007}, "memory_gb": 2.0, "out_bytes": 262144}]
        model = ModelSpec.model_validate({"name": "m", "layers": layers, "workload": {"batch": 8, "in_flight": k}})
        d = plan_deployment(model, cluster, replicas=4, tp="off")
        assert len(d.replicas) == 4 and d.solver == "replicas over whole machines"
        assert d.optimal is proven
        assert (d.upper_bound_tokens_per_s <= d.tokens_per_s * (1 + 1e-9)) is proven
