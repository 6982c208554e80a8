"""Tensor-parallel group costs: ring collectives by hand, the roofline TP row derived from
roofline.py, capacity t·min C, per-node configurations, cluster.yaml `tp`, and the TP model
against Helix's measured l4x2 / t4x2 / t4x4 tables (skipped without ../shared)."""

from __future__ import annotations

import csv
import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest

from partitioner.costs import roofline, tp
from partitioner.costs.groups import Group, candidate_groups, disjoint, group_tables, node_configurations
from partitioner.costs.roofline import Hardware, Shape, Work
from partitioner.errors import ConfigError
from partitioner.models import catalog, load_cluster, load_model
from partitioner.models.cluster import ClusterSpec, resolve_gpu, resolve_link
from partitioner.models.llm import Architecture, ModelSpec

SHARED = Path(os.environ.get("PARTITIONER_SHARED", Path(__file__).resolve().parents[1] / ".." / "shared"))
HELIX = SHARED / "data" / "helix" / "simulator" / "model_manager" / "llama2_70b"
ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"


def _cluster(**extra: object) -> ClusterSpec:
    devices = [{"name": f"t{i}", "gpu": "t4", "node": "n0"} for i in range(4)]
    devices += [{"name": "a", "gpu": "a100-40gb", "node": "n1"}, {"name": "l", "gpu": "l4", "node": "n1"}]
    return ClusterSpec.model_validate({"devices": devices, "links": {"intra_node": "pcie4", "inter_node": "10gbe"}, **extra})


def test_ring_collectives_by_hand() -> None:
    # t = 4, alpha = 1e-5 s, n = 4e6 bytes, beta = 1e9 B/s: 6 steps of latency + 2·3/4·4 ms
    assert tp.ring_allreduce_s(4e6, 4, 1e-5, 1e9) == pytest.approx(6e-5 + 6e-3)
    assert tp.ring_allgather_s(4e6, 4, 1e-5, 1e9) == pytest.approx(3e-5 + 3e-3)
    assert tp.ring_allreduce_s(4e6, 1, 1e-5, 1e9) == 0.0
    assert tp.ring_allreduce_s(4e6, 2, 0.0, float("inf")) == 0.0
    assert tp.group_capacity_gb([15.0, 23.0]) == 30.0


def test_roofline_group_row_is_the_derived_formula() -> None:
    c = _cluster()
    m = load_model("examples/models/llama-3.1-8b.yaml")
    groups = [Group((0, 1), "n0"), Group((4, 5), "n1"), Group((0,), "n0")]
    t = group_tables(m, c, groups)
    s, w = Shape.of(m.arch), Work.of(m.workload)
    link = resolve_link("pcie4")
    alpha, beta = link.latency_ms / 1e3, link.bandwidth_gb_s * 1e9
    act = w.T * s.h * w.b_a
    t4, a100, l4 = (Hardware.of(resolve_gpu(g)) for g in ("t4", "a100-40gb", "l4"))
    f, b = roofline.layer_flops(s, w), roofline.layer_bytes(s, w)
    k = tp.DEFAULT_FIT.bandwidth_factor  # all-reduces at the measured beta / k
    pair = max(roofline.roofline_time(f / 2, b / 2, t4), roofline.roofline_time(f / 2, b / 2, t4))
    assert t.cost[0, 1] == pytest.approx(pair + 2 * (2 * alpha + act * k / beta))
    mixed = max(roofline.roofline_time(f / 2, b / 2, a100), roofline.roofline_time(f / 2, b / 2, l4))
    assert t.cost[1, 1] == pytest.approx(mixed + 2 * (2 * alpha + act * k / beta))  # slowest member
    assert t.cost[2, 1] == pytest.approx(roofline.roofline_time(f, b, t4))  # t = 1 unchanged
    assert t.gpu_names == ("t4x2", "a100-40gb+l4", "t4")
    assert t.device_names[0] == "t0+t1"
    cap = [c.capacity_gb(d) for d in c.devices]
    assert list(t.capacity_gb) == pytest.approx([2 * cap[0], 2 * min(cap[4], cap[5]), cap[0]])


