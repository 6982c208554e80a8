"""Every user file goes through the safe reader (partitioner.userfiles): `score --layout`, plan.json
and CSVs refuse FIFOs, devices and special files by name, and bad text with one line; a top-level
list longer than its limit is refused while the YAML is read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from partitioner.cli import main

REPO = Path(__file__).resolve().parents[1]
MODEL = str(REPO / "examples/models/llama-3.1-8b.yaml")
CLUSTER = str(REPO / "examples/clusters/l4x8.yaml")


def _score_layout(path: str) -> tuple[int, str]:
    res = CliRunner().invoke(main, ["score", MODEL, CLUSTER, "--layout", path])
    return res.exit_code, res.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_score_layout_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "layout.yaml"
    os.mkfifo(fifo)
    code, err = _score_layout(str(fifo))
    assert code == 2 and err == f"error: {fifo}: is a FIFO, not a regular file; partitioner reads only regular files\n"


@pytest.mark.parametrize(("content", "message"), [
    (b"replicas:\n\t- stages: []\n", "malformed YAML"),
    (b"replicas: [\x00]\n", "control character U+0000 is not allowed in YAML"),
    (b"\xff\xfe\x00r", "not utf-8 text"),
    (b"- a\n- b\n", "expected a mapping at the top level"),
])
def test_score_layout_bad_text_is_one_line(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "layout.yaml"
    path.write_bytes(content)
    code, err = _score_layout(str(path))
    assert code == 2 and err.count("\n") == 1 and err.startswith(f"error: {path}") and message in err


@pytest.mark.parametrize("special", ["/dev/zero", "/proc/self/environ"])
def test_score_layout_refuses_special_files(special: str) -> None:
    if not Path(special).exists():
        pytest.skip(f"no {special}")
    code, err = _score_layout(special)
    assert code == 2 and err.count("\n") == 1 and err.startswith(f"error: {special}")


def test_a_long_top_level_list_is_refused_while_it_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The composer stops at item MAX_DEVICES + 1; the items after it (here unparseable) are never read."""
    monkeypatch.setenv("PARTITIONER_MAX_DEVICES", "3")
    path = tmp_path / "c.yaml"
    path.write_text("name: c\ndevices:\n" + "- {name: g, gpu: l4}\n" * 4 + "- [unclosed\n" * 100)
    res = CliRunner().invoke(main, ["plan", MODEL, str(path)])
    assert res.exit_code == 2 and "c.yaml:6: devices: more than 3 devices exceeds the limit MAX_DEVICES = 3" in res.stderr


def test_plan_json_integer_digits_and_nan_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_text('{"format": "partitioner.plan/1", "num_layers": ' + "9" * 5000 + "}")
    res = CliRunner().invoke(main, ["export", str(path), "--to", "vllm"])
    assert res.exit_code == 2 and "MAX_INT_DIGITS" in res.stderr and res.stderr.count("\n") == 1
    path.write_text('{"format": "partitioner.plan/1", "num_layers": NaN}')
    res = CliRunner().invoke(main, ["export", str(path), "--to", "vllm"])
    assert res.exit_code == 2 and "NaN is not JSON" in res.stderr
