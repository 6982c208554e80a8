"""Accepted nonsense is refused: time limits that are not finite, positive, usable seconds; TP
degrees no node can hold or that do not divide the model's heads; an empty or dangling --out; and
a TP group's tokens/s per GPU divides by its GPUs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from partitioner.cli import main

REPO = Path(__file__).resolve().parents[1]
MODEL = str(REPO / "examples/models/llama-3.1-8b.yaml")  # 32 attention heads
CLUSTER = str(REPO / "examples/clusters/l4x8.yaml")


def _run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(main, list(args))
    return res.exit_code, res.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e20", "1e-320", "0", "-1", "1e-9"])
@pytest.mark.parametrize("command", ["plan", "report"])
def test_time_limit_must_be_finite_usable_seconds(command: str, value: str) -> None:
    code, err = _run(command, MODEL, CLUSTER, "--time-limit", value)
    assert code == 2 and err.count("\n") == 1
    assert "--time-limit': must be a finite number of seconds in [0.001, 1e+07]" in err


def _cluster(tmp_path: Path, tp: str, per_node: int = 4) -> str:
    path = tmp_path / "c.yaml"
    devices = "".join(f"  - {{name: g{i}, gpu: l4, node: n{i // per_node}}}\n" for i in range(8))
    path.write_text(f"name: c\ndevices:\n{devices}tp: {tp}\n")
    return str(path)


@pytest.mark.parametrize(("tp", "message"), [
    ("[]", "tp: needs at least one tensor-parallel degree"),
    ("[16]", "tp: no listed tensor-parallel degree fits: a group of 16 needs 16 GPUs in one node, but the largest node has 4"),
    ("{default: [1], n1: [8]}", "tp.n1: no listed tensor-parallel degree fits: a group of 8 needs 8 GPUs in one node, but node 'n1' has 4"),
    ("[3]", "tp: tensor-parallel degree 3 does not divide the model's 32 attention heads"),
    ("[1, 2, 6]", "tp: tensor-parallel degree 6 does not divide the model's 32 attention heads"),
])
def test_tp_degrees_are_checked_at_load(tmp_path: Path, tp: str, message: str) -> None:
    code, err = _run("plan", MODEL, _cluster(tmp_path, tp), "--tp", "auto")
    assert code == 2 and err.count("\n") == 1 and message in err, err


def test_a_tp_list_wider_than_small_nodes_is_fine(tmp_path: Path) -> None:
    code, err = _run("plan", MODEL, _cluster(tmp_path, "[1, 2, 4, 8]", per_node=2), "--tp", "auto", "--json")
    assert code == 0, err


@pytest.mark.parametrize("form", [["--out", ""], ["--out="], ["--out", "  "]])
def test_an_empty_out_is_refused(form: list[str]) -> None:
    code, err = _run("plan", MODEL, CLUSTER, *form)
    assert code == 2 and err == "error: --out: the path is empty; give a file name (or - for standard output where it is allowed)\n"


def test_a_dangling_symlink_out_is_not_replaced(tmp_path: Path) -> None:
    link = tmp_path / "plan.json"
    os.symlink(tmp_path / "missing" / "target.json", link)
    code, err = _run("plan", MODEL, CLUSTER, "--out", str(link))
    assert code == 2 and "is a symlink to a missing file" in err
    assert link.is_symlink() and not (tmp_path / "missing").exists()


def test_tokens_per_gpu_divides_by_the_tp_group(tmp_path: Path) -> None:
    path = tmp_path / "tp4.yaml"
    path.write_text("name: c\ndevices:\n" + "".join(f"  - {{name: g{i}, gpu: l4, node: a}}\n" for i in range(4)) + "tp: [4]\n")
    res = CliRunner().invoke(main, ["plan", MODEL, str(path), "--tp", "auto", "--objective", "serve", "--json"])
    assert res.exit_code == 0, res.stderr
    doc = json.loads(res.stdout)
    gpus = sum(st.get("tp", 1) for st in doc["stages"])
    assert gpus == 4
    assert doc["serving"]["tokens_per_s_per_gpu"] == pytest.approx(doc["serving"]["tokens_per_s"] / 4)
