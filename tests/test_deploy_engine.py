"""`plan --replicas/--tp --engine`: the engine's cost model (per-token and per-hop overheads, also
on TP-group rows) and uniform TP for the engines that take one TP degree (vLLM, SGLang, TRT-LLM)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from partitioner.costs import build_tables
from partitioner.costs.groups import candidate_groups, group_tables
from partitioner.deploy.plan import plan_deployment
from partitioner.models import load_model
from partitioner.models.cluster import ClusterSpec
from partitioner.models.engines import resolve_engine
from partitioner.problem import Problem, evaluate
from partitioner.serving.score import serving_of

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "examples" / "models" / "llama-3.1-8b.yaml"


def _cluster(second: str = "t4") -> ClusterSpec:
    devices = [{"name": f"n{n}-{k}", "gpu": gpu, "node": f"node{n}"}
               for n, (gpu, count) in enumerate([("l4", 4), (second, 2), ("l4", 2)]) for k in range(count)]
    return ClusterSpec.model_validate({"devices": devices, "tp": [1, 2, 4], "links": {
        "intra_node": "pcie4", "inter_node": {"latency_ms": 0.5, "bandwidth_gb_s": 1.25}}})


def test_group_rows_carry_the_engine_overheads() -> None:
    """A TP group's head row gains the engine's per-token cost exactly as a single GPU's does, and
    a group of one GPU equals that GPU's row under every engine."""
    model, cluster = load_model(MODEL), _cluster()
    groups = candidate_groups(cluster)
    for engine in ("generic", "vllm", "llamacpp"):
        base = build_tables(model, cluster, engine=engine)
        gt = group_tables(model, cluster, groups, base, engine)
        for gr, row in zip(groups, gt.cost, strict=True):
            if gr.t == 1:
                assert np.allclose(row, base.cost[gr.members[0]], rtol=1e-12)
    vllm = group_tables(model, cluster, groups, build_tables(model, cluster, engine="vllm"), "vllm")
    generic = group_tables(model, cluster, groups, build_tables(model, cluster, engine="generic"), "generic")
    assert not np.allclose(vllm.cost, generic.cost)  # the engines' efficiencies differ
    hop = resolve_engine("vllm").hop_overhead_ms / 1e3
    i, j = 0, vllm.node_names.index("node1")
    assert vllm.latency_s[i, j] == pytest.approx(0.5e-3 + hop)  # group rows keep the engine's inter-node cost


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_uniform_tp_engines_get_one_degree(engine: str) -> None:
    model, cluster = load_model(MODEL), _cluster("l4" if engine == "trtllm" else "t4")  # (TRT-LLM runs no T4)
    d = plan_deployment(model, cluster, replicas=2, tp="auto", objective="throughput", engine=engine)
    for p in d.replicas:  # one launch per replica: its stages share one --tensor-parallel-size
        assert len({st.tp for st in p.stages}) == 1
    assert any("uniform TP" in n for n in d.notes)


def test_engine_costs_the_replicas() -> None:
    """Each replica's serving figures are those of its split costed under --engine: rescoring it
    on build_tables(engine=...) gives the same tokens/s; another engine gives other figures."""
    model, cluster = load_model(MODEL), _cluster()
    d = plan_deployment(model, cluster, replicas=2, tp="off", objective="throughput", engine="llamacpp")
    t = build_tables(model, cluster, engine="llamacpp")
    names = list(t.device_names)
    for p in d.replicas:
        devices = tuple(names.index(st.device) for st in p.stages)
        cuts = (*(st.start for st in p.stages), p.stages[-1].end)
        problem = Problem(t, M=8)
        s = serving_of(t, devices, cuts, evaluate(problem, devices, cuts), "async")
        assert s.tokens_per_s == pytest.approx(p.serving.tokens_per_s, rel=1e-9)
    g = plan_deployment(model, cluster, replicas=2, tp="off", objective="throughput", engine="generic")
    assert g.tokens_per_s != pytest.approx(d.tokens_per_s, rel=1e-6)


def test_cli_engine_reaches_the_replica_path(tmp_path: Path) -> None:
    import yaml
    from click.testing import CliRunner

    from partitioner.cli import main

    cfile = tmp_path / "c.yaml"
    cfile.write_text(yaml.safe_dump(_cluster().model_dump(mode="json", exclude_defaults=True)))
    res = CliRunner().invoke(main, ["plan", str(MODEL), str(cfile), "--replicas", "2", "--engine", "vllm", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    # planned with uniform TP, unless the --tp off floor (one GPU per stage, as vLLM launches too) beat it
    assert any("uniform TP" in n or "--tp off plan is better" in n for n in doc["notes"])
    assert all(len({st.get("tp", 1) for st in r["stages"]}) == 1 for r in doc["replicas"])  # one degree per launch


@pytest.mark.parametrize("tp,replicas", [("off", "auto"), ("uniform", "auto"), ("off", 1)])
def test_gpus_below_the_engines_compute_capability_are_left_out(tp: str, replicas: str | int) -> None:
    """TensorRT-LLM needs compute capability 8.0 (export/trtllm.py MIN_CC); the T4s (7.5) of node1
    are never in a replica, they are listed as unused and a note says why."""
    model, cluster = load_model(MODEL), _cluster()
    d = plan_deployment(model, cluster, replicas=replicas, tp=tp, objective="throughput", engine="trtllm")
    plans = d.replicas if replicas != 1 else (d,)
    used = {m for p in plans for st in p.stages for m in (st.members or (st.device,))}
    assert used and not used & {"n1-0", "n1-1"}
    assert "trtllm leaves out 'n1-0', 'n1-1' (t4): below the engine's minimum compute capability" in d.notes
    if replicas != 1:
        assert {"n1-0", "n1-1"} <= set(d.unused)
    # control: the generic engine puts the T4s in a replica (two replicas of uniform TP 2; over single
    # GPUs the best two replicas, any GPU sets, leave them out on their own merits)
    generic = plan_deployment(model, cluster, replicas=2, tp="uniform", objective="throughput", engine="generic")
    assert {"n1-0", "n1-1"} & {m for p in generic.replicas for st in p.stages for m in (st.members or (st.device,))}


def test_replicas_the_engine_cannot_run_are_a_clear_error() -> None:
    """Without the T4s only node0 holds the model: two TensorRT-LLM replicas do not fit, and a
    cluster of T4s alone has no GPU TensorRT-LLM runs."""
    from partitioner.errors import InfeasibleError

    model = load_model(MODEL)
    with pytest.raises(InfeasibleError, match="cannot hold 2 replicas"):
        plan_deployment(model, _cluster(), replicas=2, tp="off", objective="throughput", engine="trtllm")
    t4s = ClusterSpec.model_validate({"devices": [{"name": f"t{k}", "gpu": "t4", "node": "a"} for k in range(2)]})
    with pytest.raises(InfeasibleError, match="trtllm"):
        plan_deployment(model, t4s, replicas=1, tp="off", objective="throughput", engine="trtllm")
