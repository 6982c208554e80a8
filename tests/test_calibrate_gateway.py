"""Pure core of `partition calibrate gateway` (theory.md §7.2): hand cases, goldens, properties."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from partitioner.calibrate import csvio
from partitioner.calibrate.gateway import (
    ERRORS4_NOTE,
    GatewayStats,
    aggregate_requests,
    calibrate_gateway,
    select_stats,
)
from partitioner.calibrate.gateway_io import STATS_COLUMNS, read_gateway
from partitioner.calibrate.gateway_write import layer_costs, profile_entries
from partitioner.errors import InputError

DATA = Path(__file__).resolve().parent / "data"
REAL = Path(__file__).resolve().parents[2] / "shared" / "data" / "gateway" / "real_vs_formula.csv"
LEGAL3 = ["node-01", "node-02", "node-03"]
QWEN5 = ["node-03", "node-06", "node-01", "node-02", "node-04"]


def row(node: str, tau: float, n: int = 50, model: str = "m", **kw: float) -> GatewayStats:
    """A statistics row whose every service statistic is `tau` unless overridden."""
    base = dict(dur_min=tau, dur_p5=tau, dur_p50=tau, dur_p95=tau, dur_mean=tau, tot_p50=tau, q_p50=0.0, q_frac=0.0)
    return GatewayStats(model=model, node=node, n=n, **{**base, **kw})


# -- tiny hand-computed cases ----------------------------------------------------------------------

def test_hand_case_tau_1_2_4():
    """tau = (1, 2, 4): bias 3 + 2 = 5; T_async(1) = 7, T_gpipe(1) = 12; M = 8: 35 vs 40 (Thm 2, Cor 1)."""
    cal = calibrate_gateway([row("a", 1), row("b", 2), row("c", 4)], "m", Ms=(1, 8))
    assert cal.tau == (1, 2, 4) and cal.tau_max == 4 and cal.bottleneck == "c" and cal.bottleneck_index == 2
    assert cal.homogeneity_bias == 5 and cal.full_bias is None and cal.d is None
    p1, p8 = cal.points
    assert (p1.M, p1.T_async, p1.T_gpipe, p1.abs_error) == (1, 7, 12, 5) and p1.rel_error == pytest.approx(5 / 7)
    assert (p8.T_async, p8.T_gpipe, p8.abs_error) == (35, 40, 5) and p8.rel_error == pytest.approx(1 / 7)


def test_hand_case_with_d_full_bias():
    """d = (0.5, 0.5): full bias 5 - 1 = 4 (Cor 3); T_async(1) = 8, error 4/8 = 50 %."""
    cal = calibrate_gateway([row("a", 1), row("b", 2), row("c", 4)], "m", Ms=(1,), d=[0.5, 0.5])
    assert cal.d == (0.5, 0.5) and cal.full_bias == 4
    assert cal.points[0].T_async == 8 and cal.points[0].abs_error == 4 and cal.points[0].rel_error == 0.5


def test_stat_selects_the_column_and_ratios_use_min():
    s = row("a", 2.0, dur_p5=2.5, dur_p50=3.0, dur_mean=3.5, tot_p50=8.0, q_p50=0.2, q_frac=0.25)
    for stat, tau in (("min", 2.0), ("p5", 2.5), ("p50", 3.0), ("mean", 3.5)):
        e = calibrate_gateway([s], "m", stat=stat).nodes[0]
        assert e.tau == tau and e.inflation == 4.0 and e.spread == 1.5 and e.q_p50 == 0.2 and e.q_frac == 0.25


def test_single_node_has_zero_bias_and_error():
    cal = calibrate_gateway([row("a", 3.0)], "m")
    assert cal.S == 1 and cal.homogeneity_bias == 0
    assert all(p.abs_error == 0 and p.rel_error == 0 for p in cal.points)


def test_small_sample_warnings_and_note():
    cal = calibrate_gateway([row("a", 1, n=1), row("b", 2, n=9), row("c", 3, n=10)], "m")
    assert cal.warnings == ("a: small sample: tau from n=1 request (< 10)",
                            "b: small sample: tau from n=9 requests (< 10)")
    assert [e.small_sample for e in cal.nodes] == [True, True, False]
    assert cal.note == ERRORS4_NOTE and "Errors 4" in cal.note


def test_zero_service_floor_gives_no_ratio_and_a_warning():
    cal = calibrate_gateway([row("a", 0.0, tot_p50=0.1), row("b", 1.0)], "m")
    assert cal.nodes[0].inflation is None and cal.nodes[0].spread is None
    assert any("a: tau = 0" in w for w in cal.warnings)


def test_default_nodes_are_file_order_and_other_models_ignored():
    stats = [row("x", 1), row("a", 5, model="other"), row("y", 2), row("z", 3)]
    cal = calibrate_gateway(stats, "m")
    assert [e.node for e in cal.nodes] == ["x", "y", "z"]
    assert [e.node for e in calibrate_gateway(stats, "m", nodes=["z", "x"]).nodes] == ["z", "x"]


def test_to_dict_is_plain_json():
    import json

    data = json.loads(json.dumps(calibrate_gateway([row("a", 1), row("b", 2)], "m", Ms=(1, 8)).to_dict()))
    assert data["tau"] == [1, 2] and data["S"] == 2 and data["bottleneck"] == "b" and data["warnings"] == []
    assert [p["M"] for p in data["points"]] == [1, 8] and data["nodes"][0]["node"] == "a"
    assert set(data) >= {"model", "stat", "nodes", "tau_max", "homogeneity_bias", "full_bias", "d", "note"}


def test_aggregate_hand_case():
    s = aggregate_requests("m", "a", [4.0, 1.0, 3.0, 2.0], [5.0, 1.0, 3.0, 2.0], [1.0, 0.0, 0.0, 0.0])
    assert (s.n, s.dur_min, s.dur_p50, s.dur_mean, s.tot_p50, s.q_p50, s.q_frac) == (4, 1, 2.5, 2.5, 2.5, 0, 0.25)
    assert s.dur_p5 == pytest.approx(1.15) and s.dur_p95 == pytest.approx(3.85)


# -- error paths of the core -----------------------------------------------------------------------

def test_unknown_model_lists_the_files_models():
    with pytest.raises(InputError, match=r"^s\.csv: unknown model 'n'; .*valid: m, other$"):
        select_stats([row("a", 1), row("b", 1, model="other")], "n", source="s.csv")


def test_unknown_node_lists_the_nodes_that_served_the_model():
    stats = [row("a", 1), row("b", 1), row("c", 1, model="other")]
    with pytest.raises(InputError, match=r"unknown node 'c'; .*valid: a, b \(the nodes that served 'm'\)"):
        select_stats(stats, "m", ["a", "c"])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"nodes": []}, r"nodes: need at least one node \(got none\); 'm' was served by a, b"),
        ({"nodes": ["a", "a"]}, r"node 'a' is listed twice"),
        ({"stat": "max"}, r"stat must be one of min, p5, p50, mean \(got 'max'\)"),
        ({"Ms": ()}, r"M: need at least one"),
        ({"Ms": (0,)}, r"M must be an integer >= 1 \(got 0\)"),
        ({"d": [1.0, 2.0]}, r"d must hold S-1 = 1 link latencies"),
        ({"d": [-1.0]}, r"d\[0\] must be finite and >= 0 \(got -1.0\)"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(InputError, match=message):
        calibrate_gateway([row("a", 1), row("b", 2)], "m", **kwargs)


def test_all_zero_tau_is_refused():
    with pytest.raises(InputError, match=r"every chosen node has tau = 0"):
        calibrate_gateway([row("a", 0.0)], "m")


def test_aggregate_needs_matching_samples():
    with pytest.raises(InputError, match=r"'m' on 'a': need equally many .*got 2, 1, 2"):
        aggregate_requests("m", "a", [1.0, 2.0], [1.0], [0.0, 0.0])
    with pytest.raises(InputError, match=r"got 0, 0, 0"):
        aggregate_requests("m", "a", [], [], [])


def test_layer_costs_refuses_zero_tau():
    with pytest.raises(InputError, match=r"tau = 0.0 on stage 1"):
        layer_costs([1.0, 0.0], np.ones((2, 3)))


# -- golden numbers, theory.md §7.2 (fixture with the paper's published tau) ------------------------

def test_golden_legalone_three_hosts():
    """§7.2: tau = (1.13, 2.901, 2.621), bias 2.05 s, +30.8 % at M=1, 0.7 % at M=100 (7.6 % at M=8 derived)."""
    cal = calibrate_gateway(read_gateway(DATA / "gateway-paper.csv").stats, "legalone:8b", LEGAL3)
    assert cal.tau == (1.13, 2.901, 2.621) and cal.bottleneck == "node-02"
    assert cal.homogeneity_bias == pytest.approx(2.051, abs=1e-12)
    assert [round(100 * p.rel_error, 1) for p in cal.points] == [30.8, 7.6, 0.7]
    assert cal.nodes[0].inflation == pytest.approx(7.6, abs=0.005)  # 8.59 s / 1.13 s (Cor 5 in §7.2)


def test_golden_qwen_five_hosts():
    """§7.2: qwen2.5:7b, five hosts, tau_max 30.1, bias 119.8 s; derived 389.6 %, 49.6 %, 3.98 %."""
    cal = calibrate_gateway(read_gateway(DATA / "gateway-paper.csv").stats, "qwen2.5:7b", QWEN5)
    assert cal.tau == (0.031, 0.118, 0.208, 0.285, 30.111) and cal.tau_max == 30.111
    assert round(cal.homogeneity_bias, 1) == 119.8
    assert [round(100 * p.rel_error, 2) for p in cal.points] == [389.56, 49.6, 3.98]
    assert cal.warnings == ("node-04: small sample: tau from n=2 requests (< 10)",)


def test_golden_default_nodes_include_the_noisy_minimum():
    """Errors 4: legalone:8b on node-05 (RTX 3080, n=1) 0.459 s < the 5090's 1.13 s."""
    cal = calibrate_gateway(read_gateway(DATA / "gateway-paper.csv").stats, "legalone:8b")
    assert [e.node for e in cal.nodes] == [*LEGAL3, "node-05"] and cal.tau[3] == 0.459
    assert any(w.startswith("node-05: small sample: tau from n=1 request") for w in cal.warnings)


