"""Launch plans: vLLM's Ray rank order simulated, per-engine rules, and the printed scripts run
through bash (syntax, and the argument vectors with hostile names)."""

from __future__ import annotations

import json
import os
import random
import shutil
import stat
import subprocess
from pathlib import Path

import numpy as np
import pytest

from partitioner.export import ENGINES, render, trtllm, vllm
from partitioner.export import sglang as sg
from partitioner.problem import CostTables, Problem, Solution, evaluate, objective_key
from partitioner.result import Plan

BASH = shutil.which("bash")


def plan_of(order: list[tuple[str, str]], gpus: dict[str, str] | None = None, n_dec: int = 12,
            hosts: dict[str, str | None] | None = None, meta: dict | None = None) -> dict:
    """A plan dict: stage s on device order[s] = (device, node); devices listed per node in name order."""
    devices = sorted({d for d, _ in order} | set(gpus or {}), key=lambda d: (dict(order).get(d, ""), d))
    node_of = dict(order)
    kinds = ("embed",) + ("decoder",) * n_dec + ("head",)
    G, L, S = len(devices), len(kinds), len(order)
    t = CostTables(
        cost=np.ones((G, L)), memory_gb=np.ones(L), cut_bytes=np.zeros(L), capacity_gb=np.full(G, 80.0),
        latency_s=np.zeros((G, G)), bandwidth_Bps=np.full((G, G), np.inf),
        layer_names=tuple(f"l{i}" for i in range(L)), device_names=tuple(devices),
        gpu_names=tuple((gpus or {}).get(d, "a100-80gb") for d in devices),
        node_names=tuple(node_of[d] for d in devices), layer_kinds=kinds, model_name="toy",
    )
    p = Problem(t)
    idx = tuple(devices.index(d) for d, _ in order)
    step = L // S
    cuts = tuple([0] + [step * (s + 1) for s in range(S - 1)] + [L])
    key = objective_key(p, evaluate(p, idx, cuts)) if len(set(idx)) == len(idx) else (0.0,)
    doc = Plan.from_solution(p, Solution(idx, cuts, "dp", True, key, key[0])).to_dict()
    doc["hosts"] = [{"node": n, "address": a, "address_assumed": a is None, "devices": []} for n, a in (hosts or {}).items()]
    doc.update(meta or {})
    return doc


# -- vLLM: the rank order vLLM 0.33.0 computes, simulated from the emitted commands ---------------
def _arg_of(argv, flag):
    return argv[argv.index(flag) + 1]


def simulate_vllm(steps, rng: random.Random) -> list[tuple[str, int]]:
    """(host, physical GPU id) per global rank of the emitted vLLM launch, under vLLM 0.33.0:
    - Ray (`ray start` steps): `get_bundles_sorted_by_node` (vllm/v1/executor/ray_utils.py) sorts
      bundles by (not the driver's node, Ray node id), node ids drawn at random here as Ray does
      (hex), bundles placed in a random order; `RayExecutorV2._init_executor` then gives a node's
      k-th worker its k-th smallest physical GPU id;
    - multiprocessing (`--nnodes`): node rank r runs global ranks [r*lws, (r+1)*lws), local rank k
      on the k-th visible device (MultiprocExecutor._init_executor);
    - one host: rank k on the k-th visible device."""
    serves = [st for st in steps if st.argv[:2] == ("vllm", "serve")]
    if any(st.argv[:2] == ("ray", "start") for st in steps):
        bundles = []
        for step in steps:
            if step.argv[:2] == ("ray", "start"):
                gpus = [int(x) for x in dict(step.env)["CUDA_VISIBLE_DEVICES"].split(",")]
                assert int(_arg_of(step.argv, "--num-gpus")) == len(gpus)
                bundles += [(step.host, g) for g in gpus]
        driver = serves[-1].host
        node_id = {h: f"{rng.getrandbits(224):056x}" for h, _ in bundles}
        rng.shuffle(bundles)  # which bundle lands where is Ray's placement, not ours
        ordered = sorted(bundles, key=lambda b: (0 if b[0] == driver else 1, node_id[b[0]]))
        gpus_of = {h: sorted(g for n, g in bundles if n == h) for h, _ in bundles}
        out, seen = [], {}
        for h, _ in ordered:
            k = seen.get(h, 0)
            seen[h] = k + 1
            out.append((h, gpus_of[h][k]))
        return out
    ranks: dict[int, tuple[str, int]] = {}
    for step in serves:
        visible = [int(x) for x in dict(step.env)["CUDA_VISIBLE_DEVICES"].split(",")]
        world = int(_arg_of(step.argv, "--pipeline-parallel-size")) * int(_arg_of(step.argv, "--tensor-parallel-size"))
        nnodes = int(_arg_of(step.argv, "--nnodes")) if "--nnodes" in step.argv else 1
        assert world % nnodes == 0  # MultiprocExecutor._get_parallel_sizes
        lws = world // nnodes
        r = int(_arg_of(step.argv, "--node-rank")) if "--nnodes" in step.argv else 0
        assert len(visible) == lws and ("--headless" in step.argv) == (r > 0)
        ranks.update({r * lws + k: (step.host, visible[k]) for k in range(lws)})
    return [ranks[k] for k in sorted(ranks)]


