"""The request-mix closed form (partitioner.analysis.chunked) against the event-driven simulator
of vLLM's scheduler (partitioner.simulate.chunked) on the first seeded instances of
benchmarks/mix_agreement.py: prefill-heavy saturated (a prompt step 3-12x a decode step on every
stage, up to 8 stages), prefill-heavy and decode-heavy at a request rate, and decode-heavy at a
concurrency. The benchmark prints more seeds."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
CASES = [("prefill", "saturated", 0), ("prefill", "saturated", 1), ("prefill", "rate", 0), ("prefill", "rate", 1),
         ("decode", "concurrency", 0), ("decode", "rate", 0)]
TOKENS_TOL = 0.05  # output and total tokens/s
LATENCY_TOL = 0.07  # TPOT and TTFT: the 5 % target is not met on every instance (README "Request mix")


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location("mix_agreement", ROOT / "benchmarks" / "mix_agreement.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize(("family", "load", "seed"), CASES, ids=[f"{f}-{m}-{s}" for f, m, s in CASES])
def test_closed_form_agrees_with_the_simulator(family: str, load: str, seed: int) -> None:
    (out, total, tpot, ttft), _, got = _bench().errors(seed, family, load)
    assert abs(out) <= TOKENS_TOL and abs(total) <= TOKENS_TOL, (out, total)
    assert abs(tpot) <= LATENCY_TOL and abs(ttft) <= LATENCY_TOL, (tpot, ttft)
    assert got.binding == {"saturated": "max_num_seqs", "rate": "rate", "concurrency": "concurrency"}[load]


def test_a_prompt_step_holds_the_pipeline() -> None:
    """Hand case: two stages of 10 ms each, prompts of 100 tokens at 1 ms a token on each stage (a prompt step is
    110 ms a stage), K = 2, one prompt in every 10th step on average. The step carrying a prompt
    comes back after its own route, 2 × 110 ms, whatever the steps around it do; P is at least
    the decode cycle 2 × 10 ms and the work bound 2 × (10 ms + 1 ms × E[X])."""
    import numpy as np

    from partitioner.analysis.chunked import EngineLimits, RequestMix, StepCost, histogram, steady_state
    from partitioner.analysis.circulation import circulation, step_tokens, tagged_trip

    X = step_tokens(0.1, np.array([100.0]), np.array([1.0]), 2048.0)
    assert X.mean == pytest.approx(10.0, rel=1e-3)  # 0.1 prompts a step of 100 tokens
    tau0, p = np.array([0.010, 0.010]), np.array([0.001, 0.001])
    P = circulation(2, tau0, p, 0.020, 0.002, X)
    assert P >= 2 * (0.010 + 0.001 * X.mean) - 1e-12 and P >= 0.020
    trip = tagged_trip(2, tau0, p, 0.020, 0.002, X, np.array([100.0]), 2048.0)[0]
    assert trip >= 0.220 - 1e-12  # its own route: two stages of 110 ms
    # no prompts: the closed-loop decode period max(K·τ_max, Στ)
    none = step_tokens(0.0, np.array([100.0]), np.array([1.0]), 2048.0)
    assert circulation(2, tau0, p, 0.020, 0.002, none) == pytest.approx(0.020)
    assert circulation(3, tau0, p, 0.020, 0.002, none) == pytest.approx(0.030)
    # and through steady_state: the decode-only case is the closed-loop period
    cost = StepCost((0.010, 0.010), (0.0, 0.0), (0.001, 0.001))
    got = steady_state(cost, RequestMix(histogram(0, "i"), histogram(50, "o")), EngineLimits(2, 8, 2048))
    assert got.tpot_s == pytest.approx(0.020)
