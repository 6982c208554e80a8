"""`calibrate measure` is optional: without torch it explains how to install it (these tests run
without torch too), and help or import never loads torch or transformers."""

from __future__ import annotations

import subprocess
import sys

import pytest
from click.testing import CliRunner

from partitioner.calibrate.measure import MissingDependencyError, measure, require
from partitioner.cli import main

HINT = ("from a checkout of the partitioner repository run pip install '.[measure]' "
        "(CPU only: pip install torch --index-url https://download.pytorch.org/whl/cpu first)")


def test_missing_torch_is_one_line_with_the_install_hint(monkeypatch, tmp_path) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError
    out = tmp_path / "t.csv"
    res = CliRunner().invoke(main, ["calibrate", "measure", "--factory", "nets.py:build", "--out", str(out)])
    assert res.exit_code == 2
    assert res.stderr == f"error: torch is not installed; `partition calibrate measure` needs it: {HINT}\n"
    assert not out.exists()


def test_missing_transformers_names_hf_config(monkeypatch, tmp_path) -> None:
    pytest.importorskip("torch")
    monkeypatch.setitem(sys.modules, "transformers", None)
    config = tmp_path / "config.json"
    config.write_text('{"model_type": "llama"}', encoding="utf-8")
    res = CliRunner().invoke(main, ["calibrate", "measure", "--hf-config", str(config), "--out", str(tmp_path / "t.csv")])
    assert res.exit_code == 2
    assert res.stderr == f"error: transformers is not installed; --hf-config needs it: {HINT}\n"


def test_core_api_without_torch(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(MissingDependencyError, match=r"^torch is not installed; .*pip install '\.\[measure\]'"):
        require("torch")
    with pytest.raises(MissingDependencyError, match="torch is not installed"):
        measure(object())


def test_help_and_import_never_load_torch() -> None:
    probe = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "import partitioner.calibrate.measure, partitioner.calibrate.measure_parts\n"
        "from partitioner.cli import main\n"
        "helps = [CliRunner().invoke(main, a) for a in (['--help'], ['calibrate', '--help'],"
        " ['calibrate', 'measure', '--help'])]\n"
        "assert all(r.exit_code == 0 for r in helps), [r.output for r in helps]\n"
        "print('Time each layer of a PyTorch' in helps[1].output, 'random weights' in helps[2].output,"
        " 'torch' in sys.modules, 'transformers' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "False", "False"]