def test_node_configurations_and_tp_restrictions() -> None:
    c = _cluster()
    shapes = sorted(sorted(g.t for g in cfg) for cfg in node_configurations(c, "n0"))
    assert shapes == [[1, 1, 1, 1], [1, 1, 2], [2, 2], [4]]
    assert all(disjoint(cfg) for cfg in node_configurations(c, "n0"))
    c2 = _cluster(tp=[1, 2])
    assert sorted(sorted(g.t for g in cfg) for cfg in node_configurations(c2, "n0")) == [[1, 1, 1, 1], [1, 1, 2], [2, 2]]
    c3 = _cluster(tp={"default": [1], "n1": [1, 2]})
    assert {g.t for g in candidate_groups(c3) if g.node == "n0"} == {1}
    assert {g.t for g in candidate_groups(c3) if g.node == "n1"} == {1, 2}
    c4 = _cluster(tp=[2])  # no singletons: 4 T4 -> two pairs or one... only pairs
    assert [sorted(g.t for g in cfg) for cfg in node_configurations(c4, "n0")] == [[2, 2]]
    assert not disjoint([Group((0, 1), "n0"), Group((1,), "n0")])


def test_cluster_tp_unknown_node_is_a_located_error(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("devices:\n  - {name: a, gpu: l4, node: n0}\ntp: {default: [1, 2], n9: [1]}\n")
    with pytest.raises(ConfigError) as err:
        load_cluster(f)
    assert "n9" in str(err.value) and "tp" in str(err.value)


def _profile(extra: dict[str, object]) -> ModelSpec:
    return ModelSpec.model_validate({"name": "p", "layers": [
        {"name": "layer", "repeat": 4, "cost": {"l4": {2: 0.0069, 8: 0.0070}, **extra}, "memory_gb": 1.0,
         "out_bytes": 65536}], "workload": {"batch": 8}})


def test_measured_group_key_is_used_directly_else_the_tp_model() -> None:
    c = ClusterSpec.model_validate({"devices": [{"name": f"l{i}", "gpu": "l4", "node": "n"} for i in range(2)]})
    pair = [Group((0, 1), "n")]
    direct = group_tables(_profile({"l4x2": {2: 0.0036, 8: 0.0037}}), c, pair)
    assert direct.cost[0] == pytest.approx([0.0037] * 4)
    derived = group_tables(_profile({}), c, pair)
    link = c.link(c.devices[0], c.devices[1])
    o, k = tp.DEFAULT_FIT.overhead_s, tp.DEFAULT_FIT.bandwidth_factor
    want = (0.0070 - o) / 2 + o + 2 * (65536 / 2) * k / (link.bandwidth_gb_s * 1e9)  # ring factor 2(t-1)/t = 1
    assert derived.cost[0] == pytest.approx([want] * 4)


def _fitmod() -> object:
    spec = importlib.util.spec_from_file_location("tp_fit", ROOT / "benchmarks" / "tp_fit.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


FIT = _fitmod()


def test_fit_recovers_the_constants_of_a_synthetic_table_set() -> None:
    """tests/data/tp_fit: tables made from o = 0.2 ms, k = 4 (its README); the minimax fit finds them,
    leaving any one table out too, and predicts every row to 0.1 %."""
    tables = FIT.helix_samples(DATA / "tp_fit", hidden=8192)  # type: ignore[attr-defined]
    assert {n: len(r) for n, r in tables.items()} == {"l4x2": 5, "t4x2": 5, "t4x4": 5}
    every = [s for rows in tables.values() for s in rows]
    fit = tp.fit_tp(every)
    assert fit.overhead_s == pytest.approx(0.2e-3, rel=0.02) and fit.bandwidth_factor == pytest.approx(4.0, rel=0.01)
    for name in tables:
        loo = tp.fit_tp([s for other, rows in tables.items() if other != name for s in rows])
        assert np.abs(tp.relative_errors(tables[name], loo)).max() < 1e-3
    # the model by hand at one row: t4x4, B = 8
    s = tables["t4x4"][0]
    assert tp.group_time_s(s.single_s, 4, s.act_bytes, s.beta_Bps, fit) == pytest.approx(
        (7.86e-3 - 0.2e-3) / 4 + 0.2e-3 + 2 * 1.5 * 8 * 8192 * 2 * 4 / 12e9, rel=2e-3)


def test_fit_error_paths() -> None:
    one = tp.TpSample(7e-3, 4e-3, 2, 1e5, 25e9)
    with pytest.raises(ValueError, match="at least 2 samples"):
        tp.fit_tp([one])
    with pytest.raises(ValueError, match="separate o from k"):
        tp.fit_tp([one, one])
    faster = [tp.TpSample(7e-3, 3.0e-3, 2, 1e5, 25e9), tp.TpSample(8e-3, 3.2e-3, 2, 4e5, 25e9)]  # super-linear
    with pytest.raises(ValueError, match="non-positive all-reduce"):
        tp.fit_tp(faster)
    assert tp.group_time_s(7e-3, 1, 1e5, 25e9, tp.DEFAULT_FIT) == 7e-3  # t = 1: unchanged


@pytest.mark.skipif(not HELIX.is_dir(), reason="../shared/data/helix is absent")
def test_tp_fit_leave_one_table_out_within_10_percent_at_serving_batches() -> None:
    """Helix's l4x2, t4x2 and t4x4 at every batch 8-100: a fit on two tables predicts the third
    within 10 %, and the committed DEFAULT_FIT (the fit on all three) every table within 10 %."""
    tables = FIT.helix_samples(HELIX)  # type: ignore[attr-defined]
    assert all(len(rows) >= 20 for rows in tables.values())
    for name, rows in tables.items():
        loo = tp.fit_tp([s for other, r in tables.items() if other != name for s in r])
        assert np.abs(tp.relative_errors(rows, loo)).max() < 0.10, name
        assert np.abs(tp.relative_errors(rows, tp.DEFAULT_FIT)).max() < 0.10, name
    fit = tp.fit_tp([s for rows in tables.values() for s in rows])
    assert fit.overhead_s == pytest.approx(tp.DEFAULT_FIT.overhead_s, rel=0.01)
    assert fit.bandwidth_factor == pytest.approx(tp.DEFAULT_FIT.bandwidth_factor, rel=0.01)


def _bs2time(gpu: str) -> dict[int, float]:
    with open(HELIX / gpu / "decode_bs2time.csv") as fh:
        return {int(a): float(b) / 1e3 for a, b in csv.reader(fh) if int(a) > 0}


@pytest.mark.skipif(not HELIX.is_dir(), reason="../shared/data/helix is absent")
def test_tp_model_against_helix_measured_groups(capsys: pytest.CaptureFixture[str]) -> None:
    """Helix's measured LLaMA-2-70B decode per layer: single GPU vs l4x2, t4x2, t4x4 (L4 boxes on
    PCIe Gen4, T4 boxes on Gen3) at serving batches. The profile TP model (fitted, tp.DEFAULT_FIT)
    is within 10 % of every measured group time; the roofline's predicted speed-up (the same
    all-reduce bandwidth factor, its own compute) within 15 %.
    """
    arch = Architecture.model_validate(catalog.require("models", "llama-2-70b")["architecture"])
    s = Shape.of(arch)
    rows = []
    for gpu, t, link_id in (("l4", 2, "pcie4"), ("t4", 2, "pcie3"), ("t4", 4, "pcie3")):
        link = resolve_link(link_id)
        alpha, beta = link.latency_ms / 1e3, link.bandwidth_gb_s * 1e9
        one, grp = _bs2time(gpu), _bs2time(f"{gpu}x{t}")
        hw = Hardware.of(resolve_gpu(gpu))
        for B in (8, 50, 100):
            w = Work(b_w=2, b_kv=2, b_a=2, phase="decode", B=B, S=512, C=1024)
            act = B * s.h * 2
            prof = tp.tp_from_single_s([one[B]] * t, "decoder", act, beta)
            f, b = roofline.layer_flops(s, w), roofline.layer_bytes(s, w)
            r_one = roofline.roofline_time(f, b, hw)
            r_grp = tp.tp_layer_s("decoder", f, b, [hw] * t, act_bytes=act, logits_bytes=0.0, alpha_s=alpha, beta_Bps=beta)
            measured = one[B] / grp[B]
            rows.append((gpu, t, B, measured, prof / grp[B] - 1, (r_one / r_grp) / measured - 1))
    with capsys.disabled():
        print("\nTP model vs Helix (LLaMA-2-70B decode, per layer)")
        for gpu, t, B, sp, e_prof, e_roof in rows:
            print(f"  {gpu}x{t} B={B:3d}: measured speed-up {sp:.2f}, profile TP time err {e_prof:+.1%}, roofline speed-up err {e_roof:+.1%}")
    errs_prof = np.array([r[4] for r in rows])
    errs_roof = np.array([r[5] for r in rows])
    assert np.all(np.abs(errs_prof) < 0.10), errs_prof
    assert np.all(np.abs(errs_roof) < 0.15), errs_roof  # roofline defaults may move (costmodel fit)
