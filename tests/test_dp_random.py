"""dp == brute on seeded random small instances, for every objective x regime x order."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from dp_instances import small_tables
from hypothesis import given, settings
from hypothesis import strategies as st

from partitioner.errors import InfeasibleError
from partitioner.problem import OBJECTIVES, ORDERS, REGIMES, Problem, evaluate, lex_compare, objective_key
from partitioner.solvers import brute, dp

COMBOS = list(itertools.product(OBJECTIVES, REGIMES, ORDERS))


def check(problem: Problem) -> None:
    try:
        want = brute.solve(problem)
    except InfeasibleError:
        with pytest.raises(InfeasibleError):
            dp.solve(problem)
        return
    got = dp.solve(problem)
    assert lex_compare(got.objective, want.objective) == 0, (problem.objective, got, want)
    metrics = evaluate(problem, got.devices, got.cuts)  # also checks order, contiguity, distinctness
    assert metrics.fits
    assert got.objective == objective_key(problem, metrics)
    assert got.optimal and got.lower_bound == got.objective[0]


@settings(max_examples=40)
@given(seed=st.integers(0, 2**31 - 1), M=st.sampled_from([1, 2, 5, 16]))
def test_dp_matches_brute_everywhere(seed: int, M: int) -> None:
    tables = small_tables(seed)
    for objective, regime, order in COMBOS:
        check(Problem(tables, M=M, objective=objective, regime=regime, order=order))


@pytest.mark.parametrize("seed", range(8))
def test_dp_matches_brute_on_four_devices_seven_layers(seed: int) -> None:
    tables = small_tables(10_000 + seed, G=4, L=7)
    for objective, regime, order in COMBOS:
        check(Problem(tables, M=3, objective=objective, regime=regime, order=order))


@settings(max_examples=15)
@given(seed=st.integers(0, 2**31 - 1))
def test_fixed_order_never_beats_free_order(seed: int) -> None:
    tables = small_tables(seed)
    for objective, regime in itertools.product(OBJECTIVES, REGIMES):
        try:
            fixed = dp.solve(Problem(tables, objective=objective, regime=regime, order="fixed"))
        except InfeasibleError:
            continue
        free = dp.solve(Problem(tables, objective=objective, regime=regime, order="free"))
        assert lex_compare(free.objective, fixed.objective) <= 0
        assert np.all(np.diff(fixed.devices) > 0)
