"""Slack, binding links, the first-binding rule (theory.md Cor 4, Errors 1) and rho (Cor 5, §9, Errors 3)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from partitioner import analysis as A
from partitioner.errors import InputError
from partitioner.simulate import simulate

PAPER = [0.5, 1, 1, 5]
ROW8_D = [4.6, 0.1, 0.1]


def _slope(tau: list[float], d: list[float], regime: str = "blocking", **kw: float) -> float:
    """Simulated per-micro-batch slope T(21) - T(20)."""
    return simulate(tau, d, 21, regime, **kw).makespan - simulate(tau, d, 20, regime, **kw).makespan


def test_row8_issue_numbers() -> None:
    # issue 2: phase transition true, overlap gap 0.7
    assert A.phase_transition(PAPER, ROW8_D) is True
    assert A.overlap_gap(PAPER, ROW8_D, 8) == pytest.approx(0.7)
    assert A.slack(PAPER) == (4.5, 4.0, 4.0)
    assert A.binding_links(PAPER, ROW8_D) == (0,)
    assert A.effective_slope(PAPER, ROW8_D, 1.0) == pytest.approx(5.0)
    assert A.effective_slope(PAPER, ROW8_D, 0.0) == pytest.approx(5.1)
    assert A.makespan_real(PAPER, ROW8_D, 8, 0.5) == pytest.approx(47.65)


def test_row7_near_slack_does_not_bind() -> None:
    assert A.binding_links(PAPER, [4, 0.1, 0.1]) == ()
    assert A.phase_transition(PAPER, [4, 0.1, 0.1]) is False
    assert A.overlap_gap(PAPER, [4, 0.1, 0.1], 100) == 0


def test_single_stage_has_no_slack_or_first_link() -> None:
    assert A.slack([3.0]) == ()
    assert A.binding_links([3.0]) == ()
    assert A.first_binding_link([3.0]) is None


def test_errors_1a_bottleneck_not_last_has_slack_zero() -> None:
    # theory.md Errors 1(a): tau = [0.5,5,1,1], d = [0,0.1,0] -> blocking slope 5.1; stage 2 has slack 4
    tau, d = [0.5, 5, 1, 1], [0, 0.1, 0]
    assert A.slack(tau)[1] == 0 and A.slack(tau)[2] == 4
    assert A.binding_links(tau, d) == (1,)
    assert A.first_binding_link(tau) == 1
    assert _slope(tau, d) == pytest.approx(5.1)
    assert A.effective_slope(tau, d, 0.0) == pytest.approx(5.1)


def test_errors_1b_position_is_irrelevant() -> None:
    # Errors 1(b): tau = [4,1,5]: d = [1.5,0] -> slope 5.5 via stage 0 (slack 1); d = [0,1.5] keeps 5
    tau = [4, 1, 5]
    assert A.slack(tau) == (1, 4)
    assert _slope(tau, [1.5, 0]) == pytest.approx(5.5)
    assert _slope(tau, [0, 1.5]) == pytest.approx(5.0)
    assert A.binding_links(tau, [1.5, 0]) == (0,)
    assert A.binding_links(tau, [0, 1.5]) == ()
    assert A.first_binding_link(tau) == 0  # the paper would name stage 1, "just below the bottleneck"


def test_homogeneous_compute_all_slacks_zero() -> None:
    # Errors 1: rows 9 and 10 have all slacks 0, so any d > 0 binds
    assert A.slack([0.5] * 4) == (0, 0, 0)
    assert A.binding_links([0.5] * 4, [1, 0.01, 1]) == (0, 1, 2)


@settings(max_examples=60)
@given(st.lists(st.integers(1, 1000), min_size=2, max_size=7, unique=True))
def test_first_binding_link_is_first_to_bind_under_uniform_d(ints: list[int]) -> None:
    tau = [x / 100 for x in ints]
    first = A.first_binding_link(tau)
    min_slack = min(A.slack(tau))
    assert A.slack(tau)[first] == min_slack
    assert not A.phase_transition(tau, [min_slack] * (len(tau) - 1))  # d = slack does not bind
    assert A.binding_links(tau, [min_slack + 1e-6] * (len(tau) - 1)) == (first,)


def test_errors_3_per_transfer_overlap_is_not_linear() -> None:
    # Errors 3: tau = [4,5], d = [2], 50 % of each transfer overlapped: slope 5.0; linear says 5.5
    tau, d = [4, 5], [2]
    assert _slope(tau, d, "partial", rho=0.5) == pytest.approx(5.0)
    assert A.effective_slope(tau, d, 0.5) == pytest.approx(5.5)
    Ms = [10, 20, 40]
    Ts = [simulate(tau, d, M, "partial", rho=0.5).makespan for M in Ms]
    assert A.rho_from_measurements(Ms, Ts, tau, d) == pytest.approx(1.0)  # §9 reports rho = 1.0


def test_rho_from_makespan_hand_case() -> None:
    # row 8, M = 8: T_async 47.3, T_block 48.0; T_real 47.44 <=> rho 0.8
    assert A.rho_from_makespan(47.44, PAPER, ROW8_D, 8) == pytest.approx(0.8)
    assert A.rho_from_makespan(48.0, PAPER, ROW8_D, 8) == pytest.approx(0.0, abs=1e-12)
    assert A.rho_from_makespan(49.0, PAPER, ROW8_D, 8) < 0  # outside the Cor 5 sandwich, unclipped


@settings(max_examples=60)
@given(
    st.lists(st.floats(0.05, 10), min_size=2, max_size=6),
    st.floats(0.0, 1.0),
    st.data(),
)
def test_rho_recovered_from_simulated_linear_makespans(tau: list[float], rho: float, data: st.DataObject) -> None:
    d = data.draw(st.lists(st.floats(0.0, 20), min_size=len(tau) - 1, max_size=len(tau) - 1))
    d[0] = max(tau) - tau[0] + 0.5  # make sigma_max > tau_max so rho is defined
    Ms = data.draw(st.lists(st.integers(1, 60), min_size=2, max_size=5, unique=True))
    Ts = []
    for M in Ms:  # linear interpolation of the two simulated regimes (§9's definition)
        t_a, t_b = simulate(tau, d, M, "async").makespan, simulate(tau, d, M, "blocking").makespan
        Ts.append(t_b - rho * (t_b - t_a))
    assert A.rho_from_measurements(Ms, Ts, tau, d) == pytest.approx(rho, abs=1e-6)
    M = max(Ms)
    if M > 1:
        assert A.rho_from_makespan(A.makespan_real(tau, d, M, rho), tau, d, M) == pytest.approx(rho, abs=1e-6)


def test_rho_undefined_without_binding_link() -> None:
    with pytest.raises(A.RhoUndefinedError, match=r"sigma_max == tau_max \(both 5.0\)"):
        A.rho_from_measurements([2, 4], [20, 30], PAPER, [0.1, 0.1, 0.1])
    with pytest.raises(A.RhoUndefinedError, match="M = 1"):
        A.rho_from_makespan(12.3, PAPER, ROW8_D, 1)
    with pytest.raises(InputError, match="both 5.0"):  # typed: also an InputError
        A.rho_from_makespan(40.0, PAPER, None, 8)


@pytest.mark.parametrize(
    ("Ms", "Ts", "match"),
    [
        ([2, 4, 6], [1.0, 2.0], r"3 M, 2 T"),
        ([4, 4], [30.0, 30.5], r"distinct M values \(got M = \[4, 4\]\)"),
        ([0, 4], [30.0, 30.5], r"got 0"),
        ([2, 4], [30.0, float("nan")], r"got nan"),
        ([2, 4], [30.0, -1.0], r"got -1.0"),
        ([2.5, 4], [30.0, 31.0], r"got 2.5"),
    ],
)
def test_rho_from_measurements_bad_input(Ms: list, Ts: list, match: str) -> None:
    with pytest.raises(InputError, match=match):
        A.rho_from_measurements(Ms, Ts, PAPER, ROW8_D)


def test_rho_from_makespan_bad_time() -> None:
    with pytest.raises(InputError, match=r"T_real must be > 0 \(got 0\)"):
        A.rho_from_makespan(0, PAPER, ROW8_D, 8)
    with pytest.raises(InputError, match=r"T_real must be a finite number of seconds \(got 'x'\)"):
        A.rho_from_makespan("x", PAPER, ROW8_D, 8)  # type: ignore[arg-type]


@pytest.mark.parametrize("rho", [-0.1, 1.5, float("nan"), True, "0.5"])
def test_effective_slope_rejects_bad_rho(rho: object) -> None:
    with pytest.raises(InputError, match=r"rho must be"):
        A.effective_slope(PAPER, ROW8_D, rho)  # type: ignore[arg-type]


def test_overlap_gap_is_cor5_difference() -> None:
    rng = np.random.default_rng(3)
    for _ in range(20):
        tau = rng.uniform(0.1, 5, 5).tolist()
        d = rng.uniform(0, 5, 4).tolist()
        M = int(rng.integers(1, 50))
        gap = A.makespan_blocking(tau, d, M) - A.makespan_async(tau, d, M)
        assert A.overlap_gap(tau, d, M) == pytest.approx(gap, abs=1e-9)
