"""Tensor-parallel group costs: ring collectives by hand, the roofline TP row derived from
roofline.py, capacity t·min C, per-node configurations, cluster.yaml `tp`, and the TP model
against Helix's measured l4x2 / t4x2 / t4x4 tables (skipped without ../shared)."""

from __future__ import annotations

import csv
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
    pair = max(roofline.roofline_time(f / 2, b / 2, t4), roofline.roofline_time(f / 2, b / 2, t4))
    assert t.cost[0, 1] == pytest.approx(pair + 2 * (2 * alpha + act / beta))
    mixed = max(roofline.roofline_time(f / 2, b / 2, a100), roofline.roofline_time(f / 2, b / 2, l4))
    assert t.cost[1, 1] == pytest.approx(mixed + 2 * (2 * alpha + act / beta))  # slowest member
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
    want = 0.0070 / 2 + 2 * tp.ring_allreduce_s(65536 / 2, 2, link.latency_ms / 1e3, link.bandwidth_gb_s * 1e9)
    assert derived.cost[0] == pytest.approx([want] * 4)


def _bs2time(gpu: str) -> dict[int, float]:
    with open(HELIX / gpu / "decode_bs2time.csv") as fh:
        return {int(a): float(b) / 1e3 for a, b in csv.reader(fh) if int(a) > 0}


@pytest.mark.skipif(not HELIX.is_dir(), reason="../shared/data/helix is absent")
def test_tp_model_against_helix_measured_groups(capsys: pytest.CaptureFixture[str]) -> None:
    """Helix's measured LLaMA-2-70B decode per layer: single GPU vs l4x2, t4x2, t4x4.

    The profile TP model (c/t + two ring all-reduces over PCIe 4) is within 14 % of every
    measured group time at batch 2..16; the roofline's predicted speed-up within 17 %. Both are
    optimistic and more so at larger batches and t = 4: the measured groups gain less than
    t-fold (T4 at batch 16: 3.1× on four), consistent with NCCL all-reduce over PCIe without
    peer-to-peer being slower than the ring model and the fixed per-layer overhead not shrinking.
    """
    arch = Architecture.model_validate(catalog.require("models", "llama-2-70b")["architecture"])
    s = Shape.of(arch)
    link = resolve_link("pcie4")
    alpha, beta = link.latency_ms / 1e3, link.bandwidth_gb_s * 1e9
    rows = []
    for gpu, t in (("l4", 2), ("t4", 2), ("t4", 4)):
        one, grp = _bs2time(gpu), _bs2time(f"{gpu}x{t}")
        hw = Hardware.of(resolve_gpu(gpu))
        for B in (2, 8, 16):
            w = Work(b_w=2, b_kv=2, b_a=2, phase="decode", B=B, S=512, C=1024)
            act = B * s.h * 2
            prof = tp.tp_from_single_s([one[B]] * t, "decoder", act, alpha, beta)
            f, b = roofline.layer_flops(s, w), roofline.layer_bytes(s, w)
            r_one = roofline.roofline_time(f, b, hw)
            r_grp = tp.tp_layer_s("decoder", f, b, [hw] * t, act_bytes=act, logits_bytes=0.0, alpha_s=alpha, beta_Bps=beta)
            measured = one[B] / grp[B]
            rows.append((gpu, t, B, measured, prof / grp[B] - 1, (r_one / r_grp) / measured - 1))
    with capsys.disabled():
        print("\nTP model vs Helix (LLaMA-2-70B decode, per layer)")
        for gpu, t, B, sp, e_prof, e_roof in rows:
            print(f"  {gpu}x{t} B={B:2d}: measured speed-up {sp:.2f}, profile TP time err {e_prof:+.1%}, roofline speed-up err {e_roof:+.1%}")
    errs_prof = np.array([r[4] for r in rows])
    errs_roof = np.array([r[5] for r in rows])
    assert np.all(np.abs(errs_prof) < 0.15), errs_prof
    assert np.all(np.abs(errs_roof) < 0.25), errs_roof  # roofline defaults may move (costmodel fit)
    two = [r for r in rows if r[1] == 2 and r[2] <= 8]
    assert all(abs(r[4]) < 0.08 for r in two)  # pairs at small batch: within 8 %
