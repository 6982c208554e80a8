"""`partition calibrate engine-log`: fixture logs in the engines' own line formats (the format
strings cited in partitioner/calibrate/engine_log.py; the numbers of the first three are those of
github.com/vllm-project/vllm/pull/14447, issues/10517 and pull/10511)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from partitioner.calibrate.engine_log import parse_engine_log
from partitioner.cli import main
from partitioner.errors import InputError
from partitioner.models import load_cluster

VLLM_08 = """\
(VllmWorkerProcess pid=521) INFO 04-12 08:21:19 [worker.py:267] Memory profiling takes 17.59 seconds
(VllmWorkerProcess pid=521) INFO 04-12 08:21:19 [worker.py:267] the current vLLM instance can use total_gpu_memory (23.58GiB) x gpu_memory_utilization (0.99) = 23.35GiB
(VllmWorkerProcess pid=521) INFO 04-12 08:21:19 [worker.py:267] model weights take 21.21GiB; non_torch_memory takes 0.20GiB; PyTorch activation peak memory takes 0.37GiB; the rest of the memory reserved for KV Cache is 1.57GiB.
INFO 04-12 08:21:19 [worker.py:267] the current vLLM instance can use total_gpu_memory (23.58GiB) x gpu_memory_utilization (0.99) = 23.35GiB
INFO 04-12 08:21:19 [worker.py:267] model weights take 21.21GiB; non_torch_memory takes 0.30GiB; PyTorch activation peak memory takes 0.62GiB; the rest of the memory reserved for KV Cache is 1.22GiB.
"""
VLLM_064 = """\
INFO 11-21 10:00:00 model_runner.py:1077] Loading model weights took 14.9888 GB
INFO 11-21 10:00:03 worker.py:232] Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB peak_torch_memory=17.06GiB memory_usage_post_profile=15.35GiB non_torch_memory=0.35GiB kv_cache_size=3.81GiB gpu_memory_utilization=0.90
INFO 11-21 10:00:03 gpu_executor.py:113] # GPU blocks: 1952, # CPU blocks: 2048
"""
VLLM_V1 = """\
(EngineCore_DP0 pid=93) INFO 09-01 10:00:00 [gpu_model_runner.py:2340] Model loading took 14.9595 GiB and 4.1 seconds
(EngineCore_DP0 pid=93) INFO 09-01 10:00:09 [gpu_worker.py:298] Available KV cache memory: 53.29 GiB
(EngineCore_DP0 pid=93) INFO 09-01 10:00:09 [kv_cache_utils.py:1087] GPU KV cache size: 436,544 tokens
"""
SGLANG = """\
[2025-07-22 10:00:00 TP0] server_args=ServerArgs(model_path='Qwen/Qwen3-235B-A22B-FP8', mem_fraction_static=0.93, tp_size=4)
[2025-07-22 10:00:01 TP0] Load weight begin. avail mem=78.68 GB
[2025-07-22 10:00:40 TP0] Load weight end. type=Qwen3MoeForCausalLM, dtype=torch.bfloat16, avail mem=23.01 GB, mem usage=55.67 GB.
[2025-07-22 10:00:41 TP0] KV Cache is allocated. #tokens: 367404, K size: 8.23 GB, V size: 8.23 GB
[2025-07-22 10:00:50 TP0] max_total_num_tokens=367404, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=2048, context_len=40960, available_gpu_mem=5.31 GB
"""


def test_vllm_08_lines_give_activation_plus_non_torch_per_worker():
    log = parse_engine_log(VLLM_08)
    assert log.engine == "vllm" and log.non_kv_gib == pytest.approx((0.57, 0.92))
    assert log.kv_gib == 1.22 and log.total_gib == 23.58 and log.fraction == 0.99
    assert log.non_kv_for(99.0, 0.5) == pytest.approx(0.92)  # the worst worker; the log's own u·M win


def test_vllm_064_results_line_with_the_weights_line():
    log = parse_engine_log(VLLM_064)
    assert log.non_kv_gib == pytest.approx((0.9 * 23.58 - 14.9888 - 3.81,))  # 2.42 GiB: activation + non-torch


def test_vllm_v1_lines_take_memory_and_fraction_from_the_caller():
    log = parse_engine_log(VLLM_V1)
    assert log.non_kv_gib == () and log.kv_tokens == 436544
    assert log.non_kv_for(79.19, 0.9) == pytest.approx(0.9 * 79.19 - 14.9595 - 53.29)


def test_sglang_lines():
    log = parse_engine_log(SGLANG)
    assert log.engine == "sglang" and log.kv_tokens == 367404 and log.kv_gib == pytest.approx(16.46)
    assert log.non_kv_gib == pytest.approx((0.93 * 78.68 - 55.67 - 16.46,))


def test_a_file_without_memory_lines_names_what_it_looked_for():
    with pytest.raises(InputError, match=r"app\.log: no start-up memory lines found; expected vLLM's"):
        parse_engine_log("INFO starting server\n", "app.log")


def _files(tmp_path: Path, log: str) -> tuple[str, str]:
    lp, cp = tmp_path / "engine.log", tmp_path / "cluster.yaml"
    lp.write_text(log)
    cp.write_text("devices:\n  - {name: g0, gpu: h100-sxm}\n  - {name: g1, gpu: h100-sxm}\nengine: vllm\n")
    return str(lp), str(cp)


def test_cli_writes_non_kv_into_a_copy_of_the_cluster(tmp_path):
    lp, cp = _files(tmp_path, VLLM_V1)
    out = tmp_path / "calibrated.yaml"
    r = CliRunner().invoke(main, ["calibrate", "engine-log", lp, "--cluster", cp, "--write-cluster", str(out),
                                  "--devices", "g1", "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    assert got["non_kv_gib"] == pytest.approx(round(0.9 * 79.19 - 14.9595 - 53.29, 2))
    cluster = load_cluster(out)
    assert [d.non_kv_gib for d in cluster.devices] == [None, got["non_kv_gib"]]
    assert yaml.safe_load(Path(cp).read_text())["devices"][1] == {"name": "g1", "gpu": "h100-sxm"}  # input untouched


def test_cli_refuses_to_overwrite_its_input_and_needs_a_cluster(tmp_path):
    lp, cp = _files(tmp_path, VLLM_08)
    r = CliRunner().invoke(main, ["calibrate", "engine-log", lp, "--cluster", cp, "--write-cluster", cp])
    assert r.exit_code != 0 and "\n" not in r.output.strip() and "Traceback" not in r.output
    r = CliRunner().invoke(main, ["calibrate", "engine-log", lp, "--write-cluster", str(tmp_path / "x.yaml")])
    assert r.exit_code != 0 and "--write-cluster needs --cluster" in r.output
    v1, _ = _files(tmp_path, VLLM_V1)
    r = CliRunner().invoke(main, ["calibrate", "engine-log", v1])
    assert r.exit_code != 0 and "pass --cluster" in r.output
