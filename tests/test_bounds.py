"""Lower bounds (algorithms.md §4): hand-computed values, and never above the optimum."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from dp_instances import small_tables
from hypothesis import given, settings
from hypothesis import strategies as st

from partitioner.errors import InfeasibleError
from partitioner.problem import CostTables, Problem
from partitioner.solvers import bounds, dp


def tables(cap: tuple[float, ...] = (10.0, 10.0), L: int = 4) -> CostTables:
    G = len(cap)
    return CostTables(
        cost=np.array([[1.0] * L, [2.0] * L] + [[4.0] * L] * (G - 2)),
        memory_gb=np.ones(L),
        cut_bytes=np.full(L, 8.0),
        capacity_gb=np.array(cap),
        latency_s=np.full((G, G), 0.5) - 0.5 * np.eye(G),
        bandwidth_Bps=np.full((G, G), 4.0),
        layer_names=tuple(f"l{i}" for i in range(L)),
        device_names=tuple(f"d{g}" for g in range(G)),
        gpu_names=tuple(f"t{g}" for g in range(G)),
        node_names=("n",) * G,
    )


def test_tau_floor_is_the_cheapest_worst_layer() -> None:
    assert bounds.tau_floor(tables()) == 1.0


def test_fluid_bound_by_hand() -> None:
    # Speeds 1 and 1/2 layer-per-second: W / sum s = 4 / 1.5 = 2.667 (optimum 3).
    assert bounds.fluid_bound(tables()) == pytest.approx(8 / 3)
    assert bounds.tau_bound(tables()) == pytest.approx(8 / 3)


def test_fluid_bound_respects_memory() -> None:
    # Fast device holds at most 2 layers: 2 * 1 on fast, 2 * 2 on slow -> B = 4 (the optimum).
    assert bounds.fluid_bound(tables(cap=(2.0, 10.0))) == pytest.approx(4.0)


def test_min_stages() -> None:
    assert bounds.min_stages(tables()) == 1
    assert bounds.min_stages(tables(cap=(2.0, 2.0, 1.0))) == 2
    assert bounds.min_stages(tables(cap=(1.0, 1.0, 1.0))) == 4  # G + 1: nothing fits


def test_min_delay_and_makespan_bound() -> None:
    # d_min = 0.5 + 8 / 4 = 2.5; memory needs 2 stages:
    # T >= 7 * tau_LB + max(tau_LB, W_LP) + 2.5 with tau_LB = 4 (LP with the 2 GB device) and
    # W_LP = 2 * 1 + 2 * 2 = 6 (the fast device holds only 2 layers) = 36.5, which is the optimum.
    t = tables(cap=(2.0, 3.0))
    assert bounds.min_delay(t) == 2.5
    p = Problem(t, M=8, objective="makespan")
    assert bounds.makespan_bound(p) == pytest.approx(7 * 4 + 6 + 2.5, rel=1e-8)
    assert bounds.min_work(t) == pytest.approx(6.0, rel=1e-8)
    assert bounds.lower_bound(p) <= dp.solve(p).objective[0]


@settings(max_examples=30)
@given(seed=st.integers(0, 2**31 - 1), M=st.sampled_from([1, 4, 32]))
def test_bounds_never_exceed_the_optimum(seed: int, M: int) -> None:
    t = small_tables(seed)
    for objective, regime in itertools.product(("balanced", "throughput", "makespan"), ("async", "blocking")):
        p = Problem(t, M=M, objective=objective, regime=regime)
        try:
            best = dp.solve(p).objective[0]
        except InfeasibleError:
            continue
        assert bounds.lower_bound(p) <= best * (1 + 1e-9) + 1e-12
        assert bounds.tau_floor(t) <= bounds.tau_bound(t) * (1 + 1e-9) + 1e-12


def test_lower_bound_stays_finite_when_nothing_fits() -> None:
    # 4 GB of layers, 2 GB in all: no plan fits; the memory-free bound is W / sum s = 8/3.
    p = Problem(tables(cap=(1.0, 1.0)))
    assert bounds.lower_bound(p) == pytest.approx(8 / 3)
    with pytest.raises(InfeasibleError):
        dp.solve(p)
    assert bounds.lower_bound(Problem(tables(cap=(2.0, 10.0))), memory=False) == pytest.approx(8 / 3)
