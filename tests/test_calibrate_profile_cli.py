"""`partition calibrate profile`: fit tables and JSON, written cluster and profile used by the
planner, and every error path as one line with exit code 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from partitioner.calibrate import CALIBRATE_MARKER
from partitioner.cli import main
from partitioner.costs import roofline
from partitioner.costs.roofline import Hardware, Shape, Work
from partitioner.models import load_cluster, load_model
from partitioner.models.cluster import resolve_gpu

ROOT = Path(__file__).resolve().parent.parent
SMALL = str(ROOT / "tests" / "data" / "timings-small.csv")
EXAMPLE = str(ROOT / "examples" / "measurements" / "timings-llama-3.1-8b.csv")
MODEL = "preset: llama-3.2-1b\nworkload: {phase: decode, batch: 4, prompt_tokens: 512, context: 1024}\n"
CLUSTER = ("name: two\ndevices:\n  - {name: gpu-a, gpu: rtx-3090, node: n1}\n"
           "  - {name: gpu-b, gpu: {base: t4, memory_gb: 15}, node: n2}\nlinks: {inter_node: 10gbe}\n")


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "model.yaml").write_text(MODEL)
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    return {"model": str(tmp_path / "model.yaml"), "cluster": str(tmp_path / "cluster.yaml"), "dir": str(tmp_path)}


def run(*args: str):
    return CliRunner().invoke(main, ["calibrate", "profile", *args])


def write_csv(tmp_path: Path, body: str, header: str = "device,layer,phase,batch,tokens,seconds") -> str:
    path = tmp_path / "t.csv"
    path.write_text(f"# comment\n{header}\n{body}\n")
    return str(path)


def test_without_model_the_file_is_checked_and_summarised(files, tmp_path):
    body = "t4,embed,decode,4,1024,0.00002\nt4,0-15,decode,4,1024,0.0032\nl4,3,prefill,1,512,0.01"
    result = run(write_csv(tmp_path, body))
    assert result.exit_code == 0, result.output
    assert "3 timings" in result.output and "give --model" in result.output
    data = json.loads(run(SMALL, "--cluster", files["cluster"], "--json").output)
    assert len(data["rows"]) == 12 and data["summary"][0] == {
        "device": "gpu-a", "phase": "decode", "batch": 4, "tokens": 1024, "rows": 6, "layers": 18,
        "seconds": pytest.approx(0.00384)}


def test_fit_tables(files):
    result = run(SMALL, "--model", files["model"], "--cluster", files["cluster"])
    assert result.exit_code == 0, result.output
    default_eta_c = Hardware.of(resolve_gpu("rtx-3090")).eta_c  # the catalogue default the fit starts from
    for text in ("efficiency per GPU type", "rtx-3090", f"{default_eta_c:.3g} -> 1 (bound)", "predicted vs measured",
                 "note: rtx-3090: eta_compute fitted to its bound 1", "lm_head", "err fitted"):
        assert text in result.output


def test_fit_json_on_the_shipped_example_recovers_its_stated_factors():
    ex = ROOT / "examples"
    result = run(EXAMPLE, "--model", str(ex / "models" / "llama-3.1-8b.yaml"),
                 "--cluster", str(ex / "clusters" / "seed.yaml"), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    fitted = {g["gpu"]: g["fitted"] for g in data["gpus"]}
    # the example's header: synthesised with these factors and 2% noise
    for gpu, (ec, em, ov) in {"rtx-5090-laptop": (0.85, 0.72, 0.03), "rtx-3090": (1.0, 0.75, 0.035),
                              "gtx-1070": (0.8, 0.65, 0.08)}.items():
        assert fitted[gpu]["eta_compute"] == pytest.approx(ec, rel=0.03)
        assert fitted[gpu]["eta_memory"] == pytest.approx(em, rel=0.03)
        assert fitted[gpu]["overhead_ms"] == pytest.approx(ov, abs=0.01)
    assert all(g["rms_error_after"] < 0.03 < g["rms_error_before"] for g in data["gpus"])
    assert len(data["rows"]) == 27 and data["written"] == {}
    assert {"predicted_default_s", "predicted_fitted_s", "error", "regime", "line"} <= set(data["rows"][0])


def test_written_cluster_makes_costs_use_the_fitted_factors(files):
    out = Path(files["dir"]) / "calibrated.yaml"
    result = run(SMALL, "--model", files["model"], "--cluster", files["cluster"], "--write-cluster", str(out), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["written"]["cluster"] == {"path": str(out), "devices": ["gpu-a", "gpu-b"]}
    text = out.read_text()
    assert text.startswith(f"# {CALIBRATE_MARKER}") and "base: rtx-3090" in text and "memory_gb: 15" in text
    assert load_cluster(out).devices[1].spec.memory_gb == 15
    before = json.loads(CliRunner().invoke(main, ["costs", files["model"], files["cluster"], "--json"]).output)
    after = json.loads(CliRunner().invoke(main, ["costs", files["model"], str(out), "--json"]).output)
    model = load_model(files["model"])
    s, w = Shape.of(model.arch), Work.of(model.workload)
    for g, dev in zip(data["gpus"], ("gpu-a", "gpu-b")):
        f = g["fitted"]
        base = Hardware.of(resolve_gpu(g["gpu"]))
        hw = Hardware(base.F, base.BW, f["eta_compute"], f["eta_memory"], f["overhead_ms"] / 1e3)
        want = roofline.roofline_time(roofline.layer_flops(s, w), roofline.layer_bytes(s, w), hw)
        assert after["layers"][1]["cost_s"][dev] == pytest.approx(want, rel=1e-5)
        assert after["layers"][1]["cost_s"][dev] != pytest.approx(before["layers"][1]["cost_s"][dev], rel=1e-3)
    plan = CliRunner().invoke(main, ["plan", files["model"], str(out), "--objective", "balanced", "--json"])
    assert plan.exit_code == 0, plan.output
    for st in json.loads(plan.output)["stages"]:  # the planner's stage times are the fitted costs
        want = sum(layer["cost_s"][st["device"]] for layer in after["layers"][st["start"]:st["end"]])
        assert st["tau"] == pytest.approx(want, rel=1e-12)
    # a re-run may replace the file it wrote
    again = run(SMALL, "--model", files["model"], "--cluster", files["cluster"], "--write-cluster", str(out))
    assert again.exit_code == 0 and f"wrote {out}" in again.output


def test_written_profile_plans_with_the_measured_seconds(files):
    out = Path(files["dir"]) / "profile.yaml"
    result = run(SMALL, "--model", files["model"], "--cluster", files["cluster"], "--write-profile", str(out),
                 "--phase", "decode")
    assert result.exit_code == 0, result.output
    assert "filled 0 of 36 cells from the fitted cost model" in result.output
    assert out.read_text().startswith(f"# {CALIBRATE_MARKER}")
    # gpu-b's inline `{base: t4, ...}` keeps its GPU id t4, so the profile's t4 key reaches it
    assert "no cost for the cluster device" not in result.output
    plan = CliRunner().invoke(main, ["plan", str(out), files["cluster"], "--objective", "balanced", "--json"])
    assert plan.exit_code == 0, plan.output
    # per-layer seconds straight from tests/data/timings-small.csv: ranges split evenly
    cost = {"gpu-a": [2e-5] + [0.0008 / 4] * 4 + [0.00082 / 4] * 4 + [0.00079 / 4] * 4 + [0.00081 / 4] * 4 + [0.0006],
            "gpu-b": [5e-5] + [0.0052 / 8] * 8 + [0.0051 / 8] * 8 + [0.0018]}
    stages = json.loads(plan.output)["stages"]
    assert sum(st["end"] - st["start"] for st in stages) == 18
    for st in stages:
        assert st["tau"] == pytest.approx(sum(cost[st["device"]][st["start"]:st["end"]]), rel=1e-12)


def test_profile_fills_unmeasured_layers_and_reports_them(files, tmp_path):
    body = "gpu-a,embed,decode,4,1024,0.00002\ngpu-a,0-15,decode,4,1024,0.0032\ngpu-a,0-15,prefill,1,1024,0.029"
    out = tmp_path / "p.yaml"
    result = run(write_csv(tmp_path, body), "--model", files["model"], "--cluster", files["cluster"],
                 "--write-profile", str(out), "--phase", "decode", "--json")
    assert result.exit_code == 0, result.output
    written = json.loads(result.output)["written"]["profile"]
    assert written["cells"] == 18 and written["filled"] == [{"layer": "lm_head", "device": "gpu-a"}]
    assert written["point"] == {"phase": "decode", "batch": 4, "tokens": 1024} and written["uncovered"] == ["gpu-b"]
    assert load_model(out).layers[-1].kind == "head"


def _err(result) -> str:
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and "Traceback" not in result.output
    return result.output


@pytest.mark.parametrize("header, body, expected", [
    ("device,layer,phase,batch,seconds", "t4,1,decode,1,0.1",
     r"t\.csv:2: missing column 'tokens' in the timings CSV header"),
    (None, "t4,1,decode,1,8,abc", r"t\.csv:3: column 'seconds': not a number \(got 'abc'\)"),
    (None, "t4,1,decode,1,8,-1", r"t\.csv:3: column 'seconds': must be > 0 \(got '-1'\)"),
    (None, "t4,1,decode,1,8,0", r"t\.csv:3: column 'seconds': must be > 0 \(got '0'\)"),
    (None, "t4,3-1,decode,1,8,0.1", r"t\.csv:3: column 'layer': a range must ascend, first-last \(got '3-1'\)"),
    (None, "t4,x,decode,1,8,0.1", r"t\.csv:3: column 'layer': expected embed, lm_head, .* \(got 'x'\)"),
    (None, "t4,1,train,1,8,0.1", r"t\.csv:3: column 'phase': must be decode or prefill \(got 'train'\)"),
    (None, "t4,1,decode,0,8,0.1", r"t\.csv:3: column 'batch': must be >= 1 \(got '0'\)"),
    (None, "t4,1,decode,1.5,8,0.1", r"t\.csv:3: column 'batch': not an integer \(got '1.5'\)"),
    (None, "t4,1,decode,1,0,0.1", r"t\.csv:3: column 'tokens': must be >= 1 \(got '0'\)"),
    ("device,layer,phase,batch,tokens,seconds,samples", "t4,1,decode,1,8,0.1,0",
     r"t\.csv:3: column 'samples': must be >= 1 \(got '0'\)"),
    (None, "rtx-309,1,decode,1,8,0.1",
     r"t\.csv:3: column 'device': unknown device 'rtx-309'; closest: rtx-3090.*; valid: rtx-5090, .*mi300x$"),
])
def test_bad_cells_without_model(tmp_path, header, body, expected):
    args = (header,) if header else ()
    out = _err(run(write_csv(tmp_path, body, *args)))
    assert out.startswith("error: ") and __import__("re").search(expected, out.strip()), out


def test_model_dependent_cell_errors(tmp_path, files):
    out = _err(run(write_csv(tmp_path, "t4,14-16,decode,1,8,0.1"), "--model", files["model"]))
    assert "t.csv:3: column 'layer': layer 16 is beyond the model's 16 decoder layers (0-15) (got '14-16')" in out
    out = _err(run(write_csv(tmp_path, "gpu-c,1,decode,1,8,0.1"), "--cluster", files["cluster"]))
    assert ("t.csv:3: column 'device': unknown device 'gpu-c'; closest: gpu-a, gpu-b; valid: gpu-a, gpu-b "
            "(or a GPU catalogue id: partition catalog gpus)") in out


@pytest.mark.parametrize("extra, expected", [
    (["--write-cluster", "x.yaml"], "--write-cluster needs --cluster"),
    (["--write-profile", "x.yaml"], "--write-profile needs --model (a preset, architecture or hf_config model.yaml): "
                                    "a profile's memory_gb, out_bytes, params and layer kinds come from"),
    (["--phase", "decode"], "--phase, --batch, --tokens and --no-fill apply to --write-profile"),
])
def test_option_errors(extra, expected):
    assert expected in _err(run(SMALL, *extra))


def test_write_cluster_needs_model(files):
    out = _err(run(SMALL, "--cluster", files["cluster"], "--write-cluster", "x.yaml"))
    assert "--write-cluster needs --model" in out


def test_a_profile_model_cannot_be_fitted(files, tmp_path):
    prof = tmp_path / "prof.yaml"
    prof.write_text("layers:\n  - {name: l, cost: {t4: 0.1}, memory_gb: 1}\n")
    out = _err(run(SMALL, "--model", str(prof)))
    assert "prof.yaml: a measured profile (layers:) has no architecture to fit the timings against" in out


def test_profile_point_errors(files):
    out = _err(run(SMALL, "--model", files["model"], "--cluster", files["cluster"], "--write-profile", "p.yaml"))
    assert ("a profile takes one workload point and the file has 2: decode batch 4 tokens 1024; prefill batch 1 "
            "tokens 1024; choose one with --phase/--batch/--tokens") in out
    out = _err(run(SMALL, "--model", files["model"], "--cluster", files["cluster"], "--write-profile", "p.yaml",
                   "--batch", "9"))
    assert "no timings at batch 9; the file has: decode batch 4 tokens 1024; prefill batch 1 tokens 1024" in out


def test_no_fill_requires_every_cell(files, tmp_path):
    body = "gpu-a,embed,decode,4,1024,0.00002\ngpu-a,0-15,decode,4,1024,0.0032"
    out = _err(run(write_csv(tmp_path, body), "--model", files["model"], "--cluster", files["cluster"],
                   "--write-profile", str(tmp_path / "p.yaml"), "--no-fill"))
    assert "no timing for lm_head on device 'gpu-a' at decode batch 4 tokens 1024" in out
    assert not (tmp_path / "p.yaml").exists()


def test_layer_timed_twice_in_a_profile(files, tmp_path):
    body = "t4,embed,decode,4,1024,0.00002\nt4,0-3,decode,4,1024,0.003\nt4,3,decode,4,1024,0.001"
    out = _err(run(write_csv(tmp_path, body), "--model", files["model"], "--write-profile", str(tmp_path / "p.yaml")))
    assert "t.csv:5: column 'layer': layer.3 on 't4' at decode batch 4 tokens 1024 is timed twice (lines 4 and 5)" in out


def test_nothing_is_overwritten_that_the_user_wrote(files, tmp_path):
    out = _err(run(SMALL, "--model", files["model"], "--cluster", files["cluster"], "--write-cluster", files["cluster"]))
    assert "refusing to overwrite an input file" in out
    mine = tmp_path / "mine.yaml"
    mine.write_text("my notes\n")
    out = _err(run(SMALL, "--model", files["model"], "--cluster", files["cluster"], "--write-cluster", str(mine)))
    assert "exists and was not written by partitioner" in out and mine.read_text() == "my notes\n"


def test_nothing_is_written_when_the_profile_fails(files):
    out_cluster = Path(files["dir"]) / "c.yaml"
    _err(run(SMALL, "--model", files["model"], "--cluster", files["cluster"], "--write-cluster", str(out_cluster),
             "--write-profile", str(Path(files["dir"]) / "p.yaml")))
    assert not out_cluster.exists()


def test_missing_and_empty_files(tmp_path):
    assert "nope.csv: file not found" in _err(run(str(tmp_path / "nope.csv")))
    empty = tmp_path / "e.csv"
    empty.write_text("# only a comment\n")
    assert "e.csv: empty timings CSV" in _err(run(str(empty)))


def test_a_cluster_device_the_profile_cannot_reach_is_named(files):
    out = Path(files["dir"]) / "profile.yaml"
    three = Path(files["dir"]) / "three.yaml"
    three.write_text(CLUSTER.replace("links:", "  - {name: gpu-c, gpu: l4, node: n3}\nlinks:"))
    result = run(SMALL, "--model", files["model"], "--cluster", str(three), "--write-profile", str(out),
                 "--phase", "decode")
    assert result.exit_code == 0, result.output
    assert "note: the profile has no cost for the cluster device(s) gpu-c" in result.output
