"""`partition export plan.json --to TARGET` through the CLI boundary."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from partitioner.cli import main
from partitioner.problem import CostTables, Problem, Solution, evaluate, objective_key
from partitioner.result import Plan


def plan_file(tmp_path: Path) -> Path:
    kinds = ("embed",) + ("decoder",) * 6 + ("head",)
    L, G = len(kinds), 2
    t = CostTables(
        cost=np.ones((G, L)),
        memory_gb=np.ones(L),
        cut_bytes=np.zeros(L),
        capacity_gb=np.full(G, 24.0),
        latency_s=np.zeros((G, G)),
        bandwidth_Bps=np.full((G, G), np.inf),
        layer_names=tuple(f"layer{i}" for i in range(L)),
        device_names=("gpu1", "gpu0"),
        gpu_names=("rtx-3090", "rtx-3090"),
        node_names=("box", "box"),
        layer_kinds=kinds,
    )
    p = Problem(t)
    devices, cuts = (1, 0), (0, 4, 8)
    key = objective_key(p, evaluate(p, devices, cuts))
    plan = Plan.from_solution(p, Solution(devices, cuts, "dp", True, key, key[0]))
    path = tmp_path / "plan.json"
    path.write_text(plan.to_json())
    return path


def test_export_vllm(tmp_path: Path) -> None:
    path = plan_file(tmp_path)
    r = CliRunner().invoke(main, ["export", str(path), "--to", "vllm", "--device-id", "gpu0=0", "--device-id", "gpu1=1"])
    assert r.exit_code == 0, r.output
    assert r.stdout == (
        "# for vLLM 0.33.0\n"
        "# vLLM: pipeline rank k runs stage k (2 ranks, tensor parallel 1)\n"
        "# rank 0: device 'gpu0' (rtx-3090) on node 'box', decoder layers 0-2 + embedding\n"
        "# rank 1: device 'gpu1' (rtx-3090) on node 'box', decoder layers 3-5 + LM head\n"
        "# [1] on host 'box': serve (rank k = k-th visible GPU)\n"
        "CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=0,1 VLLM_PP_LAYER_PARTITION=3,3 vllm serve MODEL --pipeline-parallel-size 2 --tensor-parallel-size 1\n"
    )
    assert r.stderr == "warning: the plan has no model id (hf_id:); replace MODEL with the model to serve\n"


def test_export_warnings_go_to_stderr(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["export", str(plan_file(tmp_path)), "--to", "torchgpipe"])
    assert r.exit_code == 0
    assert r.stdout.endswith("balance=[4, 4]\ndevices=['cuda:1', 'cuda:0']\n")  # gpu0 is listed second on 'box'
    assert r.stderr.startswith("warning: CUDA ordinals assumed")


def test_export_json_roundtrip(tmp_path: Path) -> None:
    path = plan_file(tmp_path)
    r = CliRunner().invoke(main, ["export", str(path), "--to", "json"])
    assert r.exit_code == 0 and r.stdout == path.read_text()


def test_export_strict_fails_when_target_cannot_express(tmp_path: Path) -> None:
    path = plan_file(tmp_path)
    text = path.read_text().replace('"node": "box"', '"node": "other"', 1)
    path.write_text(text)
    r = CliRunner().invoke(main, ["export", str(path), "--to", "torchgpipe", "--strict"])
    assert r.exit_code == 5  # STRICT_EXIT_CODES["cannot_express"]
    assert "error: torchgpipe cannot express this plan: torchgpipe runs in one process on one host" in r.stderr
    assert r.stdout == ""


def test_export_bad_inputs(tmp_path: Path) -> None:
    runner = CliRunner()
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    r = runner.invoke(main, ["export", str(bad), "--to", "vllm"])
    assert r.exit_code == 2 and f"error: {bad}:1: invalid JSON" in r.stderr
    bad.write_text('{"format": "partitioner.plan/1", "num_layers": 4, "stages": [{"device": "a", "gpu": "t4", "node": "n", "start": 0, "end": "x", "decoder_layers": 1}]}')
    r = runner.invoke(main, ["export", str(bad), "--to", "vllm"])
    assert r.exit_code == 2 and f"error: {bad}: stages[0].end: Input should be a valid integer" in r.stderr
    r = runner.invoke(main, ["export", str(tmp_path / "missing.json"), "--to", "vllm"])
    assert r.exit_code == 2 and "missing.json" in r.stderr
    r = runner.invoke(main, ["export", str(plan_file(tmp_path)), "--to", "vllm", "--device-id", "gpu0"])
    assert r.exit_code == 2 and "--device-id takes NAME=VALUE (got 'gpu0')" in r.stderr
    r = runner.invoke(main, ["export", str(plan_file(tmp_path)), "--to", "vllm", "--device-id", "gpu0=x"])
    assert r.exit_code == 2 and "ORDINAL must be an integer" in r.stderr
    r = runner.invoke(main, ["export", str(plan_file(tmp_path)), "--to", "vllm", "--device-id", "gpu0=-1"])
    assert r.exit_code == 2 and r.stderr == "error: --device-id ORDINAL must be an integer >= 0 (got gpu0=-1)\n"
    for value, message in (
        ("gpu1=n1", "error: --rpc-endpoint takes NAME=HOST:PORT (got gpu1=n1: no port)\n"),
        ("gpu1=n1:0", "error: --rpc-endpoint PORT must be an integer in 1..65535 (got '0')\n"),
        ("gpu1=n1:65536", "error: --rpc-endpoint PORT must be an integer in 1..65535 (got '65536')\n"),
        ("gpu1=n1:x", "error: --rpc-endpoint PORT must be an integer in 1..65535 (got 'x')\n"),
        ("gpu1=a;b:1", "error: --rpc-endpoint HOST must be a host name or IP address (got 'a;b')\n"),
    ):
        r = runner.invoke(main, ["export", str(plan_file(tmp_path)), "--to", "llamacpp", "--rpc-endpoint", value])
        assert r.exit_code == 2 and r.stderr == message, (value, r.stderr)
    r = runner.invoke(main, ["export", str(plan_file(tmp_path)), "--to", "nope"])
    assert r.exit_code == 2 and "Invalid value for '--to'" in r.stderr


def two_host_plan(tmp_path: Path, gpu: str = "rtx-3090", feasible: bool = True) -> Path:
    from test_export_launch import plan_of

    doc = plan_of([("a0", "A"), ("b0", "B")], gpus={"a0": "rtx-3090", "b0": gpu}, hosts={"A": "10.0.0.1", "B": "10.0.0.2"})
    doc["feasible"] = feasible
    path = tmp_path / "two.json"
    path.write_text(json.dumps(doc))
    return path


def test_host_option_prints_that_hosts_script(tmp_path: Path) -> None:
    path = two_host_plan(tmp_path)
    r = CliRunner().invoke(main, ["export", str(path), "--to", "vllm", "--host", "B"])
    assert r.exit_code == 0
    assert r.stdout.startswith("#!/usr/bin/env bash\n") and "--master-addr 10.0.0.1" in r.stdout
    assert "--node-rank 1 --headless" in r.stdout and "--node-rank 0" not in r.stdout
    r = CliRunner().invoke(main, ["export", str(path), "--to", "vllm", "--host", "Z"])
    assert r.exit_code == 2 and "--host 'Z' runs nothing in this plan (hosts: B, A)" in r.stderr


def test_write_scripts_in_run_order_and_never_over_user_files(tmp_path: Path) -> None:
    path = two_host_plan(tmp_path)
    out = tmp_path / "deploy"
    r = CliRunner().invoke(main, ["export", str(path), "--to", "vllm", "--write-scripts", str(out)])
    assert r.exit_code == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["01-B.sh", "02-A.sh"]  # the headless node, then the API server
    assert "--node-rank 0" in (out / "02-A.sh").read_text()
    r = CliRunner().invoke(main, ["export", str(path), "--to", "vllm", "--write-scripts", str(out)])
    assert r.exit_code == 0  # its own scripts are replaced
    (out / "01-B.sh").write_text("my own script\n")
    r = CliRunner().invoke(main, ["export", str(path), "--to", "vllm", "--write-scripts", str(out)])
    assert r.exit_code == 2 and (out / "01-B.sh").read_text() == "my own script\n"
    r = CliRunner().invoke(main, ["export", str(path), "--to", "megatron", "--write-scripts", str(out)])
    assert r.exit_code == 2 and "prints a snippet, not launch scripts" in r.stderr


def test_strict_exit_codes(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["export", str(two_host_plan(tmp_path)), "--to", "vllm", "--strict"])
    assert r.exit_code == 0
    r = CliRunner().invoke(main, ["export", str(two_host_plan(tmp_path, gpu="gtx-1070")), "--to", "vllm", "--strict"])
    assert r.exit_code == 6 and "vLLM needs 7.0" in r.stderr and r.stdout == ""
    r = CliRunner().invoke(main, ["export", str(two_host_plan(tmp_path, gpu="gtx-1070")), "--to", "llamacpp", "--strict"])
    assert r.exit_code == 0  # llama.cpp runs Pascal
    r = CliRunner().invoke(main, ["export", str(two_host_plan(tmp_path, feasible=False)), "--to", "vllm", "--strict"])
    assert r.exit_code == 3 and "infeasible" in r.stderr
    r = CliRunner().invoke(main, ["export", str(two_host_plan(tmp_path, gpu="gtx-1070")), "--to", "vllm"])
    assert r.exit_code == 0 and "unsupported gpu: stage 1" in r.stderr  # without --strict: reported, exit 0