def test_requests_fixture_reproduces_published_rows():
    """Aggregating our per-request fixture gives three rows of the published CSV exactly."""
    got = {(s.model, s.node): s for s in read_gateway(DATA / "gateway-requests.csv").stats}
    published = {
        ("Qwen3.8-27B-GGUF", "node-01"): (4, 0.536, 0.53825, 0.5585, 0.5702499999999999, 0.556, 0.585, 0.0265, 1.0),
        ("all-minilm:l6v2", "node-01"): (2, 0.111, 0.11395, 0.1405, 0.16705, 0.1405, 0.1415, 0.001, 1.0),
        ("qwen2.5:7b", "node-05"): (2, 7.308, 7.6165, 10.393, 13.1695, 10.393, 10.394, 0.0005, 0.5),
    }
    assert list(got) == list(published)  # first-appearance order
    for key, values in published.items():
        s = got[key]
        actual = (s.n, s.dur_min, s.dur_p5, s.dur_p50, s.dur_p95, s.dur_mean, s.tot_p50, s.q_p50, s.q_frac)
        assert actual == pytest.approx(values, rel=1e-12, abs=1e-15), key


@pytest.mark.skipif(not REAL.is_file(), reason="real gateway data (../shared/data/gateway) absent")
def test_real_dataset_goldens():
    """The published dataset itself (CC-BY-4.0, ZHU Wenbo): §7.2's figures and our reconstruction."""
    stats = read_gateway(REAL).stats
    legal = calibrate_gateway(stats, "legalone:8b", LEGAL3)
    assert legal.tau == (1.13, 2.901, 2.621) and round(legal.homogeneity_bias, 3) == 2.051
    assert [round(100 * p.rel_error, 1) for p in legal.points] == [30.8, 7.6, 0.7]
    assert legal.nodes[0].n == 5049 and round(legal.nodes[0].inflation, 1) == 7.6
    qwen = calibrate_gateway(stats, "qwen2.5:7b", QWEN5)
    assert round(qwen.homogeneity_bias, 1) == 119.8
    assert [round(100 * p.rel_error, 2) for p in qwen.points] == [389.56, 49.6, 3.98]
    real = {(s.model, s.node): s for s in stats}
    for s in read_gateway(DATA / "gateway-requests.csv").stats:
        r = real[(s.model, s.node)]
        for field in ("n", "dur_min", "dur_p5", "dur_p50", "dur_p95", "tot_p50", "q_p50"):
            assert getattr(s, field) == pytest.approx(getattr(r, field), rel=1e-12), (s.model, field)
        assert s.dur_mean == pytest.approx(r.dur_mean, abs=5e-7) and s.q_frac == pytest.approx(r.q_frac, abs=5e-7)