@pytest.mark.parametrize("seed", range(40))
def test_vllm_rank_order_matches_the_plan_for_every_node_id_draw_when_expressible(seed: int) -> None:
    rng = random.Random(seed)
    n_hosts = rng.randint(2, 5)
    hosts = {f"h{i}": (f"10.0.0.{i + 1}" if rng.random() < 0.7 else None) for i in range(n_hosts)}
    per_host = rng.randint(1, 3) if rng.random() < 0.4 else None  # equal counts: the multiprocessing launch
    used = [(f"{h}-g{k}", h, k) for h in hosts for k in range(per_host or rng.randint(1, 3))]
    rng.shuffle(used)
    if rng.random() < 0.7:  # mostly plans grouped by node, as vLLM needs
        used.sort(key=lambda u: list(hosts).index(u[1]))
    order = [(d, h) for d, h, _ in used]
    doc = plan_of(order, n_dec=3 * len(order), hosts=hosts)
    out = render(doc, "vllm", ordinals={d: k for d, _, k in used})
    planned = [(h, k) for _, h, k in used]
    draws = [simulate_vllm(out.steps, rng) for _ in range(20)]
    rule = [c for c in out.cannot_express if "Ray executor" in c or "cannot return" in c]
    assert all(d == planned for d in draws) == (not rule), (planned, draws[0], out.cannot_express)


def test_vllm_three_hosts_placed_for_20_random_node_id_draws() -> None:
    # 3 hosts, 2 GPUs each, ordinals out of order on B: the multiprocessing launch places every rank
    order = [("a1", "A"), ("a0", "A"), ("b1", "B"), ("b0", "B"), ("c0", "C"), ("c1", "C")]
    hosts = {"A": "10.0.0.1", "B": "10.0.0.2", "C": "10.0.0.3"}
    ords = {"a0": 0, "a1": 1, "b0": 0, "b1": 1, "c0": 0, "c1": 1}
    out = render(plan_of(order, hosts=hosts), "vllm", ordinals=ords)
    assert out.cannot_express == ()
    planned = [(h, ords[d]) for d, h in order]
    rng = random.Random(7)
    assert all(simulate_vllm(out.steps, rng) == planned for _ in range(20))
    # unequal counts over 3 hosts: Ray, whose order of B and C follows random node ids -> refused
    uneven = [("a0", "A"), ("b0", "B"), ("b1", "B"), ("c0", "C")]
    out = render(plan_of(uneven, hosts=hosts), "vllm", ordinals={d: ords[d] for d, _ in uneven})
    assert any("random Ray node id" in c for c in out.cannot_express)
    draws = {tuple(simulate_vllm(out.steps, rng)) for _ in range(20)}
    assert len(draws) == 2  # B before C and C before B both happen: the reason it is refused


def test_vllm_seed_cluster_order_from_the_issue() -> None:
    # laptop, node-02, then node-03's 3090 (GPU 0) before its 1070 (GPU 1): 3 hosts, unequal counts
    order = [("laptop-5090", "laptop"), ("node02-3090", "node-02"), ("node03-1070", "node-03"), ("node03-3090", "node-03")]
    ords = {"laptop-5090": 0, "node02-3090": 0, "node03-3090": 0, "node03-1070": 1}
    out = render(plan_of(order), "vllm", ordinals=ords)
    assert any("random Ray node id" in c for c in out.cannot_express)
    ords3 = {d: ords[d] for d in ("laptop-5090", "node03-3090", "node03-1070")}
    two = [("laptop-5090", "laptop"), ("node03-1070", "node-03"), ("node03-3090", "node-03")]
    assert any("it would run [('laptop', 0), ('node-03', 0), ('node-03', 1)]" in c
               for c in render(plan_of(two), "vllm", ordinals=ords3).cannot_express)
    ok = [("laptop-5090", "laptop"), ("node03-3090", "node-03"), ("node03-1070", "node-03")]
    assert render(plan_of(ok), "vllm", ordinals=ords3).cannot_express == ()


