"""Beyond the paper (theory.md §10 (i), (ii), (v); Errors 3): serial links, buffers, random times, partial overlap."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from partitioner import analysis as A
from partitioner.errors import InputError
from partitioner.simulate import named_sampler, simulate


@st.composite
def chains(draw: st.DrawFn, min_S: int = 2) -> tuple[list[float], list[float], int]:
    S = draw(st.integers(min_S, 5))
    tau = draw(st.lists(st.floats(0.01, 10), min_size=S, max_size=S))
    d = draw(st.lists(st.floats(0.0, 20), min_size=S - 1, max_size=S - 1))
    return tau, d, draw(st.integers(1, 30))


# --- (a) serial links --------------------------------------------------------------------

def test_serial_link_hand_case() -> None:
    # tau = [1, 1], d = [3]: the link is the bottleneck station: 1 + 3 + 1 + (M-1) * 3
    s = simulate([1, 1], [3], 4, serial_links=True)
    np.testing.assert_allclose(s.send_start[:, 0], [1, 4, 7, 10])
    assert s.makespan == 14 > A.makespan_async([1, 1], [3], 4) == 8


@settings(max_examples=60)
@given(chains())
def test_serial_links_are_stations(chain: tuple[list[float], list[float], int]) -> None:
    # links become stations of service d_s: Thm 1 on the chain tau_0, d_0, tau_1, ... gives
    # sum tau + sum d + (M-1) max(tau_max, d_max), the "(M-1) d_max-scale term" of §10(i)
    tau, d, M = chain
    want = A.first_latency(tau, d) + (M - 1) * max(max(tau), max(d))
    got = simulate(tau, d, M, serial_links=True).makespan
    assert got == pytest.approx(want, rel=1e-9)
    assert got >= A.makespan_async(tau, d, M) * (1 - 1e-12)
    # blocking: the stage already sends one transfer at a time, so Thm 3 is unchanged
    blk = simulate(tau, d, M, "blocking", serial_links=True).makespan
    assert blk == pytest.approx(A.makespan_blocking(tau, d, M), rel=1e-9)


@settings(max_examples=40)
@given(chains(), st.floats(0, 1))
def test_link_occupancy_splits_latency_and_busy_time(chain: tuple, share: float) -> None:
    tau, d, M = chain
    occ = [share * x for x in d]
    want = A.first_latency(tau, d) + (M - 1) * max(max(tau), max(occ))
    got = simulate(tau, d, M, serial_links=True, link_occupancy=occ).makespan
    assert got == pytest.approx(want, rel=1e-9)


# --- (b) bounded buffers -----------------------------------------------------------------

def test_buffer_zero_hand_case() -> None:
    # tau = [1, 1], d = [5], K = 0: micro-batch m leaves stage 0 only once m-1 left stage 1
    s = simulate([1, 1], [5], 3, buffer=0)
    np.testing.assert_allclose(s.release[:, 0], [1, 7, 13])  # held after service
    np.testing.assert_allclose(s.finish[:, 1], [7, 13, 19])
    assert s.makespan == 19 == A.makespan_blocking([1, 1], [5], 3) > A.makespan_async([1, 1], [5], 3)
    assert [e.kind for e in s.events()].count("hold") == 2


@settings(max_examples=60)
@given(chains(), st.integers(0, 4), st.sampled_from(["async", "blocking"]))
def test_buffers_never_beat_unbounded(chain: tuple, K: int, regime: str) -> None:
    tau, d, M = chain
    free = simulate(tau, d, M, regime).makespan
    small = simulate(tau, d, M, regime, buffer=K).makespan
    larger = simulate(tau, d, M, regime, buffer=[K + 1] * (len(tau) - 1)).makespan
    assert small >= larger * (1 - 1e-12) and larger >= free * (1 - 1e-12)
    assert small >= A.makespan_async(tau, d, M) * (1 - 1e-12)  # never below Thm 2
    huge = simulate(tau, d, M, regime, buffer=M).makespan  # K >= M - 1: no constraint (A2)
    assert huge == pytest.approx(free, rel=1e-12)


@settings(max_examples=40)
@given(chains(), st.integers(0, 3))
def test_serial_links_and_buffers_together_never_below_thm2(chain: tuple, K: int) -> None:
    tau, d, M = chain
    got = simulate(tau, d, M, serial_links=True, buffer=K).makespan
    assert got >= A.makespan_async(tau, d, M) * (1 - 1e-12)


# --- (c) random stage times --------------------------------------------------------------

def test_sampler_is_seeded_and_reproducible() -> None:
    a = simulate([1, 2, 3], [0.1, 0.1], 50, tau_sampler=("lognormal", 0.5), seed=7)
    b = simulate([1, 2, 3], [0.1, 0.1], 50, tau_sampler=("lognormal", 0.5), seed=7)
    c = simulate([1, 2, 3], [0.1, 0.1], 50, tau_sampler=("lognormal", 0.5), seed=8)
    np.testing.assert_array_equal(a.tau, b.tau)
    assert a.makespan == b.makespan != c.makespan
    np.testing.assert_allclose(a.finish - a.start, a.tau)


@pytest.mark.parametrize(("kind", "cv"), [("lognormal", 0.3), ("gamma", 0.5), ("exponential", None)])
def test_named_laws_have_mean_tau_and_cv(kind: str, cv: float | None) -> None:
    tau = np.array([0.5, 2.0, 0.0])
    x = named_sampler(kind, cv, tau, 40_000)(np.random.default_rng(1))
    assert x.shape == (40_000, 3) and (x[:, 2] == 0).all()
    np.testing.assert_allclose(x[:, :2].mean(axis=0), tau[:2], rtol=0.03)
    np.testing.assert_allclose(x[:, :2].std(axis=0) / tau[:2], cv or 1.0, rtol=0.06)


def test_callable_sampler_with_constant_rows_matches_deterministic() -> None:
    tau, d = [0.5, 1, 1, 5], [4.6, 0.1, 0.1]
    s = simulate(tau, d, 8, "blocking", tau_sampler=lambda rng: np.tile(tau, (8, 1)), seed=0)
    assert s.makespan == pytest.approx(48.0)


# --- (d) partial overlap -----------------------------------------------------------------

@settings(max_examples=40)
@given(chains(), st.floats(0, 1))
def test_partial_overlap_slope_and_limits(chain: tuple, rho: float) -> None:
    # Errors 3: per-transfer overlap rho gives the blocking form with sigma_s = tau_s + (1-rho) d_s
    # for the slope; rho = 1 is async (Thm 2), rho = 0 is blocking (Thm 3)
    tau, d, M = chain
    got = simulate(tau, d, M, "partial", rho=rho).makespan
    assert A.makespan_async(tau, d, M) * (1 - 1e-12) <= got <= A.makespan_blocking(tau, d, M) * (1 + 1e-12)
    slope = max(max(tau), max(t + (1 - rho) * x for t, x in zip(tau, d)))
    nxt = simulate(tau, d, M + 1, "partial", rho=rho).makespan
    assert nxt - got == pytest.approx(slope, rel=1e-9, abs=1e-9)
    assert simulate(tau, d, M, "partial", rho=1.0).makespan == pytest.approx(A.makespan_async(tau, d, M))
    assert simulate(tau, d, M, "partial", rho=0.0).makespan == pytest.approx(A.makespan_blocking(tau, d, M))


# --- error paths ---------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"buffer": -1}, r"integers >= 0 or None \(got -1\)"),
        ({"buffer": [1]}, r"S-1 = 2 capacities \(got \[1\]\)"),
        ({"buffer": [1, 1.5]}, r"got 1.5"),
        ({"link_occupancy": [0.1, 0.1]}, r"needs serial_links=True"),
        ({"serial_links": True, "link_occupancy": [0.1, 0.5]}, r"\[0, d_s\] \(got 0.5 with d_s = 0.2\)"),
        ({"serial_links": True, "link_occupancy": [0.1]}, r"shape of d \(2,\) \(got \(1,\)\)"),
        ({"tau_sampler": ("weibull", 0.3)}, r"unknown distribution 'weibull'"),
        ({"tau_sampler": ("lognormal", 0)}, r"cv must be a finite number > 0 \(got 0\)"),
        ({"tau_sampler": ("exponential", 0.5)}, r"cv = 1 \(got cv=0.5\)"),
        ({"tau_sampler": 3}, r"callable or \(name, cv\) \(got 3\)"),
        ({"tau_sampler": lambda rng: np.ones((3, 3))}, r"shape \(M, S\) = \(2, 3\) \(got \(3, 3\)\)"),
        ({"tau_sampler": lambda rng: -np.ones((2, 3))}, r"negative or non-finite time \(got -1.0\)"),
        ({"tau_sampler": ("gamma", 1.0), "seed": "x"}, r"seed must be an integer or None \(got 'x'\)"),
    ],
)
def test_extended_bad_input(kwargs: dict, match: str) -> None:
    with pytest.raises(InputError, match=match):
        simulate([1, 2, 3], [0.1, 0.2], 2, **kwargs)