# -- properties (hypothesis, derandomized by the ci profile) ---------------------------------------

samples = st.lists(st.floats(0, 1e3, allow_nan=False), min_size=1, max_size=40)
taus = st.lists(st.floats(1e-3, 1e3, allow_nan=False), min_size=1, max_size=6)


@settings(max_examples=60)
@given(samples, st.data())
def test_aggregate_equals_numpy(dur, data):
    n = len(dur)
    queue = data.draw(st.lists(st.sampled_from([0.0, 0.001, 0.5, 3.0]), min_size=n, max_size=n))
    total = [a + b for a, b in zip(dur, queue)]
    s = aggregate_requests("m", "a", dur, total, queue)
    x = np.array(dur)
    assert s.n == n and s.dur_min == x.min() and s.dur_mean == x.mean()
    assert [s.dur_p5, s.dur_p50, s.dur_p95] == list(np.percentile(x, [5, 50, 95], method="linear"))
    assert s.tot_p50 == np.median(total) and s.q_p50 == np.median(queue)
    assert s.q_frac == sum(q > 0 for q in queue) / n
    assert s.dur_min <= s.dur_p5 <= s.dur_p50 <= s.dur_p95 <= x.max()


@settings(max_examples=40)
@given(st.lists(st.tuples(st.sampled_from("ab"), st.sampled_from("xyz"), st.floats(0, 50, allow_nan=False),
                          st.sampled_from([0.0, 0.002, 1.0])), min_size=1, max_size=25))
