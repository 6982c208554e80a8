"""CP-SAT on near ties at large M: "optimal" must mean optimal within 1e-9 relative.

The issue's reproducer: two layers, two devices with 1 GB each (one layer per device), costs
layer0 = {d0: 3.999999992, d1: 1.0}, layer1 = {d0: 4.0, d1: 3.0}. d0 -> d1 has tau_max
3.999999992, d1 -> d0 has 4.0: 2e-9 relative apart, which ticks sized for T(M = 10^4) once
could not tell apart.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from partitioner.errors import InfeasibleError
from partitioner.problem import CostTables, Problem, lex_compare
from partitioner.solvers import brute, cpsat, solve


def near_tie(eps: float = 8e-9) -> CostTables:
    return CostTables(
        cost=np.array([[4.0 - eps, 4.0], [1.0, 3.0]]),
        memory_gb=np.array([0.6, 0.6]),
        cut_bytes=np.zeros(2),
        capacity_gb=np.array([1.0, 1.0]),
        latency_s=np.zeros((2, 2)),
        bandwidth_Bps=np.full((2, 2), np.inf),
        layer_names=("l0", "l1"),
        device_names=("d0", "d1"),
        gpu_names=("L4", "L4"),
        node_names=("n", "n"),
    )


@pytest.mark.parametrize("use_dp", [True, False])
@pytest.mark.parametrize("M", [10_000, 10**6])
def test_issue_reproducer_comes_out_right(use_dp: bool, M: int) -> None:
    p = Problem(near_tie(), M=M)
    got = cpsat.solve(p, use_dp=use_dp)
    assert got.devices == (0, 1) and got.objective[0] == 4.0 - 8e-9
    assert got.lower_bound <= got.objective[0]


def _tables(seed: int) -> CostTables:
    r = np.random.default_rng(seed)
    G, L = int(r.integers(2, 4)), int(r.integers(2, 5))
    base = r.integers(1, 4, (G, L)).astype(float)
    cost = base * (1 + r.choice([0.0, 1e-8, -1e-8, 2e-9], (G, L)))  # near ties everywhere
    memory = np.full(L, 0.6)
    return CostTables(
        cost=cost, memory_gb=memory, cut_bytes=r.uniform(0, 1, L), capacity_gb=r.choice([0.7, 1.3, 2.0], G),
        latency_s=r.choice([0.0, 1e-9], (G, G)), bandwidth_Bps=np.full((G, G), np.inf),
        layer_names=tuple(f"l{i}" for i in range(L)), device_names=tuple(f"d{g}" for g in range(G)),
        gpu_names=("g",) * G, node_names=("n",) * G,
    )


@pytest.mark.parametrize("seed", range(6))
def test_optimal_claims_hold_on_near_ties_at_large_M(seed: int) -> None:
    t = _tables(seed)
    for objective, regime in itertools.product(("balanced", "throughput", "makespan"), ("async", "blocking")):
        p = Problem(t, M=5000, objective=objective, regime=regime)  # type: ignore[arg-type]
        try:
            want = brute.solve(p)
        except InfeasibleError:
            continue
        for got in (cpsat.solve(p, use_dp=False), solve(p, "auto")):
            assert got.lower_bound <= want.objective[0] * (1 + 1e-12)
            assert lex_compare(got.objective, want.objective) >= 0  # never better than the optimum
            if got.optimal:
                assert lex_compare(got.objective, want.objective) == 0, (objective, regime, got, want)
