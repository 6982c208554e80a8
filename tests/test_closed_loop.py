"""Closed-loop decode: hand-computed cases and the simulator against the max-plus closed form."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from partitioner.analysis.closed_loop import (
    decode_bound,
    decode_crossover,
    decode_period,
    decode_throughput,
    prefill_ttft,
    round_trip,
    stage_hold,
)
from partitioner.errors import InputError
from partitioner.simulate.closed_loop import decode_period_batch, simulate_decode

TAU, D = [1.0, 2.0, 1.0], [0.5, 0.5]


# -- hand-computed: R = 1 + 2 + 1 + 0.5 + 0.5 + d_ret ------------------------------------------
def test_below_crossover_the_round_trip_binds():
    # R = 6 with d_ret = 1; K = 2: max(2 * 2, 6) = 6, 2 tokens per 6 s
    assert round_trip(TAU, D, 1.0) == 6.0
    assert decode_period(TAU, D, K=2, d_ret=1.0) == 6.0
    assert decode_bound(TAU, D, K=2, d_ret=1.0) == "round_trip"
    assert decode_throughput(TAU, D, K=2, d_ret=1.0, B=8) == pytest.approx(16 / 6)
    assert decode_crossover(TAU, D, 1.0) == 3.0  # R / tau_max


def test_above_crossover_the_bottleneck_binds_at_the_open_loop_rate():
    # K = 4: max(4 * 2, 6) = 8 -> K / P = 1 / tau_max, the open-loop rate (Prop 1)
    assert decode_period(TAU, D, K=4, d_ret=1.0) == 8.0
    assert decode_bound(TAU, D, K=4, d_ret=1.0) == "bottleneck"
    assert decode_throughput(TAU, D, K=4, d_ret=1.0) == pytest.approx(1 / 2.0)
    # at the crossover both terms are equal; the tie counts as the bottleneck
    assert decode_bound(TAU, D, K=3, d_ret=1.0) == "bottleneck"


def test_a_slow_return_link_binds_even_above_the_open_loop_crossover():
    # open-loop M* = 1 + 5/2 = 3.5; with d_ret = 10, R = 15 > 4 * 2
    assert decode_period(TAU, D, K=4, d_ret=10.0) == 15.0
    assert decode_bound(TAU, D, K=4, d_ret=10.0) == "round_trip"


def test_blocking_uses_sigma_with_the_return_as_the_last_send():
    # sigma^cl = (1.5, 2.5, 1 + 1) ; K = 3: max(7.5, 6) = 7.5
    assert stage_hold(TAU, D, 1.0, "blocking").tolist() == [1.5, 2.5, 2.0]
    assert decode_period(TAU, D, K=3, d_ret=1.0, regime="blocking") == 7.5
    assert decode_period(TAU, D, K=2, d_ret=1.0, regime="blocking") == 6.0
    # partial overlap rho = 0.5: w = (1.25, 2.25, 1.5)
    assert decode_period(TAU, D, K=3, d_ret=1.0, regime="partial", rho=0.5) == 6.75


def test_simulator_matches_hand_cases():
    for K, ret, regime, want in [(2, 1.0, "async", 6.0), (4, 1.0, "async", 8.0), (4, 10.0, "async", 15.0),
                                 (3, 1.0, "blocking", 7.5)]:
        run = simulate_decode(TAU, D, K=K, d_ret=ret, rounds=40, regime=regime)
        assert run.period() == pytest.approx(want, rel=1e-12)
        assert run.tpot()[-1] == pytest.approx([want] * K, rel=1e-12)


def test_prefill_ttft_is_the_open_loop_makespan_at_M_chunks():
    assert prefill_ttft(TAU, D) == 5.0  # Thm 2 at M = 1
    assert prefill_ttft([0.5, 1.0, 0.5], [0.5, 0.5], chunks=2) == 1.0 + 3.0  # (C-1) tau_max + sum
    assert prefill_ttft([0.5, 1.0, 0.5], [0.5, 0.5], chunks=2, regime="blocking") == 1.5 + 3.0


@pytest.mark.parametrize("kwargs, match", [
    ({"K": 0}, r"in_flight K must be an integer >= 1 \(got 0\)"),
    ({"K": True}, r"in_flight K must be an integer >= 1"),
    ({"d_ret": -1.0}, r"d_ret must be a finite number of seconds >= 0 \(got -1.0\)"),
    ({"d_ret": math.inf}, r"d_ret must be a finite number"),
    ({"regime": "partial"}, r"regime 'partial' needs rho in \[0, 1\]"),
])
def test_bad_input(kwargs, match):
    with pytest.raises(InputError, match=match):
        decode_period(TAU, D, **{"K": 2, **kwargs})


def test_simulator_bad_input():
    with pytest.raises(InputError, match=r"rounds must be an integer >= 2 \(got 1\)"):
        simulate_decode(TAU, D, K=2, rounds=1)
    with pytest.raises(InputError, match=r"return_occupancy needs serial_links=True"):
        simulate_decode(TAU, D, K=2, return_occupancy=0.1)
    with pytest.raises(InputError, match=r"return_occupancy must be <= d_ret"):
        simulate_decode(TAU, D, K=2, d_ret=0.1, serial_links=True, return_occupancy=0.2)


# -- seeded property tests: simulator == closed form -------------------------------------------
def _draw(seed: int):
    rng = np.random.default_rng(seed)
    S = int(rng.integers(1, 6))
    K = int(rng.integers(1, 9))
    tau = rng.uniform(0.1, 3.0, S)
    d = rng.uniform(0.0, 2.0, S - 1) * rng.integers(0, 2, S - 1)  # some links free
    ret = float(rng.uniform(0.0, 4.0)) * int(rng.integers(0, 2))
    return tau, d, K, ret


@settings(max_examples=60, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), regime=st.sampled_from(["async", "blocking"]))
def test_simulated_period_equals_the_closed_form(seed, regime):
    tau, d, K, ret = _draw(seed)
    sim = decode_period_batch(tau[None], d[None], K, ret, rounds=200, regime=regime)[0]
    want = decode_period(tau, d, K, ret, regime=regime)
    assert abs(sim - want) <= 1e-9 * want


@settings(max_examples=30, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1))
def test_extensions_in_closed_loop(seed):
    tau, d, K, ret = _draw(seed)
    rng = np.random.default_rng(seed + 1)
    # partial overlap: the closed form with beta = 1 - rho
    rho = float(rng.uniform(0, 1))
    sim = simulate_decode(tau, d, K, ret, rounds=200, regime="partial", rho=rho).period()
    want = decode_period(tau, d, K, ret, regime="partial", rho=rho)
    assert abs(sim - want) <= 1e-9 * want
    # serial links (contention): each link adds its occupancy o_s as a self loop
    occ = d * rng.uniform(0, 1, d.size)
    o_ret = ret * float(rng.uniform(0, 1))
    sim = simulate_decode(tau, d, K, ret, rounds=200, serial_links=True, link_occupancy=occ,
                          return_occupancy=o_ret).period()
    want = decode_period(tau, d, K, ret, occupancy=np.append(occ, o_ret))
    assert abs(sim - want) <= 1e-9 * want
    # bounded buffers: K - 1 slots never bind (at most K jobs exist); fewer can only slow it down
    base = decode_period(tau, d, K, ret)
    if tau.size > 1:
        big = simulate_decode(tau, d, K, ret, rounds=200, buffer=K - 1).period()
        assert abs(big - base) <= 1e-9 * base
        small = simulate_decode(tau, d, K, ret, rounds=200, buffer=0).period()
        assert small >= base * (1 - 1e-9)
    # random stage times (jitter): the mean round is never shorter than the deterministic one
    # (the recurrence is a max of sums, convex in the times: Jensen), here with a 5 % margin
    run = simulate_decode(tau, d, K, ret, rounds=400, tau_sampler=("gamma", 0.3), seed=seed)
    assert run.period(window=300) >= base * 0.95
