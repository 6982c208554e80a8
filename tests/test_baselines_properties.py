"""Seeded random instances: every baseline is a valid plan, scored exactly, never better than brute."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from partitioner.errors import InfeasibleError
from partitioner.problem import CostTables, Problem, evaluate, lex_compare, objective_key
from partitioner.result import Plan
from partitioner.solvers import BASELINES, solve


@st.composite
def problems(draw: st.DrawFn) -> Problem:
    G = draw(st.integers(1, 3))
    n_dec = draw(st.integers(G, 5))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    kinds = ("embed",) + ("decoder",) * n_dec + ("head",)
    L = len(kinds)
    mem = rng.uniform(0.5, 2.0, L)
    caps = rng.uniform(0.4, 1.2, G) * mem.sum()  # memory limits that bind
    lat = rng.uniform(0, 0.2, (G, G))
    t = CostTables(
        cost=rng.uniform(0.1, 2.0, (G, L)),
        memory_gb=mem,
        cut_bytes=rng.uniform(0, 1e6, L),
        capacity_gb=caps,
        latency_s=lat,
        bandwidth_Bps=np.full((G, G), 1e7),
        layer_names=tuple(f"l{i}" for i in range(L)),
        device_names=tuple(f"d{g}" for g in range(G)),
        gpu_names=("t4",) * G,
        node_names=tuple(f"n{g}" for g in range(G)),
        layer_kinds=kinds,
        params=rng.integers(1, 100, L).astype(float),
    )
    return Problem(
        t,
        M=draw(st.integers(1, 12)),
        regime=draw(st.sampled_from(["async", "blocking"])),
        objective=draw(st.sampled_from(["balanced", "throughput", "makespan"])),
        order=draw(st.sampled_from(["free", "fixed"])),
    )


@given(problems())
@settings(max_examples=40)
def test_baselines_are_valid_and_never_beat_the_optimum(problem: Problem) -> None:
    try:
        best = solve(problem, "brute")
    except InfeasibleError:
        best = None
    for name in BASELINES:
        sol = solve(problem, name)
        assert sol.solver == name and not sol.optimal and sol.status == "BASELINE"
        metrics = evaluate(problem, sol.devices, sol.cuts)  # a structurally valid plan
        assert sol.objective == objective_key(problem, metrics)
        assert list(sol.devices) == sorted(sol.devices)  # listed order
        if sol.feasible:
            assert metrics.fits
            assert best is not None
            assert lex_compare(best.objective, sol.objective) <= 0
        else:
            assert sol.reason
        assert sol.lower_bound <= sol.objective[0] * (1 + 1e-9)
        if best is not None:
            assert sol.lower_bound <= best.objective[0] * (1 + 1e-9)
        plan = Plan.from_solution(problem, sol)
        assert plan.feasible == sol.feasible
