"""The report's solves: memoised, swept by bisection, bounded by one deadline, honest where the
free-order DP does not apply (hand-made tables; optima checked against brute force)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_report_data import toy_tables

from partitioner.problem import CostTables, Problem
from partitioner.report.build import build_report
from partitioner.report.pareto import sweep
from partitioner.report.solving import Solves, report_budget, solve_within
from partitioner.result import Plan
from partitioner.solvers.brute import solve as brute


def _tables(cost: np.ndarray, latency: float, cap: float) -> CostTables:
    G, L = cost.shape
    lat = np.full((G, G), latency)
    np.fill_diagonal(lat, 0.0)
    return CostTables(
        cost=cost, memory_gb=np.ones(L), cut_bytes=np.zeros(L), capacity_gb=np.full(G, cap),
        latency_s=lat, bandwidth_Bps=np.full((G, G), np.inf), layer_names=tuple(f"l{i}" for i in range(L)),
        device_names=tuple(f"g{g}" for g in range(G)), gpu_names=tuple(f"t{g}" for g in range(G)),
        node_names=tuple(f"n{g}" for g in range(G)), model_name="hand",
    )


def _brute(problem: Problem) -> Plan:
    return Plan.from_solution(problem, brute(problem))


def test_each_distinct_problem_is_solved_once() -> None:
    s = Solves(Problem(toy_tables(), M=8), "brute")
    a = s.plan("balanced")
    assert s.plan("balanced") is a and s.calls == 1
    s.plan("makespan", M=8)
    s.plan("makespan", M=8)
    s.plan("makespan", M=4)
    assert s.calls == 3


def test_report_reuses_the_makespan_solves() -> None:
    problem = Problem(toy_tables(), M=8)
    rep = build_report(problem, Ms=(1, 8), solver="brute", baselines=(), pareto_Ms=(1, 2, 4, 8, 16, 32, 64))
    # balanced, throughput, makespan@8 (shared with the sweep), then the sweep: M=1, 64, and the
    # bisection between the two different optima (M=1: B alone; M>=2: the split) -> 8 is reused
    assert rep.solves < 3 + 7
    assert [(p.M, p.first_latency) for p in rep.pareto] == [(1, 6.0), (2, 7.0)]


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 3), st.integers(3, 5))
def test_bisection_sweep_equals_solving_every_M(seed: int, G: int, L: int) -> None:
    """Skipping the Ms between two equal optima loses nothing (T(M) is linear in M per plan)."""
    rng = np.random.default_rng(seed)
    problem = Problem(_tables(rng.uniform(0.5, 3.0, (G, L)), float(rng.uniform(0, 2)), float(L)), M=1)
    Ms = (1, 2, 3, 4, 8, 16, 32)
    calls: list[int] = []

    def solve(q: Problem) -> Plan:
        calls.append(q.M)
        return _brute(q)

    got = {p.M: (p.throughput, p.first_latency) for p in sweep(problem, Ms, solve)}
    for M in Ms:
        want = _brute(dataclasses.replace(problem, M=M, objective="makespan"))
        T = lambda thr, lat: lat + (M - 1) / thr  # noqa: E731
        assert T(*got[M]) == pytest.approx(want.first_latency + (M - 1) * want.period, rel=1e-9)
    assert len(calls) <= len(Ms)


def test_where_the_dp_does_not_apply_the_plan_is_honest(monkeypatch) -> None:
    """Without the free-order DP (and no time for CP-SAT): a feasible plan, marked unproven unless
    its bound closes the gap, with a positive lower bound at most the brute-force optimum."""
    from partitioner.solvers import dp

    rng = np.random.default_rng(3)
    problem = Problem(_tables(rng.uniform(0.5, 3.0, (4, 6)), 0.3, 3.0), M=8)
    s = Solves(problem, "auto", report_budget(None))
    tau_star = s.plan("balanced").tau_max  # the exact DP (it applies)
    exact = dp.applies
    monkeypatch.setattr(dp, "applies", lambda q: q.order == "fixed" and exact(q))  # as on 10+ free devices
    plan = s.plan("makespan", M=8)
    best = _brute(dataclasses.replace(problem, objective="makespan"))
    assert plan.feasible and plan.T_async >= best.T_async * (1 - 1e-9)
    assert 0 < plan.lower_bound <= best.T_async * (1 + 1e-9)
    assert plan.lower_bound >= 7 * tau_star  # (M - 1) tau* is part of the bound
    assert plan.optimal == (plan.lower_bound >= plan.T_async * (1 - 1e-9))


def test_explicit_solver_is_run_as_asked() -> None:
    problem = Problem(toy_tables(), M=8, objective="makespan")
    assert solve_within(problem, "brute", report_budget(None)).solver == "brute"
