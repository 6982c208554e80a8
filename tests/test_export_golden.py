"""Golden launch plans per target: one host, uneven GPU counts across hosts, a stage holding only the
embedding, a Pascal GPU, and tensor-parallel stages (TP 2) on one host and across hosts. Hand-built plans (no roofline numbers); regenerate the files with
PARTITIONER_UPDATE_GOLDEN=1 pytest tests/test_export_golden.py and review the diff."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_export_launch import plan_of
from test_export_tp import tp_plan

from partitioner.export import TARGETS, render

GOLDEN = Path(__file__).parent / "data" / "golden_exports"
META = {"model_id": "Qwen/Qwen2.5-14B", "workload": {"weights": "bf16", "kv_cache": "fp8", "activations": "bf16", "context": 8192}}
HOSTS = {"head": "10.0.0.1", "box": "10.0.0.2"}

SCENARIOS = {
    # stage order 2, 0, 1 on one host: CUDA_VISIBLE_DEVICES carries the order
    "one-host": (plan_of([("gpu2", "box"), ("gpu0", "box"), ("gpu1", "box")], meta=META, hosts={"box": "10.0.0.2"}),
                 {"gpu0": 0, "gpu1": 1, "gpu2": 2}),
    # one GPU on the head, two on the other host (fewer workers first: Ray keeps this order)
    "uneven-hosts": (plan_of([("h0", "head"), ("b0", "box"), ("b1", "box")], meta=META, hosts=HOSTS),
                     {"h0": 0, "b0": 0, "b1": 1}),
    # stage 0 holds only the embedding (0 decoder layers)
    "embed-only": (None, {"h0": 0, "b0": 0}),
    # a GTX 1070 (compute capability 6.1) on the second host
    "pascal": (plan_of([("h0", "head"), ("b0", "box")], gpus={"h0": "rtx-3090", "b0": "gtx-1070"}, meta=META, hosts=HOSTS),
               {"h0": 0, "b0": 0}),
    # TP 2 on one host: stage 0 on GPUs 2, 3, stage 1 on GPUs 0, 1 (ordinals from the hosts' device lists)
    "tp-one-host": (tp_plan([(["g2", "g3"], "box"), (["g0", "g1"], "box")], meta=META, hosts={"box": "10.0.0.2"}), None),
    # TP 2 over two hosts: one group on the head, two on the other host (fewer workers first: Ray keeps it)
    "tp-hosts": (tp_plan([(["h0", "h1"], "head"), (["b0", "b1"], "box"), (["b2", "b3"], "box")], meta=META, hosts=HOSTS), None),
    # TP 2, two groups on each of two hosts: every engine's per-node rank rule holds
    "tp-even-hosts": (tp_plan([(["h0", "h1"], "head"), (["h2", "h3"], "head"), (["b0", "b1"], "box"), (["b2", "b3"], "box")],
                              n_dec=16, meta=META, hosts=HOSTS), None),
}


def _embed_only() -> dict:
    doc = plan_of([("h0", "head"), ("b0", "box")], meta=META, hosts=HOSTS)
    first, second = doc["stages"]
    first["end"], first["decoder_layers"], first["last_layer"] = 1, 0, first["first_layer"]
    second["start"], second["decoder_layers"] = 1, doc["num_layers"] - 2
    return doc


def rendered(scenario: str, target: str) -> str:
    doc, ords = SCENARIOS[scenario]
    out = render(doc if doc is not None else _embed_only(), target, ordinals=ords)
    parts = [out.text]
    for title, items in (("warnings", out.warnings), ("cannot express", out.cannot_express), ("unsupported GPU", out.unsupported)):
        parts.append(f"--- {title}\n" + "".join(f"{x}\n" for x in items))
    for name, text in out.scripts:
        parts.append(f"--- script {name}\n{text}")
    return "".join(parts)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_golden(scenario: str, target: str) -> None:
    if target == "json":
        pytest.skip("the json target is the plan itself (test_export_targets)")
    path = GOLDEN / f"{scenario}-{target}.txt"
    text = rendered(scenario, target)
    if os.environ.get("PARTITIONER_UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"missing golden file {path}; run with PARTITIONER_UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8")
