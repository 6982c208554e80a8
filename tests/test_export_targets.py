"""Engine exports: hand-written expected text, re-checked with each engine's own rule."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from partitioner.errors import ConfigError, InputError
from partitioner.export import TARGETS, Export, llamacpp, render
from partitioner.problem import CostTables, Problem, Solution, evaluate, objective_key
from partitioner.result import Plan
from partitioner.solvers.baselines.memory import counts_per_device


def make_plan(
    devices: tuple[int, ...],
    cuts: tuple[int, ...],
    nodes: tuple[str, ...],
    n_dec: int = 10,
    kinds: bool = True,
) -> Plan:
    G = len(nodes)
    names = ("embed",) + ("decoder",) * n_dec + ("head",) if kinds else ("decoder",) * n_dec
    L = len(names)
    t = CostTables(
        cost=np.ones((G, L)),
        memory_gb=np.ones(L),
        cut_bytes=np.zeros(L),
        capacity_gb=np.full(G, 80.0),
        latency_s=np.zeros((G, G)),
        bandwidth_Bps=np.full((G, G), np.inf),
        layer_names=tuple(f"layer{i}" for i in range(L)),
        device_names=tuple(f"gpu{g}" for g in range(G)),
        gpu_names=("a100-80gb",) * G,
        node_names=nodes,
        layer_kinds=names if kinds else (),
        model_name="toy",
    )
    p = Problem(t)
    key = objective_key(p, evaluate(p, devices, cuts))
    return Plan.from_solution(p, Solution(devices=devices, cuts=cuts, solver="dp", optimal=True, objective=key, lower_bound=key[0]))


ONE_HOST = make_plan((2, 0, 3, 1), (0, 3, 6, 9, 12), ("box",) * 4)  # decoders 2, 3, 3, 2
TWO_HOSTS = make_plan((0, 1, 2), (0, 1, 5, 12), ("n0", "n0", "n1"))  # embedding-only stage 0
ORDS = {"gpu0": 0, "gpu1": 1, "gpu2": 2, "gpu3": 3}


# -- the engines' own validation rules, re-implemented here -----------------------------------
def vllm_check(out: Export, env: str, pp_size: int, num_hidden_layers: int) -> list[int]:
    """vllm/distributed/utils.py::get_pp_indices (SGLang: the same), on the serve step's environment."""
    values = {dict(step.env).get(env) for step in out.steps} - {None}
    assert len(values) == 1
    partitions = [int(x) for x in str(values.pop()).split(",")]
    assert len(partitions) == pp_size and sum(partitions) == num_hidden_layers
    return partitions


def megatron_check(layout: str, pp: int, num_layers: int) -> None:
    """PipelineParallelLayerLayout.parse_str_to_list + validate_layer_layout."""
    s = re.sub(r"(.)\*(\d+)", lambda m: m.group(1) * int(m.group(2)), layout)
    stages = s.split("|")
    flat = "".join(stages)
    assert len(stages) % pp == 0 and set(flat) <= set("ELtm")
    assert flat[0] == "E" and flat[-1] == "L" and flat.count("E") == flat.count("L") == 1
    assert flat.count("t") == num_layers


def test_vllm_one_host() -> None:
    out = render(ONE_HOST, "vllm", ordinals=ORDS)
    assert out.text == (
        "# for vLLM 0.33.0\n"
        "# vLLM: pipeline rank k runs stage k (4 ranks, tensor parallel 1)\n"
        "# rank 0: device 'gpu2' (a100-80gb) on node 'box', decoder layers 0-1 + embedding\n"
        "# rank 1: device 'gpu0' (a100-80gb) on node 'box', decoder layers 2-4\n"
        "# rank 2: device 'gpu3' (a100-80gb) on node 'box', decoder layers 5-7\n"
        "# rank 3: device 'gpu1' (a100-80gb) on node 'box', decoder layers 8-9 + LM head\n"
        "# [1] on host 'box': serve (rank k = k-th visible GPU)\n"
        "CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=2,0,3,1 VLLM_PP_LAYER_PARTITION=2,3,3,2 vllm serve MODEL --pipeline-parallel-size 4 --tensor-parallel-size 1\n"
    )
    assert out.warnings == ("the plan has no model id (hf_id:); replace MODEL with the model to serve",)
    assert out.cannot_express == () and out.unsupported == ()
    assert vllm_check(out, "VLLM_PP_LAYER_PARTITION", 4, 10) == [2, 3, 3, 2]


def test_sglang_and_trtllm_one_host() -> None:
    sg = render(ONE_HOST, "sglang", ordinals=ORDS)
    assert sg.text.endswith(
        "CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=2,0,3,1 SGLANG_PP_LAYER_PARTITION=2,3,3,2 python -m sglang.launch_server "
        "--model-path MODEL --pp-size 4 --tp-size 1\n"
    )
    vllm_check(sg, "SGLANG_PP_LAYER_PARTITION", 4, 10)
    trt = render(ONE_HOST, "trtllm", ordinals=ORDS)
    assert trt.text.endswith(
        "cat > pp_partition.yaml <<'PARTITIONER_EOF'\npp_partition: [2, 3, 3, 2]\nPARTITIONER_EOF\n"
        "CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=2,0,3,1 trtllm-serve MODEL --pp_size 4 --tp_size 1 --extra_llm_api_options pp_partition.yaml\n"
    )
    assert trt.steps[0].file is not None
    pp = json.loads(trt.steps[0].file[1].split(": ", 1)[1])
    assert len(pp) == 4 and sum(pp) == 10