def test_vllm_rank_order_pure_function_cases() -> None:
    workers = [("B", 1), ("C", 0), ("B", 0), ("A", 3), ("A", 2), ("A", 5)]
    # vLLM 0.33.0: driver first, then by Ray node id, whatever the worker counts
    assert vllm.ray_rank_order(workers, "A", {"B": "f0", "C": "0f"}) == [
        ("A", 2), ("A", 3), ("A", 5), ("C", 0), ("B", 0), ("B", 1),
    ]
    assert vllm.ray_rank_order(workers, "A", {"B": "00", "C": "ff"})[3:] == [("B", 0), ("B", 1), ("C", 0)]
    # older releases: driver first, then fewer workers first, then the IP *string*
    ip = [("10.0.0.9", 1), ("10.0.0.10", 0), ("10.0.0.9", 0), ("10.0.0.1", 3), ("10.0.0.1", 2), ("10.0.0.1", 5)]
    assert vllm.ray_rank_order(ip, "10.0.0.1", rule="ip") == [
        ("10.0.0.1", 2), ("10.0.0.1", 3), ("10.0.0.1", 5), ("10.0.0.10", 0), ("10.0.0.9", 0), ("10.0.0.9", 1),
    ]
    realises = vllm.ray_realises
    assert not realises([("A", 0), ("B", 1), ("B", 0)])  # two hosts, unequal counts: Ray, B's GPUs ascending
    assert realises([("A", 0), ("B", 0), ("B", 1)])
    assert realises([("A", 0), ("A", 1), ("B", 1), ("B", 0)])  # equal counts: multiprocessing, any order
    assert not realises([("A", 0), ("B", 0), ("C", 0), ("C", 1)])  # 3 hosts, unequal: random node ids
    assert realises([("A", 0), ("B", 0), ("C", 1)])
    assert not realises([("A", 0), ("B", 0), ("A", 1)])  # the pipeline returns to A


# -- per-engine rules ----------------------------------------------------------------------------
def test_sglang_node_ranks_rule() -> None:
    assert [list(sg.node_ranks(4, 2, r)) for r in range(2)] == [[0, 1], [2, 3]]
    assert [list(sg.node_ranks(3, 2, r)) for r in range(2)] == [[0], [1]]  # rank 2 is never launched
    even = plan_of([("a0", "A"), ("a1", "A"), ("b0", "B"), ("b1", "B")], hosts={"A": "10.0.0.1", "B": "10.0.0.2"})
    out = render(even, "sglang", ordinals={"a0": 0, "a1": 1, "b0": 1, "b1": 0})
    assert out.cannot_express == ()
    assert [(s.host, s.argv[s.argv.index("--node-rank") + 1], dict(s.env)["CUDA_VISIBLE_DEVICES"]) for s in out.steps] == [
        ("A", "0", "0,1"), ("B", "1", "1,0"),
    ]
    assert all(s.argv[s.argv.index("--dist-init-addr") + 1] == "10.0.0.1:5000" for s in out.steps)
    uneven = plan_of([("a0", "A"), ("b0", "B"), ("b1", "B")])
    assert any("every node needs 3/2" in c for c in render(uneven, "sglang").cannot_express)


def test_trtllm_pp_partition_rule_and_nodes() -> None:
    assert trtllm.validate_pp_partition([0, 5, 7], 3, 12) == [0, 5, 7]  # torch split size 0 is legal
    with pytest.raises(ValueError, match=r"len\(self.pp_partition\)=2 does not match self.pp_size=3"):
        trtllm.validate_pp_partition([6, 6], 3, 12)
    with pytest.raises(ValueError, match=r"sum\(self.pp_partition\)=11 does not match num_layers=12"):
        trtllm.validate_pp_partition([5, 6], 2, 12)
    uneven = plan_of([("a0", "A"), ("b0", "B"), ("b1", "B")])
    assert any("gpus_per_node consecutive ranks" in c for c in render(uneven, "trtllm").cannot_express)


