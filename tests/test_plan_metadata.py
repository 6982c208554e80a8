"""Plan JSON metadata, its JSON Schema and the format version check."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

import partitioner
from partitioner.cli import main
from partitioner.errors import ConfigError
from partitioner.export.load import parse_plan, plan_json_schema

MODEL = """name: tiny
hf_id: org/tiny-model
layers:
  - {name: embed, kind: embed, cost: {t4: 0.001}, memory_gb: 1}
  - {name: block, repeat: 6, cost: {t4: 0.01}, memory_gb: 1}
  - {name: head, kind: head, cost: {t4: 0.002}, memory_gb: 1}
"""
CLUSTER = """devices:
  - {name: a0, gpu: t4, node: A}
  - {name: b0, gpu: t4, node: B}
nodes:
  A: {address: 10.0.0.1}
"""


def write(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "m.yaml").write_text(MODEL)
    (tmp_path / "c.yaml").write_text(CLUSTER)
    return tmp_path / "m.yaml", tmp_path / "c.yaml"


def test_metadata_fields(tmp_path: Path) -> None:
    m, c = write(tmp_path)
    doc = partitioner.plan(m, c, objective="balanced").to_dict()
    assert doc["model_id"] == "org/tiny-model" and doc["num_decoder_layers"] == 6  # layers: profile counts
    assert doc["workload"] is None  # a measured profile has no workload
    assert doc["hosts"] == [
        {"node": "A", "address": "10.0.0.1", "address_assumed": False, "devices": ["a0"]},
        {"node": "B", "address": None, "address_assumed": True, "devices": ["b0"]},
    ]
    assert doc["units"]["tau"] == "s" and doc["tool_version"] and doc["input_hash"].startswith("sha256:")
    assert partitioner.plan(m, c, objective="balanced").to_dict()["input_hash"] == doc["input_hash"]  # deterministic
    (tmp_path / "c.yaml").write_text(CLUSTER.replace("10.0.0.1", "10.0.0.2"))
    assert partitioner.plan(m, c, objective="balanced").to_dict()["input_hash"] != doc["input_hash"]


def test_preset_hf_id_and_workload() -> None:
    doc = partitioner.plan("examples/models/qwen2.5-14b.yaml", "examples/clusters/seed.yaml", objective="balanced").to_dict()
    assert doc["model_id"] == "Qwen/Qwen2.5-14B" and doc["workload"]["context"] > 0


def test_schema_validates_a_real_plan_and_is_printed(tmp_path: Path) -> None:
    m, c = write(tmp_path)
    jsonschema.validate(json.loads(partitioner.plan(m, c, objective="balanced").to_json()), plan_json_schema())
    r = CliRunner().invoke(main, ["schema", "plan"])
    assert r.exit_code == 0 and json.loads(r.stdout)["title"] == "partitioner plan.json"


def test_unknown_format_version_is_refused(tmp_path: Path) -> None:
    m, c = write(tmp_path)
    doc = partitioner.plan(m, c, objective="balanced").to_dict()
    doc["format"] = "partitioner.plan/2"
    with pytest.raises(ConfigError, match=r"format: unsupported plan format version 'partitioner.plan/2'"):
        parse_plan(doc, file="plan.json")
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(doc))
    r = CliRunner().invoke(main, ["export", str(path), "--to", "vllm"])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "partitioner.plan/2" in r.stderr


def test_bad_address_and_unknown_node(tmp_path: Path) -> None:
    m, c = write(tmp_path)
    c.write_text(CLUSTER.replace("10.0.0.1", "'10.0.0.1;rm'"))
    r = CliRunner().invoke(main, ["plan", str(m), str(c)])
    assert r.exit_code == 2 and "nodes.A.address" in r.stderr and "must be an IP address or host name" in r.stderr
    c.write_text(CLUSTER.replace("  A: {address", "  Z: {address"))
    r = CliRunner().invoke(main, ["plan", str(m), str(c)])
    assert r.exit_code == 2 and "Z" in r.stderr


def test_deploy_vllm_example_reads_the_json(tmp_path: Path) -> None:
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    r = CliRunner().invoke(main, ["plan", str(root / "examples/models/qwen2.5-14b.yaml"), str(root / "examples/clusters/seed.yaml"),
                                  "--engine", "vllm", "--out", str(tmp_path / "plan.json")])
    assert r.exit_code == 0, r.output
    run = subprocess.run([sys.executable, str(root / "examples/deploy_vllm.py"), str(tmp_path / "plan.json"), str(tmp_path / "deploy")],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    names = sorted(p.name for p in (tmp_path / "deploy").iterdir())
    assert names[0].startswith("01-") and names[-1].endswith(".sh") and len(names) >= 2
    doc = json.loads((tmp_path / "plan.json").read_text())
    doc["feasible"] = False
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    run = subprocess.run([sys.executable, str(root / "examples/deploy_vllm.py"), str(tmp_path / "bad.json")], capture_output=True, text=True)
    assert run.returncode == 3 and "infeasible" in run.stderr


def test_model_id_of_an_hf_config_model_is_its_directory(tmp_path: Path) -> None:
    from partitioner.metadata import plan_metadata
    from partitioner.models import load_cluster, load_model

    folder = tmp_path / "my-model"
    folder.mkdir()
    root = Path(__file__).resolve().parents[1]
    (folder / "config.json").write_text((root / "examples/models/qwen2.5-7b.config.json").read_text())
    (folder / "model.yaml").write_text("hf_config: config.json\n")
    meta = plan_metadata(load_model(folder / "model.yaml"), load_cluster(root / "examples/clusters/seed.yaml"))
    assert meta["model_id"] == str(folder)
    (folder / "model.yaml").write_text("hf_config: config.json\nhf_id: Qwen/Qwen2.5-7B\n")
    assert plan_metadata(load_model(folder / "model.yaml"), load_cluster(root / "examples/clusters/seed.yaml"))["model_id"] == "Qwen/Qwen2.5-7B"