def test_ordinals_inferred_from_names_with_a_warning() -> None:
    out = render(ONE_HOST, "vllm")
    assert dict(out.steps[0].env)["CUDA_VISIBLE_DEVICES"] == "2,0,3,1"
    assert out.warnings[0].startswith("CUDA ordinals assumed ('gpu2' -> 2")


def test_ordinals_follow_the_cluster_listing_before_names() -> None:
    doc = ONE_HOST.to_dict()
    for stage, listed in zip(doc["stages"], (3, 2, 1, 0), strict=True):  # listed order disagrees with the names
        stage["ordinal"] = listed
    out = render(doc, "vllm")
    assert dict(out.steps[0].env)["CUDA_VISIBLE_DEVICES"] == "3,2,1,0"


def test_llamacpp_one_host_and_replay() -> None:
    out = render(ONE_HOST, "llamacpp", ordinals=ORDS)
    assert out.text == (
        "# for llama.cpp ggml-org/llama.cpp@0c1e57098 (vendored in llama-cpp-python 0.3.36)\n"
        "# llama.cpp: layer split over 4 devices in pipeline order (n_layer 10 + output)\n"
        "# CUDA2: positions 0-1\n"
        "# CUDA0: positions 2-4\n"
        "# CUDA3: positions 5-7\n"
        "# CUDA1: positions 8-10 (the last is the output layer)\n"
        "# [1] on host 'box': serve (after every rpc-server is up)\n"
        "CUDA_DEVICE_ORDER=PCI_BUS_ID llama-server -m MODEL.gguf --split-mode layer --n-gpu-layers 11 --tensor-split 2,3,3,3 "
        "--device CUDA2,CUDA0,CUDA3,CUDA1 -fit off\n"
    )
    assert out.warnings == (
        "llama.cpp keeps the input embedding on the CPU of 'box', not on stage 0's GPU",
        "llama.cpp loads a GGUF file: replace MODEL.gguf with the GGUF of toy",
    )
    ts = [int(x) for x in re.search(r"--tensor-split (\S+)", out.text).group(1).split(",")]  # type: ignore[union-attr]
    # llama.cpp's rule: 10 repeating layers + 1 output, upper_bound over cumulative fractions
    assert counts_per_device(ts, 10) == [2, 3, 3, 3]


def test_llamacpp_two_hosts_embedding_only_stage() -> None:
    out = render(TWO_HOSTS, "llamacpp", ordinals={"gpu0": 0, "gpu1": 1, "gpu2": 0})
    assert out.text == (
        "# for llama.cpp ggml-org/llama.cpp@0c1e57098 (vendored in llama-cpp-python 0.3.36)\n"
        "# llama.cpp: layer split over 2 devices in pipeline order (n_layer 10 + output)\n"
        "# CUDA1: positions 0-3\n"
        "# RPC0: positions 4-10 (the last is the output layer)\n"
        "# [1] on host 'n1': rpc-server for 'gpu2'\n"
        "# (older builds name the binary 'rpc-server')\n"
        "CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=0 ggml-rpc-server --host 0.0.0.0 --port 50052 &\n"
        "# [2] on host 'n0': serve (after every rpc-server is up)\n"
        "CUDA_DEVICE_ORDER=PCI_BUS_ID llama-server -m MODEL.gguf --split-mode layer --n-gpu-layers 11 --tensor-split 4,7 "
        "--rpc n1:50052 --device CUDA1,RPC0 -fit off\n"
    )
    assert out.cannot_express == (
        "stage 0 ('gpu0') holds only the embedding, which llama.cpp keeps on the CPU of 'n0'; "
        "the device gets no layers and is left out of --device",
    )
    assert any("rpc-server endpoints assumed ('gpu2' -> n1:50052)" in w for w in out.warnings)
    custom = render(TWO_HOSTS, "llamacpp", ordinals={"gpu0": 0, "gpu1": 1, "gpu2": 0}, endpoints={"gpu2": "10.0.0.7:6000"})
    assert "--rpc 10.0.0.7:6000 " in custom.text and "--port 6000" in custom.text


