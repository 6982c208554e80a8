"""Closed forms (theory.md Thms 1-3, Cors 1-3, Prop 1): hand cases and the paper's published numbers."""

from __future__ import annotations

import pytest

from partitioner import analysis as A

PAPER = [0.5, 1, 1, 5]  # §3.1 worked example
ROW8_D = [4.6, 0.1, 0.1]  # Table 2 row 8: "exceeds slack (Thm 3)"


def test_tiny_hand_computed_two_stages() -> None:
    # tau = [1, 3], d = [2]: sum tau + sum d = 6; sigma = [3, 3]
    assert A.makespan_free([1, 3], 4) == 3 * 3 + 4
    assert A.makespan_async([1, 3], [2], 4) == 6 + 3 * 3
    assert A.makespan_blocking([1, 3], [2], 4) == 3 * 3 + 6
    assert A.makespan_gpipe([1, 3], 4) == 5 * 3
    assert A.sigma([1, 3], [2]).tolist() == [3, 3]
    assert A.sigma_max([1, 3], [2]) == 3


def test_single_stage_has_no_links() -> None:
    assert A.makespan_async([2.0], None, 5) == 10.0
    assert A.makespan_blocking([2.0], [], 5) == 10.0
    assert A.homogeneity_bias([2.0]) == 0.0


def test_paper_worked_example_section_3_1() -> None:
    # theory.md "Worked example (§3.1)": T(1) = 7.5 vs T_c = 20 (+166.7 %); T(8) = 42.5 vs 55
    assert A.makespan_free(PAPER, 1) == pytest.approx(7.5)
    assert A.makespan_async(PAPER, None, 1) == pytest.approx(7.5)
    assert A.makespan_gpipe(PAPER, 1) == pytest.approx(20)
    assert round(100 * A.gpipe_relative_error(PAPER, None, 1), 1) == 166.7
    assert A.makespan_free(PAPER, 8) == pytest.approx(42.5)
    assert A.makespan_gpipe(PAPER, 8) == pytest.approx(55)
    assert round(100 * A.gpipe_relative_error(PAPER, None, 8), 1) == 29.4
    assert A.homogeneity_bias(PAPER) == pytest.approx(12.5)
    assert A.crossover_batches(PAPER) == pytest.approx(2.5)


def test_paper_row8_exceeds_slack() -> None:
    # issue 2 / Table 2 row 8: T_async(8) = 47.3, T_block(8) = 48.0, M* = 3.46
    assert A.makespan_async(PAPER, ROW8_D, 8) == pytest.approx(47.3)
    assert A.makespan_blocking(PAPER, ROW8_D, 8) == pytest.approx(48.0)
    assert A.crossover_batches(PAPER, ROW8_D) == pytest.approx(3.46)
    assert A.first_latency(PAPER, ROW8_D) == pytest.approx(12.3)
    assert A.full_bias(PAPER, ROW8_D) == pytest.approx(12.5 - 4.8)


@pytest.mark.parametrize(
    ("M", "pct"),
    [(1, 30.8), (8, 7.6), (100, 0.7)],  # §7.2 legalone:8b; M = 8 is *derived* in theory.md
)
def test_legalone_gateway_numbers(M: int, pct: float) -> None:
    tau = [1.13, 2.90, 2.62]
    assert A.homogeneity_bias(tau) == pytest.approx(2.05)
    assert round(100 * A.gpipe_relative_error(tau, None, M), 1) == pct


@pytest.mark.parametrize(("M", "pct"), [(1, 389.6), (8, 49.6), (100, 3.98)])
def test_qwen_gateway_numbers_derived(M: int, pct: float) -> None:
    tau = [0.031, 0.118, 0.208, 0.285, 30.111]  # §7.2 qwen2.5:7b, five hosts (derived %)
    assert A.homogeneity_bias(tau) == pytest.approx(119.8, abs=0.01)
    assert 100 * A.gpipe_relative_error(tau, None, M) == pytest.approx(pct, abs=0.05)


# theory.md Table 1 (all values correct): tau, sum(tau_max - tau), g at M=1, g at M=8 (%)
TABLE_1 = [
    ([1, 1, 1, 1], 0.0, 0.0, 0.0),
    ([0.8, 1, 1, 1.2], 0.8, 20.0, 6.5),
    ([0.5, 1, 1, 2], 3.5, 77.8, 18.9),
    ([0.5, 1, 1, 5], 12.5, 166.7, 29.4),
    ([0.1, 0.2, 0.3, 5], 14.4, 257.1, 35.5),
]


@pytest.mark.parametrize(("tau", "bias", "g1", "g8"), TABLE_1)
def test_table_1(tau: list[float], bias: float, g1: float, g8: float) -> None:
    assert A.homogeneity_bias(tau) == pytest.approx(bias, abs=1e-12)
    assert round(100 * A.gpipe_relative_error(tau, None, 1), 1) == g1
    assert round(100 * A.gpipe_relative_error(tau, None, 8), 1) == g8
    for M in (1, 8, 100):  # Cor 1: T_c - T_free = bias, constant in M
        assert A.makespan_gpipe(tau, M) - A.makespan_free(tau, M) == pytest.approx(bias)


def test_errors_7_g_is_not_proportional_to_bias() -> None:
    # theory.md Errors 7: [1,1,1,10] has B = 27, g(1) = 207.7 %; [0.1,5,5,5] B = 4.9, g(1) = 32.5 %
    assert A.homogeneity_bias([1, 1, 1, 10]) == 27
    assert round(100 * A.gpipe_relative_error([1, 1, 1, 10], None, 1), 1) == 207.7
    assert A.homogeneity_bias([0.1, 5, 5, 5]) == pytest.approx(4.9)
    assert round(100 * A.gpipe_relative_error([0.1, 5, 5, 5], None, 1), 1) == 32.5


def test_throughput_prop_1() -> None:
    assert A.throughput_async(PAPER) == pytest.approx(1 / 5)
    assert A.throughput_blocking(PAPER, ROW8_D) == pytest.approx(1 / 5.1)
    assert A.throughput_blocking(PAPER, [0.1, 0.1, 0.1]) == pytest.approx(A.throughput_async(PAPER))


def test_bubble_fraction_matches_gpipe_for_balanced_pipelines() -> None:
    # definition: 1 - M sum tau / (S T_async); balanced, d = 0: (S-1)/(M+S-1) (GPipe §2.2)
    for S, M in [(4, 1), (4, 8), (2, 3), (1, 5)]:
        assert A.bubble_fraction([2.0] * S, None, M) == pytest.approx((S - 1) / (M + S - 1))
    # hand case: tau = [1, 3], d = [2], M = 2: T = 9, busy 2*4 of 2*9 stage-seconds
    assert A.bubble_fraction([1, 3], [2], 2) == pytest.approx(1 - 8 / 18)
