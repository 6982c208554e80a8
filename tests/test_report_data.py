"""Report data on tiny hand-made problems (numbers checkable by hand; theory.md Thm 2/3, Cor 1/3/4)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from partitioner.errors import InputError
from partitioner.problem import CostTables, Problem
from partitioner.report.build import build_report, compare_plans
from partitioner.report.compare import ParetoPoint, infeasible_row
from partitioner.report.pareto import dominates, frontier, pareto_Ms


def toy_tables(latency: float = 3.0, capacity: tuple[float, float] = (2.0, 3.0), L: int = 3) -> CostTables:
    """Device A: 1 s per layer, device B: 2 s per layer; 1 GB per layer; link A<->B `latency` s."""
    return CostTables(
        cost=np.array([[1.0] * L, [2.0] * L]),
        memory_gb=np.ones(L),
        cut_bytes=np.zeros(L),
        capacity_gb=np.array(capacity),
        latency_s=np.array([[0.0, latency], [latency, 0.0]]),
        bandwidth_Bps=np.full((2, 2), np.inf),
        layer_names=tuple(f"l{i}" for i in range(L)),
        device_names=("A", "B"),
        gpu_names=("gpu-a", "gpu-b"),
        node_names=("n0", "n1"),
        model_name="toy",
    )


@pytest.fixture(scope="module")
def toy_report():
    return build_report(Problem(toy_tables(), M=8), Ms=(1, 8), solver="brute", pareto_Ms=(1, 2, 4, 8))


def test_balanced_row_by_hand(toy_report) -> None:
    # A alone does not fit (3 GB > 2 GB); best split: B holds 1 layer (2 s), A holds 2 (2 s), d = 3.
    m = toy_report.row("balanced").metrics
    assert sorted(m.tau) == [2.0, 2.0] and m.d == (3.0,)
    assert (m.tau_max, m.sigma_max, m.first_latency) == (2.0, 5.0, 7.0)
    assert m.homogeneity_bias == 0.0 and m.comm_underestimate == 3.0
    assert m.crossover_batches == pytest.approx(1 + 7 / 2)
    at8 = {x.M: x for x in m.by_M}[8]
    assert (at8.T_async, at8.T_block, at8.T_gpipe) == (21.0, 42.0, 18.0)  # 7 + 7*2, 7*5 + 7, 9*2
    assert at8.gpipe_error == pytest.approx((18 - 21) / 21)
    assert [(v.link, v.d, v.slack, v.excess) for v in m.violations] == [(0, 3.0, 0.0, 3.0)]
    assert m.first_binding_link == 0


def test_gpipe_error_split_sums(toy_report) -> None:
    """T_gpipe - T_async = sum(tau_max - tau_j) - sum d for every plan and M (Cor 3)."""
    for row in toy_report.rows:
        m = row.metrics
        for x in m.by_M:
            assert x.T_gpipe - x.T_async == pytest.approx(m.homogeneity_bias - m.comm_underestimate)


def test_every_objective_and_baseline_is_a_row(toy_report) -> None:
    names = [r.name for r in toy_report.rows]
    assert names == ["balanced", "throughput", "makespan", "even", "memory", "params", "speed"]
    assert {r.label for r in toy_report.rows if r.kind == "baseline"} >= {"vLLM", "llama.cpp", "DeepSpeed"}


def test_infeasible_baseline_is_shown_with_reason() -> None:
    # 4 layers, A holds 1 GB: vLLM's even split puts 2 layers (2 GB) on A -> infeasible, not repaired.
    rows = compare_plans(Problem(toy_tables(capacity=(1.0, 4.0), L=4), M=4), Ms=(1,), solver="brute",
                         baselines=("even",))
    even = rows[-1]
    assert even.name == "even" and not even.feasible and even.reason
    assert any(mem.used_gb > mem.capacity_gb for mem in even.metrics.memory)
    assert all(r.feasible for r in rows[:-1])


def test_row_without_plan_keeps_reason() -> None:
    row = infeasible_row("memory", "baseline", "no device can hold layer 'l0'")
    assert (row.feasible, row.metrics, row.label) == (False, None, "llama.cpp")


def test_pareto_by_hand(toy_report) -> None:
    # M=1: B alone, latency 6, period 6. M>=2: split, latency 7, period 2. Both supported points.
    got = [(p.M, p.first_latency, p.throughput) for p in toy_report.pareto]
    assert got == [(1, 6.0, pytest.approx(1 / 6)), (2, 7.0, 0.5)]


def test_pareto_Ms() -> None:
    assert pareto_Ms(1) == (1,)
    assert pareto_Ms(8) == (1, 2, 4, 8)
    assert pareto_Ms(10) == (1, 2, 4, 8, 10)


def test_bad_inputs() -> None:
    with pytest.raises(InputError, match="base objective"):
        build_report(Problem(toy_tables()), base="fastest", solver="brute")
    with pytest.raises(InputError, match=r"got 0"):
        compare_plans(Problem(toy_tables()), Ms=(0,), solver="brute")
    with pytest.raises(InputError, match="at least one"):
        compare_plans(Problem(toy_tables()), Ms=(), solver="brute")


def _pt(thr: float, lat: float, M: int = 1) -> ParetoPoint:
    return ParetoPoint(M=M, throughput=thr, first_latency=lat, tau_max=1 / thr, devices=("A",), layers=((0, 1),))


def test_frontier_by_hand() -> None:
    pts = [_pt(1.0, 5.0, 1), _pt(2.0, 6.0, 2), _pt(1.5, 7.0, 4), _pt(2.0, 6.0, 8)]
    assert [(p.throughput, p.first_latency, p.M) for p in frontier(pts)] == [(1.0, 5.0, 1), (2.0, 6.0, 2)]
    assert dominates(_pt(2.0, 6.0), _pt(1.5, 7.0)) and not dominates(_pt(2.0, 6.0), _pt(2.0, 6.0))


@settings(max_examples=60)
@given(st.lists(st.tuples(st.floats(0.1, 10), st.floats(0.1, 10)), min_size=1, max_size=12))
def test_frontier_properties(raw: list[tuple[float, float]]) -> None:
    pts = [_pt(t, lat, i) for i, (t, lat) in enumerate(raw)]
    front = frontier(pts)
    assert front
    for p in front:
        assert not any(dominates(q, p) for q in pts)
    for p in pts:  # everything left out is dominated by, or equal to, a kept point
        assert any(dominates(q, p) or (q.throughput == p.throughput and q.first_latency == p.first_latency)
                   for q in front) or p in front


def test_tokens_per_s_helper() -> None:
    """One helper: the plan's serving model when it has one, else sequences x micro-batches/s."""
    from types import SimpleNamespace

    from partitioner.report.serving import Workload, serving_numbers

    plan = SimpleNamespace(throughput=50.0)
    assert serving_numbers(plan, Workload(batch=8)).tokens_per_s == 400.0
    assert serving_numbers(plan, Workload(batch=8, profile=True)).tokens_per_s == 50.0  # layers: 1 sequence
    pre = serving_numbers(plan, Workload(batch=2, phase="prefill", prompt_tokens=1024))
    assert pre.tokens_per_s == 2 * 1024 * 50.0 and pre.unit == "prompt tokens/s"
    served = SimpleNamespace(throughput=50.0, serving={"tokens_per_s": 321.0, "tpot_s": 0.025, "ttft_s": 0.4,
                                                       "binding": "kv_capacity"})
    s = serving_numbers(served, Workload(batch=8))
    assert (s.tokens_per_s, s.tpot_s, s.ttft_s, s.binding, s.source) == (321.0, 0.025, 0.4, "kv_capacity",
                                                                         "serving model")