def test_vllm_two_hosts_zero_decoder_stage() -> None:
    out = render(TWO_HOSTS, "vllm", ordinals={"gpu0": 0, "gpu1": 1, "gpu2": 0})
    # n1 has fewer workers than n0, but n0 is the driver's node: ranks n0:0, n0:1, n1:0 as planned
    assert [(s.host, s.argv[:3], dict(s.env).get("CUDA_VISIBLE_DEVICES")) for s in out.steps[:2]] == [
        ("n0", ("ray", "start", "--head"), "0,1"),
        ("n1", ("ray", "start", "--address"), "0"),
    ]
    assert out.steps[2].argv[:2] == ("vllm", "serve") and "--distributed-executor-backend" in out.steps[2].argv
    assert out.cannot_express == ()
    assert vllm_check(out, "VLLM_PP_LAYER_PARTITION", 3, 10) == [0, 4, 6]
    assert any("stage 0 ('gpu0') has 0 decoder layers" in w for w in out.warnings)
    assert any("no address: for nodes ['n0', 'n1']" in w for w in out.warnings)
    sg = render(TWO_HOSTS, "sglang", ordinals={"gpu0": 0, "gpu1": 1, "gpu2": 0})
    assert any("every node needs 3/2 consecutive stages" in c for c in sg.cannot_express)


def test_vllm_cannot_return_to_a_node() -> None:
    plan = make_plan((0, 1, 2), (0, 4, 8, 12), ("n0", "n1", "n0"))
    out = render(plan, "vllm")
    assert out.cannot_express == ("vLLM cannot return to node 'n0': its stages must be consecutive ranks",)


def test_deepspeed_parts() -> None:
    out = render(ONE_HOST, "deepspeed")
    assert out.text.endswith("parts=[0, 3, 6, 9, 12]\n")
    parts = json.loads(out.text.rsplit("parts=", 1)[1])
    assert len(parts) == 4 + 1 and parts[0] == 0 and parts[-1] == 12 and parts == sorted(parts)
    assert "#2974" in out.warnings[0]


def test_torchgpipe_balance() -> None:
    out = render(ONE_HOST, "torchgpipe", ordinals=ORDS)
    assert out.text.endswith("balance=[3, 3, 3, 3]\ndevices=['cuda:2', 'cuda:0', 'cuda:3', 'cuda:1']\n")
    balance = json.loads(re.search(r"^balance=(.*)$", out.text, re.M).group(1))  # type: ignore[union-attr]
    assert sum(balance) == 12 and all(x > 0 for x in balance)  # torchgpipe split_module checks
    two = render(TWO_HOSTS, "torchgpipe", ordinals={"gpu0": 0, "gpu1": 1, "gpu2": 0})
    assert two.cannot_express == ("torchgpipe runs in one process on one host, but the plan spans nodes ['n0', 'n1']",)


def test_megatron_layout() -> None:
    out = render(ONE_HOST, "megatron")
    assert out.text.endswith('--pipeline-model-parallel-size 4 --pipeline-model-parallel-layout "Et*2|t*3|t*3|t*2L"\n')
    megatron_check("Et*2|t*3|t*3|t*2L", 4, 10)
    two = render(TWO_HOSTS, "megatron")
    assert '"E|t*4|t*6L"' in two.text
    megatron_check("E|t*4|t*6L", 3, 10)


def test_profile_model_without_embedding_or_head() -> None:
    plan = make_plan((0, 1), (0, 5, 8), ("box", "box"), n_dec=8, kinds=False)
    out = render(plan, "megatron")
    assert '"Et*5|t*3L"' in out.text
    assert any("no embedding or LM head layer" in w for w in out.warnings)
    assert vllm_check(render(plan, "vllm"), "VLLM_PP_LAYER_PARTITION", 2, 8) == [5, 3]


def test_json_is_the_plan_and_dicts_are_accepted() -> None:
    out = render(ONE_HOST, "json")
    assert json.loads(out.text) == json.loads(ONE_HOST.to_json())
    assert render(ONE_HOST.to_dict(), "vllm", ordinals=ORDS) == render(ONE_HOST, "vllm", ordinals=ORDS)


def test_every_target_renders() -> None:
    for target in TARGETS:
        out = render(ONE_HOST, target, ordinals=ORDS)
        assert isinstance(out, Export) and out.target == target and out.text.endswith("\n")


def test_errors() -> None:
    with pytest.raises(InputError, match="unknown export target 'ollama'"):
        render(ONE_HOST, "ollama")
    with pytest.raises(InputError, match="cannot export a int"):
        render(3, "vllm")
    with pytest.raises(InputError, match="not in the plan: 'gpu9'"):
        render(ONE_HOST, "vllm", ordinals={"gpu9": 0})
    with pytest.raises(InputError, match="same CUDA ordinal"):
        render(ONE_HOST, "vllm", ordinals={"gpu0": 1, "gpu1": 1})
    bad = ONE_HOST.to_dict()
    bad["stages"][1]["start"] = 4
    with pytest.raises(ConfigError, match=r"stages\[1\]\.start: must be 3"):
        render(bad, "vllm")
    bad = ONE_HOST.to_dict()
    del bad["stages"][0]["end"]
    with pytest.raises(ConfigError, match=r"stages\[0\]\.end: Field required"):
        render(bad, "vllm")


@given(st.lists(st.integers(1, 40), min_size=1, max_size=12))
@settings(max_examples=60)
def test_llamacpp_integer_tensor_split_replays_exactly(ts: list[int]) -> None:
    # -ts counts summing to n_layer + 1: llama.cpp's float32 upper_bound rule gives back the counts
    assert llamacpp.replay(ts, sum(ts) - 1) == ts
