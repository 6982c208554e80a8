"""Timings CSV records, the pure profile builder and the cluster update, by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from partitioner.calibrate.cluster_update import calibrated_cluster, fitted_factors
from partitioner.calibrate.fit import fit_efficiencies, row_terms, row_time
from partitioner.calibrate.profile import WorkloadAt, points, profile_from_timings, select_point
from partitioner.calibrate.timings import Point, Timing, parse_layer, read_timings
from partitioner.costs.roofline import Hardware, Shape
from partitioner.costs.tables import roofline_layers
from partitioner.errors import ConfigError, InputError
from partitioner.models import catalog
from partitioner.models.cluster import resolve_gpu
from partitioner.models.llm import Architecture, Workload

SMALL = Path(__file__).resolve().parent / "data" / "timings-small.csv"
ARCH = Architecture.model_validate(catalog.require("models", "llama-3.2-1b")["architecture"])
WORKLOAD = Workload(phase="decode", batch=4, prompt_tokens=512, context=1024)
DECODE = Point("decode", 4, 1024)
SPECS = {"gpu-a": ("rtx-3090", Hardware.of(resolve_gpu("rtx-3090"))), "t4": ("t4", Hardware.of(resolve_gpu("t4")))}


def fit_of(rows):
    return fit_efficiencies(rows, SPECS, Shape.of(ARCH), (2.0, 2.0, 2.0))


@pytest.mark.parametrize("raw, expected", [
    ("embed", ("embed", 0, 0)), ("lm_head", ("head", 0, 0)), ("LM_HEAD", ("head", 0, 0)), ("12", ("decoder", 12, 12)),
    ("0-3", ("decoder", 0, 3)), (" 2 - 5 ", ("decoder", 2, 5)), ("7-7", ("decoder", 7, 7)),
])
def test_parse_layer(raw, expected):
    assert parse_layer(raw) == expected


@pytest.mark.parametrize("raw, match", [
    ("3-1", r"a range must ascend, first-last \(got '3-1'\)"), ("x", r"expected embed, lm_head.*\(got 'x'\)"),
    ("-1", r"\(got '-1'\)"), ("1.5", r"\(got '1.5'\)"), ("1-", r"\(got '1-'\)"), ("head", r"\(got 'head'\)"),
])
def test_parse_layer_rejects(raw, match):
    with pytest.raises(ValueError, match=match):
        parse_layer(raw)


def test_timing_records():
    rows = read_timings(SMALL, num_layers=16)
    assert len(rows) == 12 and rows[0] == Timing("gpu-a", "embed", 0, 0, "decode", 4, 1024, 2e-5, 10, 5)
    assert [(t.layer, t.n_layers) for t in rows[:3]] == [("embed", 1), ("0-3", 4), ("4-7", 4)]
    assert rows[5].layer == "lm_head" and rows[-1].point == Point("prefill", 1, 1024)
    assert rows[1].to_dict() == {"device": "gpu-a", "layer": "0-3", "phase": "decode", "batch": 4, "tokens": 1024,
                                 "seconds": 0.0008, "samples": 10, "line": 6}
    assert points(rows) == (DECODE, Point("prefill", 1, 1024)) and str(DECODE) == "decode batch 4 tokens 1024"


def test_select_point():
    rows = read_timings(SMALL)
    assert select_point(rows, phase="decode") == DECODE
    assert select_point(rows, batch=1) == Point("prefill", 1, 1024)
    assert select_point([rows[0]]) == DECODE
    with pytest.raises(InputError, match=r"^a profile takes one workload point and the file has 2: decode batch 4 "
                                         r"tokens 1024; prefill batch 1 tokens 1024; choose one with --phase"):
        select_point(rows)
    with pytest.raises(InputError, match=r"^no timings at phase decode, batch 8; the file has: decode batch 4"):
        select_point(rows, phase="decode", batch=8)


def test_workload_at_a_point():
    assert WorkloadAt.of(WORKLOAD, Point("decode", 2, 300)) == WorkloadAt("bf16", "bf16", "bf16", "decode", 2, 300, 300, 1)
    assert WorkloadAt.of(WORKLOAD, Point("prefill", 1, 2048)) == WorkloadAt("bf16", "bf16", "bf16", "prefill", 1, 2048,
                                                                           2048, 1)


def test_profile_of_complete_timings_splits_ranges_and_compresses():
    rows = read_timings(SMALL)
    prof = profile_from_timings(rows, DECODE, ARCH, WORKLOAD, fit_of(rows), name="m")
    layers = prof.data["layers"]
    assert prof.filled == () and prof.cells == 18 * 2 and prof.data["name"] == "m"
    assert [(e["name"], e.get("repeat", 1)) for e in layers] == [
        ("embed", 1), ("layer.0-3", 4), ("layer.4-7", 4), ("layer.8-11", 4), ("layer.12-15", 4), ("lm_head", 1)]
    assert layers[0]["cost"] == {"gpu-a": 2e-5, "t4": 5e-5}
    assert layers[1]["cost"] == {"gpu-a": pytest.approx(0.0008 / 4), "t4": pytest.approx(0.0052 / 8)}
    assert layers[3]["cost"] == {"gpu-a": pytest.approx(0.00079 / 4), "t4": pytest.approx(0.0051 / 8)}
    ref = roofline_layers(ARCH, WorkloadAt.of(WORKLOAD, DECODE), [])
    assert [e["memory_gb"] for e in layers] == [ref["memory_gb"][i] for i in (0, 1, 5, 9, 13, 17)]
    assert layers[1]["out_bytes"] == 4 * 2048 * 2 * 2 and layers[-1]["out_bytes"] == 0.0
    assert [e["kind"] for e in layers] == ["embed"] + ["decoder"] * 4 + ["head"]
    assert layers[1]["params"] == ref["params"][1] and list(layers[1]) == [
        "name", "kind", "repeat", "cost", "memory_gb", "out_bytes", "params"]


def test_missing_cells_are_filled_from_the_fitted_roofline():
    rows = [t for t in read_timings(SMALL) if not (t.device == "t4" and t.layer in ("8-15", "lm_head"))]
    fit = fit_of(rows)
    prof = profile_from_timings(rows, DECODE, ARCH, WORKLOAD, fit, name="m")
    assert len(prof.filled) == 9 and prof.cells == 36
    assert prof.filled[0] == ("layer.8", "t4") and prof.filled[-1] == ("lm_head", "t4")
    hw = fit.for_device("t4").fitted
    f, m = row_terms(Timing("t4", "decoder", 8, 8, "decode", 4, 1024, 1.0), Shape.of(ARCH), (2.0, 2.0, 2.0))
    layer8 = next(e for e in prof.data["layers"] if e["name"].startswith("layer.8"))
    assert layer8["cost"]["t4"] == pytest.approx(row_time(f, m, 1, hw), rel=1e-12)
    assert prof.to_dict()["filled"][0] == {"layer": "layer.8", "device": "t4"}


def test_missing_cell_without_a_fit_names_layer_and_device():
    rows = [t for t in read_timings(SMALL) if t.layer != "lm_head"]
    with pytest.raises(InputError, match=r"^no timing for lm_head on device 'gpu-a' at decode batch 4 tokens 1024"):
        profile_from_timings(rows, DECODE, ARCH, WORKLOAD, None, name="m")


def test_a_layer_timed_twice_is_located():
    rows = [*read_timings(SMALL), Timing("t4", "decoder", 5, 5, "decode", 4, 1024, 1e-3, line=99)]
    with pytest.raises(ConfigError, match=r"^s\.csv:99: column 'layer': layer\.5 on 't4' at decode batch 4 tokens "
                                          r"1024 is timed twice \(lines 12 and 99\)"):
        profile_from_timings(rows, DECODE, ARCH, WORKLOAD, None, name="m", source="s.csv")


def test_calibrated_cluster_writes_moved_factors_only():
    rows = read_timings(SMALL)
    fit = fit_of(rows)
    data = {"name": "c", "devices": [{"name": "gpu-a", "gpu": "rtx-3090"},
                                     {"name": "gpu-b", "gpu": {"base": "t4", "memory_gb": 15}},
                                     {"name": "gpu-c", "gpu": "l4"}]}
    new, updated = calibrated_cluster(data, fit, {"gpu-a": "rtx-3090", "gpu-b": "t4", "gpu-c": "l4"})
    assert updated == ("gpu-a", "gpu-b") and data["devices"][0]["gpu"] == "rtx-3090"  # input untouched
    a, b = fitted_factors(fit.gpus[0]), fitted_factors(fit.gpus[1])
    assert new["devices"][0]["gpu"] == {"base": "rtx-3090", **a}
    assert new["devices"][1]["gpu"] == {"base": "t4", "memory_gb": 15, **b}
    assert new["devices"][2] == {"name": "gpu-c", "gpu": "l4"}
    g = fit.gpus[0]
    moved = [n for n, s in zip(("eta_compute", "eta_memory", "overhead_ms"), g.status) if s != "unidentified"]
    assert list(a) == moved and a.get("eta_memory") == pytest.approx(g.fitted.eta_m, rel=1e-5)