@pytest.mark.parametrize("target", ENGINES)
def test_embedding_and_head_stages(target: str) -> None:
    doc = plan_of([("a0", "A"), ("a1", "A")])
    doc["stages"][0]["embed"], doc["stages"][1]["embed"] = False, True  # embedding claimed on stage 1
    out = render(doc, target)
    if target == "llamacpp":  # llama.cpp keeps the embedding on the CPU whatever the plan says
        assert any("keeps the input embedding on the CPU" in w for w in out.warnings)
    else:
        assert any("always puts the embedding on the first stage" in c for c in out.cannot_express)


def test_minimum_compute_capability_per_engine() -> None:
    doc = plan_of([("a0", "A"), ("a1", "A")], gpus={"a0": "rtx-3090", "a1": "gtx-1070"})
    assert any("gtx-1070 (compute capability 6.1); vLLM needs 7.0" in u for u in render(doc, "vllm").unsupported)
    assert any("TensorRT-LLM needs 8.0" in u for u in render(doc, "trtllm").unsupported)
    assert render(doc, "llamacpp").unsupported == ()  # Pascal is in ggml-cuda's default architectures
    assert vllm.MIN_CC == (7, 0) and trtllm.MIN_CC == (8, 0)


def test_workload_and_serving_reach_the_flags() -> None:
    meta = {"model_id": "Qwen/Qwen2.5-14B", "workload": {"weights": "fp8", "kv_cache": "fp8", "activations": "bf16", "context": 8192}}
    doc = plan_of([("a0", "A"), ("a1", "A")], meta=meta)
    argv = render(doc, "vllm").steps[-1].argv
    assert argv[:3] == ("vllm", "serve", "Qwen/Qwen2.5-14B")
    assert " ".join(argv).endswith("--dtype bfloat16 --quantization fp8 --kv-cache-dtype fp8 --max-model-len 8192")
    doc["serving"] = {"max_sequences": 24, "context": 4096}
    assert " ".join(render(doc, "vllm").steps[-1].argv).endswith("--max-model-len 4096 --max-num-seqs 24")
    assert " ".join(render(doc, "sglang").steps[-1].argv).endswith("--context-length 4096 --max-running-requests 24")
    assert " ".join(render(doc, "llamacpp").steps[-1].argv).endswith("-fit off -c 98304 -np 24")
    assert "--max_seq_len 4096 --max_batch_size 24" in " ".join(render(doc, "trtllm").steps[-1].argv)



def test_one_flag_table_per_engine() -> None:
    from partitioner.export.workload import SGLANG_FLAGS, VLLM_FLAGS

    meta = {"model_id": "m", "workload": {"weights": "int4", "kv_cache": "int8", "activations": "fp16", "context": 2048}}
    doc = plan_of([("a0", "A")], meta=meta)
    for target, table in (("vllm", VLLM_FLAGS), ("sglang", SGLANG_FLAGS)):
        out = render(doc, target)
        argv = " ".join(out.steps[-1].argv)
        assert f"{table.dtype} float16 {table.context} 2048" in argv and table.kv_cache_dtype not in argv
        assert any(f"{table.engine} has no int8 KV cache" in w for w in out.warnings)
        assert any(f"add {table.quantization}" in w for w in out.warnings)
    assert (VLLM_FLAGS.kv_fp8, SGLANG_FLAGS.kv_fp8) == ("fp8", "fp8_e4m3")


# -- the scripts themselves ----------------------------------------------------------------------
HOSTILE = ["node-03;touch PWNED;", "new|line",  # control characters: refused at load (test_injection)
            "with space", "q'uo\"te", "$(touch PWNED)"]

STUB = """#!/usr/bin/env python3
import json, os, sys
env = {k: os.environ[k] for k in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "VLLM_PP_LAYER_PARTITION", "SGLANG_PP_LAYER_PARTITION", "VLLM_HOST_IP") if k in os.environ}
with open(os.environ["STUB_LOG"], "a") as f:
    f.write(json.dumps({"argv": [os.path.basename(sys.argv[0])] + sys.argv[1:], "env": env}) + "\\n")
if "rpc-server" in sys.argv[0]:  # a server: listen until the script's readiness check has connected once
    import socket
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", int(sys.argv[sys.argv.index("--port") + 1])))
    s.listen()
    s.settimeout(60)
    s.accept()
"""