def test_requests_then_stats_csv_round_trip(tmp_path_factory, rows):
    """A request log and the statistics CSV written from its aggregate read back to the same rows."""
    tmp = tmp_path_factory.mktemp("gw")
    req = tmp / "req.csv"
    req.write_text(csvio.to_csv(("model", "node", "duration_s", "total_s", "queue_wait_s"),
                                [(m, n, d, d + q, q) for m, n, d, q in rows]))
    first = read_gateway(req)
    assert first.format == "requests"
    assert [(s.model, s.node) for s in first.stats] == list(dict.fromkeys((m, n) for m, n, _, _ in rows))
    out = tmp / "stats.csv"
    out.write_text(csvio.to_csv(STATS_COLUMNS, [[getattr(s, c) for c in STATS_COLUMNS] for s in first.stats]))
    again = read_gateway(out)
    assert again.format == "stats" and again.stats == first.stats


@settings(max_examples=60)
@given(taus, st.data())
def test_bias_nonnegative_order_invariant_and_error_decreasing(tau, data):
    stats = [row(f"n{j}", t) for j, t in enumerate(tau)]
    d = data.draw(st.none() | st.lists(st.floats(0, 10, allow_nan=False), min_size=len(tau) - 1,
                                       max_size=len(tau) - 1))
    Ms = (1, 2, 8, 100, 1000)
    cal = calibrate_gateway(stats, "m", Ms=Ms, d=d)
    assert cal.homogeneity_bias >= 0 and cal.tau_max == max(tau)
    assert all(p.abs_error == pytest.approx(cal.points[0].abs_error, abs=1e-9 * cal.tau_max * 1000) for p in cal.points)
    if d is None:
        rel = [p.rel_error for p in cal.points]
        assert all(a >= b - 1e-12 for a, b in zip(rel, rel[1:]))  # B / T_async(M), T_async increasing
    perm = data.draw(st.permutations(range(len(tau))))
    other = calibrate_gateway(stats, "m", nodes=[f"n{j}" for j in perm], Ms=Ms,
                              d=None if d is None else data.draw(st.permutations(d)))
    assert other.homogeneity_bias == pytest.approx(cal.homogeneity_bias)
    for p, q in zip(cal.points, other.points):
        assert (q.T_async, q.T_gpipe) == pytest.approx((p.T_async, p.T_gpipe))


@settings(max_examples=40)
@given(taus, st.integers(1, 5), st.data())
def test_layer_costs_rows_sum_to_tau_and_runs_expand_back(tau, L, data):
    G = len(tau)
    r = np.array(data.draw(st.lists(st.floats(1e-6, 1.0), min_size=G * L, max_size=G * L))).reshape(G, L)
    r = np.repeat(r, 3, axis=1)  # runs of three identical layers
    c = layer_costs(tau, r)
    assert np.allclose(c.sum(axis=1), tau, rtol=1e-12)
    names = [f"layer.{k}" for k in range(3 * L)]
    layers = {"layer_names": names, "memory_gb": np.ones(3 * L), "cut_bytes": np.ones(3 * L),
              "layer_kinds": ["decoder"] * (3 * L), "params": np.ones(3 * L)}
    entries = profile_entries([f"g{j}" for j in range(G)], c, layers)
    assert sum(e.get("repeat", 1) for e in entries) == 3 * L
    expanded = list(itertools.chain.from_iterable([e["cost"]] * e.get("repeat", 1) for e in entries))
    assert all(expanded[l] == {f"g{j}": c[j, l] for j in range(G)} for l in range(3 * L))
