"""`partition calibrate measure --factory ...` end to end on the CPU (skipped without torch).

A factory file in tmp_path builds a tiny pure-torch model; the command writes the timings CSV
(read back with `partitioner.calibrate.timings`), refuses to clobber user files, and turns every
bad argument into one line with exit code 2.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("torch")

from partitioner.calibrate import CALIBRATE_MARKER
from partitioner.calibrate.timings import read_timings
from partitioner.cli import main

FACTORY = '''
import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = torch.nn.Embedding(16, 4)
        self.h = torch.nn.ModuleList(torch.nn.Linear(4, 4) for _ in range(2))
        self.lm_head = torch.nn.Linear(4, 16)

    def forward(self, ids):
        x = self.tok(ids)
        for layer in self.h:
            x = layer(x)
        return self.lm_head(x)

def build():
    return Net()

def not_a_module():
    return [1, 2]

def broken():
    raise KeyError("no such size")

VALUE = 3
'''


@pytest.fixture()
def factory(tmp_path: Path) -> Path:
    path = tmp_path / "nets.py"
    path.write_text(FACTORY, encoding="utf-8")
    return path


def run(*args: str):
    return CliRunner().invoke(main, ["calibrate", "measure", *args])


def quick(factory: Path, out: Path, *extra: str):
    return run("--factory", f"{factory}:build", "--repeats", "2", "--warmup", "0", "--out", str(out), *extra)


def test_writes_a_timings_csv_for_the_grid(factory: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.csv"
    res = quick(factory, out, "--batch", "1,2", "--tokens", "3,5", "--label", "rtx-3090")
    assert res.exit_code == 0, res.output
    rows = read_timings(out, num_layers=2)
    assert [(t.batch, t.tokens, t.layer) for t in rows] == [
        (b, n, layer) for b in (1, 2) for n in (3, 5) for layer in ("embed", "0", "1", "lm_head")]
    assert {(t.device, t.phase, t.samples) for t in rows} == {("rtx-3090", "prefill", 2)}
    assert all(t.seconds > 0 for t in rows)
    head = out.read_text().splitlines()[:4]
    assert CALIBRATE_MARKER in head[0] and head[1].startswith("# torch ") and "dtype float32" in head[1]
    assert head[2] == f"# model: Net from {factory}:build; layers h (2 x Linear), embed tok, head lm_head"
    assert head[3] == "# seconds: median of 2 timed forward passes after 0 warm-up passes"
    assert "prefill batch 2 tokens 5: embed" in res.stdout and f"wrote 16 rows to {out}" in res.stdout
    assert "note:" not in res.stdout
    assert "timing prefill: batch 1, tokens 3" in res.stderr


def test_default_label_is_the_torch_device_with_a_hint(factory: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.csv"
    res = quick(factory, out, "--dtype", "bfloat16")
    assert res.exit_code == 0, res.output
    assert {t.device for t in read_timings(out)} == {"cpu"}
    assert "dtype bfloat16" in out.read_text()
    assert "note: the rows are labelled device 'cpu'; pass --label" in res.stdout


def test_module_name_factory_from_the_current_folder(factory: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "nets", raising=False)
    res = run("--factory", "nets:build", "--repeats", "1", "--out", "t.csv", "--layers", "h", "--head", "lm_head")
    assert res.exit_code == 0, res.output
    assert len(read_timings(tmp_path / "t.csv")) == 4


def test_rerun_replaces_own_file_but_never_a_user_file(factory: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.csv"
    assert quick(factory, out).exit_code == 0
    assert quick(factory, out).exit_code == 0  # our marker is in it: replaced
    user = tmp_path / "mine.csv"
    user.write_text("device,layer\n", encoding="utf-8")
    res = quick(factory, user)
    assert res.exit_code == 2 and "exists and was not written by partitioner" in res.output
    assert user.read_text() == "device,layer\n"
    res = quick(factory, factory)
    assert res.exit_code == 2 and "refusing to overwrite an input file" in res.output


@pytest.mark.parametrize(("args", "match"), [
    ((), "give exactly one of --hf-config config.json or --factory module:callable"),
    (("--factory", "a:b", "--hf-config", "c.json"), "give exactly one of"),
    (("--factory", "nets"), "--factory must be module:callable or path/to/file.py:callable (got 'nets')"),
    (("--factory", "nets.py:"), "--factory must be module:callable"),
    (("--factory", "missing.py:build"), "--factory: file not found (got 'missing.py')"),
    (("--factory", "no_such_module_xyz:build"), "ModuleNotFoundError: No module named 'no_such_module_xyz'"),
    (("--factory", "{f}:nothing"), "has no callable 'nothing'"),
    (("--factory", "{f}:VALUE"), "has no callable 'VALUE'"),
    (("--factory", "{f}:not_a_module"), "not_a_module() returned a list, not a torch.nn.Module"),
    (("--factory", "{f}:broken"), "KeyError: 'no such size'"),
    (("--factory", "{f}:build", "--device", "gpu7"), "--device: not a torch device (got 'gpu7')"),
    (("--factory", "{f}:build", "--batch", "1,x"), "--batch must be an integer >= 1 (got 'x')"),
    (("--factory", "{f}:build", "--tokens", "0"), "tokens sizes must be integers >= 1 (got [0])"),
    (("--factory", "{f}:build", "--repeats", "0"), "repeats must be >= 1 (got 0)"),
    (("--factory", "{f}:build", "--phase", "decode"), "decode needs a model whose forward takes use_cache"),
    (("--factory", "{f}:build", "--layers", "blocks"), "layers path 'blocks': Net has no such submodule"),
    (("--factory", "{f}:build", "--label", "a,b"), "device label must be a non-empty name without commas"),
])
def test_errors_are_one_line_exit_2(factory: Path, tmp_path: Path, args: tuple[str, ...], match: str) -> None:
    out = tmp_path / "t.csv"
    argv = [a.format(f=factory) for a in args]
    if "--repeats" not in argv:
        argv += ["--repeats", "1"]
    res = run(*argv, "--out", str(out))
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert lines[-1].startswith("error: ") and match in lines[-1], res.stderr
    assert "Traceback" not in res.output and not out.exists()


def test_cuda_device_missing_is_an_error(factory: Path, tmp_path: Path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    res = quick(factory, tmp_path / "t.csv", "--device", "cuda:0")
    assert res.exit_code == 2
    assert "--device 'cuda:0': this torch" in res.stderr and "sees 0 CUDA device(s)" in res.stderr


def test_a_user_file_is_refused_before_the_model_is_built(factory: Path, tmp_path: Path) -> None:
    user = tmp_path / "mine.csv"
    user.write_text("device,layer\n", encoding="utf-8")
    res = run("--factory", f"{factory}:broken", "--out", str(user))  # building would fail
    assert res.exit_code == 2 and "exists and was not written by partitioner" in res.output
