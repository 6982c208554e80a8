"""`partition costs model.yaml cluster.yaml [--json]`."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from partitioner.cli import main

EX = Path(__file__).resolve().parent.parent / "examples"
SEED = str(EX / "clusters" / "seed.yaml")


def test_costs_json_matches_the_tables():
    result = CliRunner().invoke(main, ["costs", str(EX / "models" / "qwen2.5-14b.yaml"), SEED, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["model"] == "Qwen2.5-14B"
    assert [d["name"] for d in data["devices"]] == ["laptop-5090", "node02-3090", "node03-3090", "node03-1070"]
    assert len(data["layers"]) == 50 and data["layers"][1]["name"] == "layer.0"
    assert data["layers"][1]["cut_bytes"] == 8 * 5120 * 2 * 2
    total = sum(layer["cost_s"]["node02-3090"] for layer in data["layers"])
    assert abs(total - data["totals"]["cost_s"]["node02-3090"]) < 1e-9
    assert data["links"]["bandwidth_Bps"][0][0] is None and data["links"]["bandwidth_Bps"][2][3] == 12e9


def test_costs_table():
    result = CliRunner().invoke(main, ["costs", str(EX / "models" / "llama-3.1-8b.yaml"), SEED])
    assert result.exit_code == 0, result.output
    for text in ("Llama-3.1-8B", "embed", "layer.31", "lm_head", "total", "node03-1070", "usable"):
        assert text in result.output


def test_costs_bad_input_is_one_line_exit_2(tmp_path):
    bad = tmp_path / "cluster.yaml"
    bad.write_text("devices:\n  - {name: a, gpu: rtx-3090}\n  - {name: b, gpu: rtx-309}\n")
    result = CliRunner().invoke(main, ["costs", str(EX / "models" / "llama-3.1-8b.yaml"), str(bad)])
    assert result.exit_code == 2
    assert result.output.startswith(f"error: {bad}:3: devices[1].gpu: unknown GPU id 'rtx-309'")
    assert result.output.count("\n") == 1 and "Traceback" not in result.output


def test_costs_profile_missing_device_exit_2():
    result = CliRunner().invoke(main, ["costs", str(EX / "models" / "llama2-70b-helix-profile.yaml"), SEED])
    assert result.exit_code == 2
    assert "llama2-70b-helix-profile.yaml:" in result.output and "layers[0].cost" in result.output
    assert "no cost for device 'laptop-5090'" in result.output


def test_costs_missing_file_exit_2(tmp_path):
    result = CliRunner().invoke(main, ["costs", str(tmp_path / "none.yaml"), SEED])
    assert result.exit_code == 2 and "none.yaml: file not found" in result.output
