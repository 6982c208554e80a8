"""Validation (issue 6): rho is recovered exactly from makespans the simulator produces.

Makespans come from `partitioner.simulate.simulate(..., regime="partial", rho=p)`, where a fraction
p of EACH transfer overlaps compute (Cor 5's meaning; Errors 3). For every configuration:
- the fit is exact: k = per_transfer_slope(tau, d, p) (the simulated slope), b = sum tau + sum d,
  zero residuals, every point inside the sandwich of Cor 5;
- the fitted rho equals §9's (sigma_max - k)/(sigma_max - tau_max);
- rho == p when the bottleneck stage's own link is the only binding one;
- the recovered per-transfer p equals the simulator's p whenever k > tau_max (else p >= p_min).
Also: makespans from §9's T_real(rho) (`analysis.makespan_real`) round-trip to rho.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from partitioner.analysis import binding_links, effective_slope, first_latency, makespan_real, sigma_max
from partitioner.analysis.overlap import per_transfer_slope
from partitioner.calibrate.overlap import RTOL, fit_overlap
from partitioner.simulate import simulate

TIME = st.floats(0.1, 10.0, allow_nan=False, allow_infinity=False)
LINK = st.one_of(st.just(0.0), st.floats(0.05, 20.0, allow_nan=False, allow_infinity=False))
FRACTION = st.one_of(st.sampled_from([0.0, 0.5, 1.0]), st.floats(0.0, 1.0, allow_nan=False))
MS = st.lists(st.integers(1, 40), min_size=2, max_size=4).filter(lambda ms: len(set(ms)) >= 2)


@st.composite
def configs(draw: st.DrawFn) -> tuple[list[float], list[float], float, list[int]]:
    S = draw(st.integers(2, 5))
    tau = draw(st.lists(TIME, min_size=S, max_size=S))
    d = draw(st.lists(LINK, min_size=S - 1, max_size=S - 1))
    return tau, d, draw(FRACTION), draw(MS)


@st.composite
def own_link_configs(draw: st.DrawFn) -> tuple[list[float], list[float], float, list[int]]:
    """The bottleneck j < S-1 sends over a link d_j > 0; every other link stays below its slack."""
    S = draw(st.integers(2, 5))
    tau = draw(st.lists(TIME, min_size=S, max_size=S))
    j = draw(st.integers(0, S - 2))
    tau[j] = max(tau) + draw(st.floats(0.01, 2.0))
    d = [draw(st.floats(0.0, 0.99)) * (tau[j] - tau[s]) for s in range(S - 1)]
    d[j] = draw(st.floats(0.05, 20.0))
    return tau, d, draw(FRACTION), draw(MS)


def _simulated(tau: list[float], d: list[float], p: float, Ms: list[int]) -> list[float]:
    return [simulate(tau, d, M, "partial", rho=p).makespan for M in Ms]


@settings(max_examples=80)
@given(configs())
def test_fit_of_simulated_partial_overlap_is_exact(cfg: tuple) -> None:
    tau, d, p, Ms = cfg
    fit = fit_overlap(tau, d, Ms, _simulated(tau, d, p, Ms))
    k_sim = per_transfer_slope(tau, d, p)
    scale = max(fit.points[-1].T, 1.0)
    assert fit.k == pytest.approx(k_sim, rel=1e-9, abs=1e-12 * scale)
    assert fit.b == pytest.approx(first_latency(tau, d), rel=1e-9, abs=1e-11 * scale)
    assert all(abs(pt.residual) <= 1e-10 * scale for pt in fit.points)
    assert all(pt.inside for pt in fit.points) and fit.slope_in_range and fit.warnings == ()
    assert fit.r2 is None or fit.r2 == pytest.approx(1.0, abs=1e-9)
    s_max, t_max = sigma_max(tau, d), max(tau)
    if fit.rho is None:
        assert s_max - t_max <= 1e-12 * s_max and fit.recoverable == 0.0
        return
    # §9's formula, compared without dividing by a possibly tiny spread sigma_max - tau_max
    assert fit.rho * (s_max - t_max) == pytest.approx(s_max - k_sim, abs=1e-9 * s_max)
    assert fit.recoverable * t_max == pytest.approx(k_sim - t_max, abs=1e-9 * s_max)  # = k/tau_max - 1
    j = int(np.argmax(tau))
    if binding_links(tau, d) == (j,):  # the bottleneck's own link is the only binding one
        assert fit.rho == pytest.approx(p, abs=1e-9 * s_max / d[j])


@settings(max_examples=80)
@given(configs())
def test_per_transfer_p_recovered_whenever_k_exceeds_tau_max(cfg: tuple) -> None:
    tau, d, p, Ms = cfg
    fit = fit_overlap(tau, d, Ms, _simulated(tau, d, p, Ms))
    live = [x for x in d if x > 0]
    if not live:
        assert fit.p is None and fit.p_min is None
        return
    k_sim, t_max = per_transfer_slope(tau, d, p), max(tau)
    if k_sim > t_max * (1 + 2 * RTOL):
        assert fit.p is not None and fit.p == pytest.approx(p, abs=1e-9 * k_sim / min(live))
    if fit.p is None:  # k == tau_max: only a lower bound, which the true p respects
        assert fit.p_min is not None and p >= fit.p_min - 2 * RTOL * t_max / min(live) - 1e-12
        assert per_transfer_slope(tau, d, fit.p_min) == pytest.approx(t_max, rel=2 * RTOL)


@settings(max_examples=60)
@given(own_link_configs())
def test_rho_equals_p_when_only_the_bottleneck_link_binds(cfg: tuple) -> None:
    tau, d, p, Ms = cfg
    j = int(np.argmax(tau))
    assert binding_links(tau, d) == (j,)
    fit = fit_overlap(tau, d, Ms, _simulated(tau, d, p, Ms))
    assert fit.rho is not None and fit.rho == pytest.approx(p, abs=1e-9 * sigma_max(tau, d) / d[j])
    if per_transfer_slope(tau, d, p) > max(tau) * (1 + 2 * RTOL):  # k = tau_max + (1-p) d_j
        assert fit.p == pytest.approx(p, abs=1e-9 * sigma_max(tau, d) / d[j])  # identified, = rho


@settings(max_examples=60)
@given(configs(), st.floats(0.0, 1.0))
def test_T_real_round_trips(cfg: tuple, rho: float) -> None:
    tau, d, _, Ms = cfg
    if sigma_max(tau, d) - max(tau) < 1e-3:
        d = [x + 1.0 for x in d]  # make a link bind so that rho is defined
        d[int(np.argmax(tau[:-1]))] += max(tau)
    Ts = [makespan_real(tau, d, M, rho) for M in Ms]
    fit = fit_overlap(tau, d, Ms, Ts)
    assert fit.rho == pytest.approx(rho, abs=1e-9)
    assert fit.k == pytest.approx(effective_slope(tau, d, rho), rel=1e-9)
    assert fit.b == pytest.approx(first_latency(tau, d), rel=1e-9)
    assert all(pt.inside for pt in fit.points)


@pytest.mark.parametrize("regime", ["async", "blocking"])
def test_async_and_blocking_are_the_ends(regime: str) -> None:
    tau, d = [0.5, 1, 1, 5], [4.6, 0.1, 0.1]  # Table 2 row 8
    Ts = [simulate(tau, d, M, regime).makespan for M in (1, 8, 100)]
    fit = fit_overlap(tau, d, [1, 8, 100], Ts)
    assert fit.rho == pytest.approx(1.0 if regime == "async" else 0.0, abs=1e-9)
    assert Ts[1:] == pytest.approx([47.3, 507.3] if regime == "async" else [48.0, 517.2])


def test_errors3_example_from_the_simulator() -> None:
    # theory.md Errors 3: tau = [4, 5], d = [2], 50 % of each transfer overlapped -> slope 5.0, rho = 1.0
    Ms = [1, 2, 10]
    Ts = _simulated([4, 5], [2], 0.5, Ms)
    assert Ts == pytest.approx([11.0, 16.0, 56.0])
    fit = fit_overlap([4, 5], [2], Ms, Ts)
    assert fit.rho == pytest.approx(1.0) and fit.p is None and fit.p_min == pytest.approx(0.5)
    # at 25 % link 0->1 limits the slope: slope 4 + 0.75*2 = 5.5, p identified
    fit = fit_overlap([4, 5], [2], Ms, _simulated([4, 5], [2], 0.25, Ms))
    assert fit.k == pytest.approx(5.5) and fit.p == pytest.approx(0.25) and fit.rho == pytest.approx(0.5)
