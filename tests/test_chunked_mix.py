"""Request mix under chunked prefill: the closed form (partitioner.analysis.chunked) against the
event-driven simulator of vLLM V1's scheduler (partitioner.simulate.chunked), hand cases, the
decode-only special case, and the serving/score wiring."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from partitioner.analysis.chunked import EngineLimits, RequestMix, StepCost, histogram, steady_state
from partitioner.errors import InputError
from partitioner.simulate.chunked import simulate_mix

ONE = StepCost((0.010,), (0.0,), (1e-5,))  # one stage: 10 ms a step plus 10 us per prefill token


def _instance(rng: np.random.Generator) -> tuple[StepCost, RequestMix, EngineLimits]:
    """An engine-like case: K = S (vLLM V1 without async scheduling), B = 16..40 per micro-batch,
    vLLM's token budgets, prompts 128..1500 and outputs 32..160 tokens, each spread +-50 %."""
    S = int(rng.integers(1, 5))
    cost = StepCost(tuple(rng.uniform(5e-3, 15e-3, S)), tuple(rng.uniform(0, 5e-5, S)), tuple(rng.uniform(2e-6, 1.5e-5, S)),
                    tuple(rng.uniform(0, 1e-3, S - 1)), tuple(rng.uniform(0, 1e-7, S - 1)), float(rng.uniform(0, 1e-3)))
    n_in, n_out = int(rng.integers(128, 1500)), int(rng.integers(32, 160))
    mix = RequestMix(histogram({int(x): 1.0 for x in np.linspace(n_in // 2, n_in * 3 // 2, 9)}, "input_tokens"),
                     histogram({int(x): 1.0 for x in np.linspace(n_out // 2, n_out * 3 // 2, 17)}, "output_tokens"))
    return cost, mix, EngineLimits(S, int(rng.integers(16, 40)) * S, int(rng.choice([2048, 8192])))


CASES = [(seed, mode) for seed in range(3) for mode in ("concurrency", "saturated", "rate")]
REQUESTS = 4000  # enough for the window means (TTFT the noisiest) to settle within about 2 %


@pytest.mark.parametrize(("seed", "mode"), CASES, ids=[f"{s}-{m}" for s, m in CASES])
def test_closed_form_agrees_with_the_simulator(seed: int, mode: str) -> None:
    """tokens/s, TPOT (vLLM's benchmark definition) and TTFT within 5 % of the simulation. At a
    rate, the closed form is taken at the simulation's realised arrival rate (Poisson noise of
    the sample is not the model's error)."""
    rng = np.random.default_rng(1000 + seed)
    cost, mix, lim = _instance(rng)
    if mode == "concurrency":
        mix = replace(mix, concurrency=int(lim.max_num_seqs * rng.uniform(0.3, 0.9)))
    elif mode == "rate":
        mix = replace(mix, request_rate=steady_state(cost, mix, lim).requests_per_s * rng.uniform(0.2, 0.5))
    sim = simulate_mix(cost, mix, lim, requests=REQUESTS, seed=seed)
    got = steady_state(cost, replace(mix, request_rate=sim.offered_per_s) if mode == "rate" else mix, lim)
    assert got.output_tokens_per_s == pytest.approx(sim.output_tokens_per_s, rel=0.05)
    assert got.total_tokens_per_s == pytest.approx(sim.total_tokens_per_s, rel=0.05)
    assert got.tpot_s == pytest.approx(sim.tpot_s, rel=0.05)
    assert got.ttft_s == pytest.approx(sim.ttft_s, rel=0.05)


def test_decode_only_is_the_closed_loop_decode_period() -> None:
    """Zero prompt load: TPOT is P = max(K·τ_max, Στ + Σd + d_ret) and tokens/s = K·B / P."""
    from partitioner.analysis.closed_loop import decode_period

    cost = StepCost((0.004, 0.006, 0.005), (0.0,) * 3, (1e-5,) * 3, (0.001, 0.002), (0.0, 0.0), 0.0005)
    mix = RequestMix(histogram(0, "input_tokens"), histogram(200, "output_tokens"))
    for K in (1, 3, 5):
        got = steady_state(cost, mix, EngineLimits(K, 8 * K, 2048))
        P = decode_period([0.004, 0.006, 0.005], [0.001, 0.002], K, 0.0005)
        assert got.tpot_s == pytest.approx(P)
        # every slot makes a token per cycle; with no prompt the first token is the first cycle's
        assert got.output_tokens_per_s == pytest.approx(8 * K / P)
        assert got.binding == "max_num_seqs" and got.prefill_tokens_per_step == 0.0


def test_by_hand_budget_bound_and_prefill_sharing() -> None:
    """One stage, 10 ms a step + 10 us per prefill token, prompts 1000, outputs 101, 400 slots.
    Each request holds a slot ~101 cycles, so ~4 would start per step, 4·1100 tokens: more than
    the budget of 2048. The budget binds: r = 2048/1100 requests start per step, every step is
    full, P = 10 ms + 1e-5·1000·r and tokens/s = 101·r / P."""
    lim = EngineLimits(1, 400, 2048)
    mix = RequestMix(histogram(1000, "input_tokens"), histogram(101, "output_tokens"))
    got = steady_state(ONE, mix, lim)
    r = 2048 / 1100
    P = 0.010 + 1e-5 * r * 1000
    assert got.binding == "token_budget"
    assert got.decode_tokens_per_step + got.prefill_tokens_per_step == pytest.approx(2048)
    assert got.tpot_s == pytest.approx(P) and got.output_tokens_per_s == pytest.approx(101 * r / P)
    assert got.total_tokens_per_s == pytest.approx(1101 * r / P)
    # a larger budget lifts the limit: the slots bind and prefill costs less per output token
    roomy = steady_state(ONE, mix, EngineLimits(1, 400, 1 << 20))
    assert roomy.binding == "max_num_seqs" and roomy.output_tokens_per_s > got.output_tokens_per_s


def test_prefill_lowers_tokens_per_second_and_raises_tpot() -> None:
    rng = np.random.default_rng(5)
    for _ in range(20):
        cost, mix, lim = _instance(rng)
        dec = steady_state(cost, replace(mix, input_tokens=histogram(0, "input_tokens")), lim)
        got = steady_state(cost, mix, lim)
        assert got.output_tokens_per_s <= dec.output_tokens_per_s * (1 + 1e-12)
        assert got.tpot_s >= dec.tpot_s * (1 - 1e-12)


def test_overloaded_rate_and_errors() -> None:
    mix = RequestMix(histogram({500: 1, 1500: 1}, "input_tokens"), histogram(100, "output_tokens"))
    lim = EngineLimits(1, 16, 2048)
    cap = steady_state(ONE, mix, lim)
    over = steady_state(ONE, replace(mix, request_rate=cap.requests_per_s * 3), lim)
    assert over.binding == "overloaded" and over.ttft_s == float("inf")
    assert over.output_tokens_per_s == pytest.approx(cap.output_tokens_per_s)
    under = steady_state(ONE, replace(mix, request_rate=cap.requests_per_s * 0.3), lim)
    assert under.binding == "rate" and under.output_tokens_per_s == pytest.approx(cap.requests_per_s * 0.3 * 100)
    assert histogram({500: 1, 1500: 3}, "x") == ((500, 0.25), (1500, 0.75))
    with pytest.raises(InputError, match="input_tokens: needs tokens >= 0"):
        histogram({-1: 1.0}, "input_tokens")
    with pytest.raises(InputError, match="output_tokens must average >= 1"):
        steady_state(ONE, RequestMix(histogram(10, "i"), histogram(0, "o")), lim)
    with pytest.raises(InputError, match="engine limits must be >= 1"):
        steady_state(ONE, mix, EngineLimits(0, 16, 2048))
    with pytest.raises(InputError, match="request_rate must be > 0"):
        steady_state(ONE, replace(mix, request_rate=0.0), lim)
    with pytest.raises(InputError, match="one entry per stage"):
        StepCost((0.01, 0.02), (0.0,), (0.0, 0.0))
    with pytest.raises(InputError, match="input_tokens needs >= 1"):
        simulate_mix(ONE, RequestMix(histogram(0, "i"), histogram(5, "o")), lim, requests=10)
