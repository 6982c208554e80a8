"""`partition plan --replicas N` then `export`: exactly N replica launches, and replicas sharing a
host never share a GPU (CUDA_VISIBLE_DEVICES, llama.cpp `--device CUDAk`) nor a listening port,
for vLLM, SGLang and llama.cpp; on one 4-GPU machine and on a 3 + 1 GPU pair of hosts where a
replica takes one GPU of the big host and the small host's GPU."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from partitioner.cli import main
from partitioner.export import render

MODEL = "preset: llama-3.1-8b\nworkload: {weights: bf16, batch: 4, context: 4096, in_flight: 1}\n"
CLUSTERS = {
    "one-box": [("box", 4)],
    "three-one": [("hosta", 3), ("hostb", 1)],
}


def _plan(tmp_path: Path, name: str, n: int) -> dict:
    model = tmp_path / "m.yaml"
    model.write_text(MODEL)
    cluster = tmp_path / f"{name}.yaml"
    rows = [f"  - {{name: {host}-{i}, gpu: t4, node: {host}}}\n" for host, k in CLUSTERS[name] for i in range(k)]
    cluster.write_text("devices:\n" + "".join(rows) + "links: {intra_node: pcie3, inter_node: 10gbe}\n")
    out = tmp_path / "plan.json"
    r = CliRunner().invoke(main, ["plan", str(model), str(cluster), "--replicas", str(n), "--json", "--out", str(out)])
    assert r.exit_code == 0, r.output
    return json.loads(out.read_text())


def _gpus(step) -> set[int]:  # type: ignore[no-untyped-def]
    env = dict(step.env)
    if "CUDA_VISIBLE_DEVICES" in env:
        return {int(x) for x in env["CUDA_VISIBLE_DEVICES"].split(",")}
    if "--device" in step.argv:
        return {int(m) for m in re.findall(r"CUDA(\d+)", step.argv[list(step.argv).index("--device") + 1])}
    return set()


def _port(step) -> str | None:  # type: ignore[no-untyped-def]
    return step.argv[list(step.argv).index("--port") + 1] if "--port" in step.argv else None


@pytest.mark.parametrize("cluster", sorted(CLUSTERS))
def test_n_replicas_launch_on_disjoint_gpus_and_ports(tmp_path: Path, cluster: str) -> None:
    doc = _plan(tmp_path, cluster, 2)
    assert doc["serving"]["replicas"] == len(doc["replicas"]) == 2
    devices = [name for r in doc["replicas"] for st in r["stages"] for name in st.get("devices", [st["device"]])]
    assert len(devices) == len(set(devices))
    for target in ("vllm", "sglang", "llamacpp"):
        out = render(doc, target)
        steps = [s for s in out.steps if re.fullmatch(r"r\d+", s.tag)]  # not the data-parallel alternative
        assert {s.tag for s in steps} == {"r0", "r1"}, target
        for host in {s.host for s in steps}:
            on = [s for s in steps if s.host == host]
            gpus = {tag: set().union(*(_gpus(s) for s in on if s.tag == tag)) for tag in {s.tag for s in on}}
            if len(gpus) == 2:
                assert not gpus["r0"] & gpus["r1"], (target, host, gpus)
            # every listening port on a host once per replica, never shared between replicas
            ports = {(s.tag, p) for s in on for p in (_port(s), s.serves.rpartition(":")[2] or None) if p}
            assert len({p for _, p in ports}) == len(ports), (target, host, ports)
