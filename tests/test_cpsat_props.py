"""cpsat == brute on seeded random small instances, for every objective x regime x order.

Instances (G <= 4, L <= 6): unrelated random costs (floats, or small integers so exact ties
between different sums are common), a pair of interchangeable devices, random asymmetric
links, capacities that bind, sometimes tied embeddings. The DP hint is switched off for the
main property so CP-SAT is checked on its own; a second property runs with hints.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from partitioner.errors import InfeasibleError
from partitioner.problem import CostTables, Problem, evaluate, lex_compare, objective_key
from partitioner.solvers import brute, cpsat

COMBOS = list(itertools.product(("balanced", "throughput", "makespan"), ("async", "blocking"), ("free", "fixed")))


def random_tables(seed: int, G: int, L: int, integer: bool, twins: bool, tied: bool) -> CostTables:
    r = np.random.default_rng(seed)
    cost = r.integers(1, 5, (G, L)).astype(float) if integer else r.uniform(0.1, 3.0, (G, L))
    memory = r.uniform(0.5, 3.0, L)
    capacity = r.uniform(0.25, 0.9, G) * memory.sum()
    latency = r.uniform(0.0, 0.4, (G, G))
    bandwidth = r.choice([1.0, 2.0, 4.0, np.inf], (G, G))
    if twins and G >= 2:  # devices 0 and 1 interchangeable: same row, capacity, symmetric links
        cost[1], capacity[1] = cost[0], capacity[0]
        for a in (latency, bandwidth):
            a[1, :], a[:, 1] = a[0, :], a[:, 0]
            a[0, 1] = a[1, 0]
    return CostTables(
        cost=cost,
        memory_gb=memory,
        cut_bytes=r.uniform(0.0, 2.0, L),
        capacity_gb=capacity,
        latency_s=latency,
        bandwidth_Bps=bandwidth,
        layer_names=tuple(f"l{i}" for i in range(L)),
        device_names=tuple(f"d{g}" for g in range(G)),
        gpu_names=("gpu",) * G,
        node_names=("node",) * G,
        tied_gb=float(memory[0] * 0.5) if tied else 0.0,
    )


instances = st.builds(
    random_tables,
    seed=st.integers(0, 2**32 - 1),
    G=st.integers(1, 4),
    L=st.integers(1, 6),
    integer=st.booleans(),
    twins=st.booleans(),
    tied=st.booleans(),
)


def check_against_brute(t: CostTables, M: int) -> None:
    for objective, regime, order in COMBOS:
        p = Problem(t, M=M, regime=regime, objective=objective, order=order)  # type: ignore[arg-type]
        try:
            want = brute.solve(p)
        except InfeasibleError:
            with pytest.raises(InfeasibleError):
                cpsat.solve(p)
            continue
        got = cpsat.solve(p)
        metrics = evaluate(p, got.devices, got.cuts)  # structure + order checked here
        assert metrics.fits
        assert got.objective == objective_key(p, metrics)
        assert lex_compare(got.objective, want.objective) == 0, (objective, regime, order, got, want)
        assert got.optimal and got.status == "OPTIMAL"
        assert got.lower_bound <= got.objective[0]
        assert lex_compare((got.lower_bound,), (want.objective[0],), rtol=1e-6) == 0  # bound minus rounding slack


@settings(max_examples=30, derandomize=True, deadline=None)
@given(t=instances, M=st.integers(1, 6))
def test_cpsat_equals_brute_without_hints(t: CostTables, M: int) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cpsat, "_dp_plan", lambda problem, budget=None: None)  # also: use_dp=False
        check_against_brute(t, M)


@settings(max_examples=8, derandomize=True, deadline=None)
@given(t=instances, M=st.integers(1, 6))
def test_cpsat_equals_brute_with_default_hints(t: CostTables, M: int) -> None:
    check_against_brute(t, M)


@settings(max_examples=10, derandomize=True, deadline=None)
@given(t=instances, M=st.integers(1, 4), pick=st.integers(0, 10**6))
def test_any_feasible_hint_keeps_the_optimum(t: CostTables, M: int, pick: int) -> None:
    p = Problem(t, M=M)
    try:
        want = brute.solve(p)
    except InfeasibleError:
        return
    # hint with a random valid (possibly poor) plan: the optimum must not change
    r = np.random.default_rng(pick)
    for _ in range(20):
        S = int(r.integers(1, min(p.G, p.L) + 1))
        devices = tuple(int(g) for g in r.permutation(p.G)[:S])
        cuts = (0, *sorted(int(c) for c in r.choice(np.arange(1, p.L), S - 1, replace=False)), p.L)
        if evaluate(p, devices, cuts).fits:
            got = cpsat.solve(p, hint=(devices, cuts))
            assert lex_compare(got.objective, want.objective) == 0
            return