def _stub_bin(tmp: Path) -> Path:
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    for name in ("vllm", "ray", "python", "trtllm-serve", "mpirun", "llama-server", "ggml-rpc-server"):
        path = bin_dir / name
        path.write_text(STUB)
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return bin_dir


@pytest.mark.skipif(BASH is None, reason="bash is not installed")
@pytest.mark.parametrize("target", ENGINES)
def test_scripts_pass_bash_and_run_the_intended_argv_with_hostile_names(target: str, tmp_path: Path) -> None:
    nodes = HOSTILE[:3] if target in ("vllm", "llamacpp") else HOSTILE[:2]
    order = [(f"dev {n}", n) for n in nodes]
    meta = {"model_id": "org/model name;touch PWNED", "workload": {"weights": "bf16", "kv_cache": "bf16", "activations": "bf16", "context": 2048}}
    doc = plan_of(order, meta=meta, hosts=dict.fromkeys(nodes))
    out = render(doc, target, ordinals={d: 0 for d, _ in order})
    assert subprocess.run([BASH, "-n"], input=out.text, text=True).returncode == 0
    bin_dir = _stub_bin(tmp_path)
    log = tmp_path / "log.jsonl"
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "STUB_LOG": str(log), "HOME": str(tmp_path)}
    for name, text in out.scripts:
        assert subprocess.run([BASH, "-n"], input=text, text=True).returncode == 0, name
        script = tmp_path / name
        script.write_text(text)
        subprocess.run([BASH, str(script)], cwd=tmp_path, env=env, check=True)
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert [c["argv"] for c in calls] == [list(s.argv) for s in out.steps]
    for call, step in zip(calls, out.steps):
        assert all(call["env"].get(k) == v for k, v in step.env)
    assert not (tmp_path / "PWNED").exists() and not Path("PWNED").exists()
    args = [a for s in out.steps for a in s.argv]
    if target in ("vllm", "sglang", "trtllm"):
        assert "org/model name;touch PWNED" in args  # the model id stays one argument
    if target == "sglang":
        assert f"{nodes[0]}:5000" in args  # the head's (hostile) name reaches its argument intact
    if target == "vllm":  # one GPU per host: the multiprocessing launch, --master-addr the head's name
        assert args.count(nodes[0]) == 3 and args.count("--master-addr") == 3
    if target == "llamacpp":
        assert f"{nodes[1]}:50052,{nodes[2]}:50052" in args  # one rpc-server per remote node


def test_world_size_is_pp_times_tp_in_every_launch() -> None:
    # vLLM/SGLang/TensorRT-LLM check world_size == pp * tp (tp 1 here): the GPUs handed out must equal S
    doc = plan_of([("a0", "A"), ("b0", "B"), ("b1", "B")], hosts={"A": "10.0.0.1", "B": "10.0.0.2"})
    ords = {"a0": 0, "b0": 0, "b1": 1}
    out = render(doc, "vllm", ordinals=ords)
    assert sum(int(s.argv[s.argv.index("--num-gpus") + 1]) for s in out.steps if s.argv[:2] == ("ray", "start")) == 3
    serve = out.steps[-1].argv
    assert serve[serve.index("--pipeline-parallel-size") + 1] == "3" and serve[serve.index("--tensor-parallel-size") + 1] == "1"
    even = plan_of([("a0", "A"), ("a1", "A"), ("b0", "B"), ("b1", "B")], hosts={"A": "10.0.0.1", "B": "10.0.0.2"})
    trt = render(even, "trtllm", ordinals={"a0": 0, "a1": 1, "b0": 0, "b1": 1}).steps[0].argv
    assert trt[trt.index("-n") + 1] == "4" and trt[trt.index("-H") + 1] == "10.0.0.1:2,10.0.0.2:2"


def test_rpc_endpoint_for_a_device_that_is_not_remote() -> None:
    from partitioner.errors import InputError

    doc = plan_of([("a0", "A"), ("b0", "B")])
    with pytest.raises(InputError, match="not remote stages of the plan: 'a0'"):
        render(doc, "llamacpp", endpoints={"a0": "h:1"})
