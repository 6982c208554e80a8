"""Every `vllm serve`, SGLang and `ray start` line the exporters print goes through the engine's own
argument parser at a pinned version (vLLM 0.33.0, SGLang 0.5.23, Ray 2.60.0; installed without GPU
dependencies by tests/engines/install.sh into a venv of its own, named by PARTITIONER_ENGINES_PYTHON).

The corpus: the golden exports (tests/data/golden_exports) and the exports of the plans below
(three hosts with the multiprocessing launch, an older vLLM release, serving flags, a deployment
with data parallelism). Where an engine cannot be installed or imported the test says so and
skips; with PARTITIONER_ENGINES_REQUIRED=1 (set by .ci/run once the install succeeded) it fails.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from test_export_launch import plan_of
from test_export_tp import tp_plan

from partitioner.export import render

ROOT = Path(__file__).parent
GOLDEN = ROOT / "data" / "golden_exports"
PYTHON = os.environ.get("PARTITIONER_ENGINES_PYTHON", "")
REQUIRED = os.environ.get("PARTITIONER_ENGINES_REQUIRED") == "1"
_ENV = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
KINDS = {"vllm": ("vllm", "serve"), "sglang": ("python", "-m", "sglang.launch_server"), "ray": ("ray", "start")}


def _engine_argv(line: str) -> list[str] | None:
    if line.startswith("#") or not line.strip():
        return None
    try:
        words = shlex.split(line)
    except ValueError:
        return None
    while words and _ENV.match(words[0]):
        words.pop(0)
    return words if any(tuple(words[:len(k)]) == k for k in KINDS.values()) else None


def _extra_texts() -> list[str]:
    meta = {"model_id": "Qwen/Qwen2.5-14B", "workload": {"weights": "bf16", "kv_cache": "fp8", "activations": "bf16",
                                                         "context": 8192}}
    hosts = {"A": "10.0.0.1", "B": "10.0.0.2", "C": "10.0.0.3"}
    three = plan_of([("a0", "A"), ("a1", "A"), ("b0", "B"), ("b1", "B"), ("c0", "C"), ("c1", "C")], hosts=hosts, meta=meta)
    served = plan_of([("a0", "A"), ("b0", "B"), ("b1", "B")], hosts=hosts, meta=meta)
    served["serving"] = {"max_sequences": 64, "context": 4096}
    int4 = plan_of([("a0", "A")], meta={"model_id": "m", "workload": {"weights": "int4", "kv_cache": "int8", "activations": "fp16",
                                                                     "context": 2048}})
    tp = tp_plan([(["a0", "a1"], "A"), (["b0", "b1"], "B"), (["c0", "c1"], "C")], hosts=hosts, meta=meta)
    out = []
    for doc in (three, served, int4, tp):
        for target in ("vllm", "sglang"):
            out.append(render(doc, target).text)
    out.append(render(served, "vllm", engine_version="0.11.0").text)
    from test_export_replicas import _hosts_three  # a deployment: per-replica and data-parallel launches

    dep, _ = _hosts_three()
    out += [render(dep, "vllm").text, render(dep, "sglang").text]
    return out


def corpus() -> dict[str, list[list[str]]]:
    texts = [p.read_text() for p in sorted(GOLDEN.glob("*.txt"))] + _extra_texts()
    seen: dict[str, list[str]] = {}
    for text in texts:
        for line in text.splitlines():
            argv = _engine_argv(line)
            if argv is not None:
                seen.setdefault(shlex.join(argv), argv)
    out: dict[str, list[list[str]]] = {k: [] for k in KINDS}
    for argv in seen.values():
        out[next(k for k, pre in KINDS.items() if tuple(argv[:len(pre)]) == pre)].append(argv)
    return out


def test_the_corpus_has_every_kind_of_line() -> None:
    lines = corpus()
    assert all(lines[k] for k in KINDS), {k: len(v) for k, v in lines.items()}
    flags = {a for argv in lines["vllm"] for a in argv if a.startswith("--")}
    assert {"--nnodes", "--headless", "--distributed-executor-backend", "--data-parallel-size", "--max-num-seqs"} <= flags


@pytest.fixture(scope="module")
def parsed() -> dict[str, list[tuple[list[str], dict]]]:
    if not PYTHON or not Path(PYTHON).exists():
        msg = "the engines are not installed: run tests/engines/install.sh VENV and set PARTITIONER_ENGINES_PYTHON=VENV/bin/python"
        if REQUIRED:
            pytest.fail(msg)
        pytest.skip(msg)
    lines = corpus()
    flat = [argv for k in KINDS for argv in lines[k]]
    r = subprocess.run([PYTHON, str(ROOT / "engines" / "parse_lines.py")], input=json.dumps(flat), capture_output=True,
                       text=True, timeout=900, env={**os.environ, "CUDA_VISIBLE_DEVICES": "", "VLLM_TARGET_DEVICE": "cpu"})
    assert r.returncode == 0, r.stderr[-3000:]
    results = iter(json.loads(r.stdout))
    return {k: [(argv, next(results)) for argv in lines[k]] for k in KINDS}


@pytest.mark.parametrize("engine", list(KINDS))
def test_every_printed_line_parses_with_the_engines_own_parser(engine: str, parsed) -> None:
    got = parsed[engine]
    skips = {res["skip"] for _, res in got if "skip" in res}
    if skips:
        if REQUIRED:
            pytest.fail("; ".join(sorted(skips)))
        pytest.skip("; ".join(sorted(skips)))
    bad = [(shlex.join(argv), res["error"]) for argv, res in got if not res["ok"]]
    assert not bad, bad
    assert len(got) >= 3
