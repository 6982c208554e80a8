"""Deployment exports: one launch per replica with its own ports, the router weights file, the
data-parallel launch for identical replicas (vLLM's get_device_indices replayed), collisions
refused, bad deployment JSON reported, and the CLI paths (`export`, `plan --export`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_export_tp import tp_plan

from partitioner.cli import main
from partitioner.errors import ConfigError
from partitioner.export import STRICT_EXIT_CODES, render
from partitioner.export.replicas import DEPLOYMENT_FORMAT, ROUTER_FILE, ROUTER_FORMAT

META = {"model_id": "org/model", "workload": {"weights": "bf16", "kv_cache": "bf16", "activations": "bf16", "context": 4096}}


def deployment(plans: list[dict], weights: list[float], identical: bool = False) -> dict:
    reps = [{**p, "weight": w, "serving": {"tokens_per_s": 100.0 * w}} for p, w in zip(plans, weights, strict=True)]
    return {"format": DEPLOYMENT_FORMAT, "identical_replicas": identical, "serving": {"replicas": len(plans)},
            "unused_devices": [], "replicas": reps}


def _arg(argv, flag: str) -> str:  # type: ignore[no-untyped-def]
    return argv[list(argv).index(flag) + 1]


def _one_host_pair() -> dict:
    """Two identical TP-2 replicas on one host: GPUs 0, 1 and 2, 3."""
    hosts = {"box": "10.0.0.5"}
    a = tp_plan([(["g0", "g1"], "box")], meta=META, hosts=hosts)
    b = tp_plan([(["g2", "g3"], "box")], meta=META, hosts=hosts)
    for doc in (a, b):
        doc["hosts"] = [{"node": "box", "address": "10.0.0.5", "address_assumed": False, "devices": ["g0", "g1", "g2", "g3"]}]
        doc["stages"][0]["ordinal"] = ["g0", "g1", "g2", "g3"].index(doc["stages"][0]["devices"][0])
    return deployment([a, b], [0.5, 0.5], identical=True)


@pytest.mark.parametrize("target", ["vllm", "sglang", "trtllm", "llamacpp"])
def test_replicas_on_one_host_get_their_own_ports_and_gpus(target: str) -> None:
    out = render(_one_host_pair(), target)
    serves = [s for s in out.steps if s.argv[0] not in ("rpc-server", "ray")]
    assert len(serves) == 2 and [s.tag for s in serves] == ["r0", "r1"]
    assert len({_arg(s.argv, "--port") for s in serves}) == 2
    if target != "llamacpp":
        visible = [dict(s.env)["CUDA_VISIBLE_DEVICES"] for s in serves]
        assert visible == ["0,1", "2,3"]
    router = json.loads(dict(out.files)[ROUTER_FILE])
    assert router["format"] == ROUTER_FORMAT and [r["weight"] for r in router["replicas"]] == [0.5, 0.5]
    assert [r["url"] for r in router["replicas"]] == [f"http://10.0.0.5:{_arg(s.argv, '--port')}" for s in serves]
    assert [name for name, _ in out.scripts] == ["01-r0-box.sh", "02-r1-box.sh"]


def test_vllm_data_parallel_launch_places_each_replica_on_its_gpus() -> None:
    out = render(_one_host_pair(), "vllm")
    assert "--data-parallel-size 2" in out.text
    line = next(x for x in out.text.splitlines() if "--data-parallel-size" in x and "CUDA_VISIBLE_DEVICES=" in x)
    visible = line.split("CUDA_VISIBLE_DEVICES=")[1].split()[0].split(",")
    world = 2  # pp 1 x tp 2; Worker.init_device: local_rank += d * pp * tp, i.e. [d*world, (d+1)*world)
    assert [visible[d * world:(d + 1) * world] for d in range(2)] == [["0", "1"], ["2", "3"]]
    assert "--tensor-parallel-size 2" in line


def test_sglang_dp_size_places_identical_pipelines_on_their_gpus() -> None:
    from partitioner.export import sglang as sg

    assert "--dp-size 2" in render(_one_host_pair(), "sglang").text
    two = [tp_plan([(["a", "b"], "box"), (["c", "d"], "box")], meta=META), tp_plan([(["e", "f"], "box"), (["g", "h"], "box")], meta=META)]
    for doc in two:
        doc["hosts"][0]["devices"] = list("abcdefgh")
        for st in doc["stages"]:
            st["ordinal"] = "abcdefgh".index(st["devices"][0])
    out = render(deployment(two, [0.5, 0.5], identical=True), "sglang")
    line = next(x for x in out.text.splitlines() if "CUDA_VISIBLE_DEVICES=" in x and "--dp-size 2" in x)
    visible = [int(x) for x in line.split("CUDA_VISIBLE_DEVICES=")[1].split()[0].split(",")]
    # data_parallel_controller.py: DP rank d starts at d * tp * pp; engine.py: + pp_rank * tp + tp_rank
    for d, doc in enumerate(two):
        for p, st in enumerate(doc["stages"]):
            got = {visible[sg.gpu_id(p, t, pp_size=2, tp_size=2, nnodes=1, dp_rank=d)] for t in range(2)}
            assert got == {"abcdefgh".index(m) for m in st["devices"]}


def test_vllm_replicas_sharing_a_ray_host_are_not_expressible() -> None:
    hosts = {"A": "10.0.0.1", "B": "10.0.0.2"}
    # one GPU on A, two on B per replica: unequal counts, so each replica launches over Ray
    r0 = tp_plan([(["a0"], "A"), (["b0"], "B"), (["b1"], "B")], hosts=hosts, meta=META)
    r1 = tp_plan([(["a1"], "A"), (["b2"], "B"), (["b3"], "B")], hosts=hosts, meta=META)
    ords = {"a0": 0, "a1": 1, "b0": 0, "b1": 1, "b2": 2, "b3": 3}
    out = render(deployment([r0, r1], [0.6, 0.4]), "vllm", ordinals=ords)
    assert any("each start Ray on host 'A'" in c for c in out.cannot_express)
    ports = [_arg(s.argv, "--port") for s in out.steps if s.argv[:3] == ("ray", "start", "--head")]
    assert ports == ["6379", "6380"]
    # equal counts: the multiprocessing launch, one --master-port per replica, hosts shared freely
    r0 = tp_plan([(["a0"], "A"), (["b0"], "B")], hosts=hosts, meta=META)
    r1 = tp_plan([(["a1"], "A"), (["b1"], "B")], hosts=hosts, meta=META)
    out = render(deployment([r0, r1], [0.6, 0.4]), "vllm", ordinals={"a0": 0, "a1": 1, "b0": 0, "b1": 1})
    assert not any("Ray" in c for c in out.cannot_express)
    assert sorted({_arg(s.argv, "--master-port") for s in out.steps if "--nnodes" in s.argv}) == ["29501", "29502"]


def test_bad_deployment_json_names_the_replica(tmp_path: Path) -> None:
    hosts = {"box": None}
    a = tp_plan([(["g0"], "box")], hosts=hosts)
    dup = deployment([a, tp_plan([(["g0"], "box")], hosts=hosts)], [0.5, 0.5])
    with pytest.raises(ConfigError, match=r"replicas\[1\]\.stages: device 'g0' is also in replica 0"):
        render(dup, "vllm")
    bad = deployment([a], [1.5])
    with pytest.raises(ConfigError, match=r"replicas\[0\]\.weight: must be a number in \[0, 1\]"):
        render(bad, "vllm")
    broken = deployment([a], [1.0])
    del broken["replicas"][0]["stages"][0]["end"]
    path = tmp_path / "d.json"
    path.write_text(json.dumps(broken))
    res = CliRunner().invoke(main, ["export", str(path), "--to", "sglang"])
    assert res.exit_code != 0 and "replicas[0].stages[0].end" in res.output and "Traceback" not in res.output


def test_json_target_is_the_deployment_itself() -> None:
    doc = _one_host_pair()
    assert json.loads(render(doc, "json").text)["format"] == DEPLOYMENT_FORMAT


def test_strict_refuses_a_replica_with_mixed_tp(tmp_path: Path) -> None:
    mixed = tp_plan([(["g0", "g1"], "box"), (["g2"], "box")], meta=META)
    path = tmp_path / "d.json"
    path.write_text(json.dumps(deployment([mixed], [1.0])))
    res = CliRunner().invoke(main, ["export", str(path), "--to", "trtllm", "--strict"])
    assert res.exit_code == STRICT_EXIT_CODES["cannot_express"] and "replica 0:" in res.output


# -- from the planner itself -----------------------------------------------------------------------
MODEL = "name: m\nhf_id: org/m-4l\nworkload: {context: 4096}\nlayers:\n" \
        "  - {name: layer, repeat: 4, cost: {l4: 0.007, l4x2: 0.0037}, memory_gb: 10.0, out_bytes: 262144}\n"


def _cluster(tmp_path: Path, nodes: int = 3, tp: str = "[1, 2]") -> tuple[Path, Path]:
    model = tmp_path / "m.yaml"
    model.write_text(MODEL)
    cluster = tmp_path / "c.yaml"
    cluster.write_text("devices:\n" + "".join(f"  - {{name: l{i}, gpu: l4, node: n{i // 2}}}\n" for i in range(2 * nodes))
                       + "nodes:\n" + "".join(f"  n{k}: {{address: 10.0.0.{k + 1}}}\n" for k in range(nodes))
                       + f"links: {{inter_node: {{latency_ms: 1.0, bandwidth_gb_s: 0.125}}}}\ntp: {tp}\n")
    return model, cluster


def test_planned_deployment_exports_per_replica_scripts_and_weights(tmp_path: Path) -> None:
    model, cluster = _cluster(tmp_path)
    runner = CliRunner()
    res = runner.invoke(main, ["plan", str(model), str(cluster), "--replicas", "auto", "--out", str(tmp_path / "d.json")])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "d.json").read_text())
    assert doc["format"] == DEPLOYMENT_FORMAT and all(r["model_id"] == "org/m-4l" and r["hosts"] for r in doc["replicas"])
    out_dir = tmp_path / "scripts"
    res = runner.invoke(main, ["export", str(tmp_path / "d.json"), "--to", "vllm", "--write-scripts", str(out_dir), "--strict"])
    assert res.exit_code == 0, res.output
    router = json.loads((out_dir / ROUTER_FILE).read_text())
    assert [r["weight"] for r in router["replicas"]] == pytest.approx([r["weight"] for r in doc["replicas"]])
    assert sum(r["weight"] for r in router["replicas"]) == pytest.approx(1.0)
    names = sorted(p.name for p in out_dir.glob("*.sh"))
    assert len(names) == len(doc["replicas"]) and all(f"-r{k}-" in n for k, n in enumerate(names))
    urls = [r["url"] for r in router["replicas"]]
    assert len(set(urls)) == len(urls)
    # a second export into the same directory replaces our own files, and plan --export works too
    again = runner.invoke(main, ["export", str(tmp_path / "d.json"), "--to", "vllm", "--write-scripts", str(out_dir)])
    assert again.exit_code == 0, again.output
    direct = runner.invoke(main, ["plan", str(model), str(cluster), "--replicas", "auto", "--export", "sglang"])
    assert direct.exit_code == 0 and "=== replica 1" in direct.output and "--nccl-port 29501" in direct.output


def test_engine_choice_makes_the_plan_uniform_tp(tmp_path: Path) -> None:
    """`--engine vllm` (or `--export vllm`) with TP groups plans one degree for every stage."""
    model = tmp_path / "m.yaml"
    model.write_text("name: m\nhf_id: org/m\nworkload: {context: 4096}\nlayers:\n"
                     "  - {name: layer, repeat: 8, cost: {l4: 0.007, l4x2: 0.0037, t4: 0.02}, memory_gb: 6.0, out_bytes: 262144}\n")
    cluster = tmp_path / "c.yaml"
    cluster.write_text("devices:\n" + "".join(f"  - {{name: a{i}, gpu: l4, node: A}}\n" for i in range(2))
                       + "  - {name: b0, gpu: t4, node: B}\n"
                       + "links: {inter_node: {latency_ms: 0.1, bandwidth_gb_s: 1.25}}\ntp: [1, 2]\n")
    runner = CliRunner()
    free = runner.invoke(main, ["plan", str(model), str(cluster), "--json"])
    assert free.exit_code == 0, free.output
    tps = [st.get("tp", 1) for st in json.loads(free.output)["stages"]]
    assert len(set(tps)) > 1, tps  # the fixture: per-stage TP wins without an engine
    res = runner.invoke(main, ["plan", str(model), str(cluster), "--engine", "vllm", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output[res.output.index("{"):])
    assert len({st.get("tp", 1) for st in doc["stages"]}) == 1
    assert any("planned with uniform TP" in n for n in doc["notes"]), doc.get("notes")
    # SGLang needs as many stages on every node: A's two L4 (46 GB) or one L4 and the T4 (38 GB)
    # cannot hold 48 GB, and uniform TP 2 leaves the T4 out, so SGLang cannot launch this model here
    res = runner.invoke(main, ["plan", str(model), str(cluster), "--engine", "sglang", "--json"])
    assert res.exit_code == 3 and "no plan that sglang can launch fits the devices" in res.output, res.output
    exp = runner.invoke(main, ["plan", str(model), str(cluster), "--export", "trtllm"])  # the same rule
    assert exp.exit_code == 3 and "no plan that trtllm can launch fits the devices" in exp.output, exp.output


def test_deploy_vllm_example_writes_each_replica_and_the_weights(tmp_path: Path) -> None:
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    path = tmp_path / "d.json"
    path.write_text(json.dumps(_one_host_pair()))
    run = subprocess.run([sys.executable, str(root / "examples/deploy_vllm.py"), str(path), str(tmp_path / "out")],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["01-r0-box.sh", "02-r1-box.sh", ROUTER_FILE]


def test_engine_choice_llamacpp_plans_one_gpu_per_stage_and_node_mode_is_flagged(tmp_path: Path) -> None:
    model = tmp_path / "m.yaml"
    model.write_text("name: m\nhf_id: org/m\nworkload: {context: 4096}\nlayers:\n"
                     "  - {name: layer, repeat: 8, cost: {l4: 0.007, l4x2: 0.0037, t4: 0.02}, memory_gb: 6.0, out_bytes: 262144}\n")
    cluster = tmp_path / "c.yaml"
    cluster.write_text("devices:\n" + "".join(f"  - {{name: a{i}, gpu: l4, node: A}}\n" for i in range(2))
                       + "  - {name: b0, gpu: t4, node: B}\n"
                       + "links: {inter_node: {latency_ms: 0.1, bandwidth_gb_s: 1.25}}\ntp: [1, 2]\n")
    runner = CliRunner()
    res = runner.invoke(main, ["plan", str(model), str(cluster), "--engine", "llamacpp", "--json"])
    assert res.exit_code == 0 and "planning with --tp off" in res.output
    doc = json.loads(res.output[res.output.index("{"):])
    assert all("devices" not in st for st in doc["stages"])
    node = runner.invoke(main, ["plan", str(model), str(cluster), "--tp", "node", "--export", "vllm"])
    assert node.exit_code == 0 and "--tp node gives machines with 1/2 GPUs different TP degrees" in node.output


def _hosts_three() -> tuple[dict, dict[str, list[str]]]:
    """Three identical TP-2 replicas: two on host A (a0..a3), one on host B (b0, b1)."""
    hosts = {"A": "10.0.0.1", "B": "10.0.0.2"}
    on = {"A": ["a0", "a1", "a2", "a3"], "B": ["b0", "b1"]}
    docs = []
    for members, node in ((["a0", "a1"], "A"), (["a2", "a3"], "A"), (["b0", "b1"], "B")):
        doc = tp_plan([(members, node)], meta=META, hosts=hosts)
        doc["hosts"] = [{"node": node, "address": hosts[node], "address_assumed": False, "devices": on[node]}]
        doc["stages"][0]["ordinal"] = on[node].index(members[0])
        docs.append(doc)
    return deployment(docs, [1 / 3] * 3, identical=True), on


def test_vllm_data_parallel_across_hosts_places_every_rank_on_its_replica() -> None:
    """Replay vLLM: host h's engines are DP ranks start_h + d (arg_utils: data_parallel_rank =
    data_parallel_start_rank or 0), local rank d on visible GPUs [d*world, (d+1)*world)."""
    import re
    import shlex

    dep, on = _hosts_three()
    out = render(dep, "vllm")
    lines = out.text.splitlines()
    dp = [(re.search(r"on host '(\w+)'", lines[i - 1]).group(1), shlex.split(line))  # type: ignore[union-attr]
          for i, line in enumerate(lines) if "--data-parallel-size-local" in line]
    assert [host for host, _ in dp] == ["A", "B"]
    (_, head), (_, worker) = dp
    for _, argv in dp:
        assert _arg(argv, "--data-parallel-size") == "3" and _arg(argv, "--data-parallel-address") == "10.0.0.1"
        assert _arg(argv, "--data-parallel-rpc-port") == _arg(head, "--data-parallel-rpc-port")
    assert "--headless" not in head and "--data-parallel-start-rank" not in head
    assert "--headless" in worker and _arg(worker, "--data-parallel-start-rank") == "2"
    world = 2  # pp 1 x tp 2
    placed = {}
    for host, argv in dp:
        start = int(_arg(argv, "--data-parallel-start-rank")) if "--headless" in argv else 0
        visible = [int(x) for x in next(a for a in argv if a.startswith("CUDA_VISIBLE_DEVICES=")).split("=")[1].split(",")]
        for d in range(int(_arg(argv, "--data-parallel-size-local"))):
            placed[start + d] = [on[host][o] for o in visible[d * world:(d + 1) * world]]
    assert placed == {0: ["a0", "a1"], 1: ["a2", "a3"], 2: ["b0", "b1"]}
    assert "--data-parallel-size 3 over 2 hosts" in out.text


def test_identical_replicas_spanning_hosts_are_only_noted() -> None:
    hosts = {"A": "10.0.0.1", "B": "10.0.0.2"}
    r0 = tp_plan([(["a0"], "A"), (["b0"], "B")], hosts=hosts, meta=META)
    r1 = tp_plan([(["a1"], "A"), (["b1"], "B")], hosts=hosts, meta=META)
    out = render(deployment([r0, r1], [0.5, 0.5], identical=True), "vllm", ordinals={"a0": 0, "a1": 1, "b0": 0, "b1": 1})
    assert "--data-parallel-size-local" not in out.text
    assert "across hosts its rank placement is not printed here" in out.text
