"""`partition catalog gpus|models|links [--json]`."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from partitioner.cli import main
from partitioner.models import catalog

GPUS = ["rtx-5090", "rtx-5090-laptop", "rtx-4090", "rtx-3090", "rtx-3080", "gtx-1070", "p40", "t4", "l4",
        "l40s", "a10g", "a100-40gb", "a100-80gb", "h100-sxm", "h100-pcie", "h200", "mi300x"]
LINKS = ["nvlink3", "nvlink4", "nvlink-bridge", "pcie3", "pcie4", "pcie5", "10gbe", "25gbe", "100gbe", "ib-hdr", "ib-ndr"]
MODELS = ["llama-3.1-8b", "llama-3.1-70b", "qwen2.5-7b", "qwen2.5-14b", "qwen2.5-72b", "mistral-7b",
          "mixtral-8x7b", "deepseek-r1-distill-qwen-14b"]


@pytest.mark.parametrize("kind, ids", [("gpus", GPUS), ("links", LINKS), ("models", MODELS)])
def test_catalog_json_lists_at_least_the_promised_ids(kind, ids):
    result = CliRunner().invoke(main, ["catalog", kind, "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert set(ids) <= {r["id"] for r in rows}


@pytest.mark.parametrize("kind, ids", [("gpus", GPUS), ("links", LINKS), ("models", MODELS)])
def test_catalog_table_shows_every_id(kind, ids):
    result = CliRunner().invoke(main, ["catalog", kind])
    assert result.exit_code == 0, result.output
    for key in ids:
        assert key in result.output


def test_catalog_json_figures():
    gpus = {r["id"]: r for r in json.loads(CliRunner().invoke(main, ["catalog", "gpus", "--json"]).output)}
    assert gpus["rtx-3090"]["bandwidth_gb_s"] == 936 and gpus["rtx-3090"]["memory_type"] == "gddr"
    assert gpus["rtx-3090"]["eta_memory"] == catalog.gpu_defaults()["eta_memory"]["gddr"][16]  # 16-bit, generic
    assert gpus["gtx-1070"]["tensor_tflops"] is None
    models = {r["id"]: r for r in json.loads(CliRunner().invoke(main, ["catalog", "models", "--json"]).output)}
    assert models["llama-3.1-70b"]["params_b"] == pytest.approx(70.55, rel=0.005)
    assert models["qwen2.5-7b"]["kv_bytes_per_token_layer"] == 2048
    assert models["mixtral-8x7b"]["experts"] == "2/8"


def test_catalog_unknown_kind_is_a_usage_error():
    result = CliRunner().invoke(main, ["catalog", "tpus"])
    assert result.exit_code == 2 and "Invalid value" in result.output
