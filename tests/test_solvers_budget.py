"""One wall-clock budget for a whole solve: --time-limit, Ctrl-C and never-trivial bounds."""

from __future__ import annotations

import _thread
import threading
import time

import numpy as np
import pytest

from partitioner.errors import SolverError
from partitioner.problem import CostTables, Problem, evaluate
from partitioner.solvers import cpsat, dp, solve
from partitioner.solvers.budget import Budget, TimeUp


def cluster(L: int, G: int, types: int, distinct: bool, seed: int = 0) -> CostTables:
    r = np.random.default_rng(seed)
    type_of = np.sort(np.arange(G) % types)
    speed = np.exp(r.uniform(0, np.log(8), types))
    cost = (r.uniform(0.5, 1.5, L) * 1e-3 / speed[:, None] * r.uniform(0.8, 1.25, (types, L)))[type_of]
    mem = r.uniform(0.8, 1.2, L)
    lat = np.full((G, G), 10e-6) * (r.uniform(0.5, 2, (G, G)) if distinct else 1.0)
    bw = np.full((G, G), 25e9) * (r.uniform(0.5, 2, (G, G)) if distinct else 1.0)
    np.fill_diagonal(lat, 0.0)
    np.fill_diagonal(bw, np.inf)
    return CostTables(
        cost=cost, memory_gb=mem, cut_bytes=np.full(L, 1.3e5), capacity_gb=(r.uniform(2, 3, types) * mem.sum() / G)[type_of],
        latency_s=lat, bandwidth_Bps=bw, layer_names=tuple(f"l{i}" for i in range(L)),
        device_names=tuple(f"g{g}" for g in range(G)), gpu_names=tuple(f"t{x}" for x in type_of),
        node_names=("n",) * G,
    )


def test_time_limit_bounds_the_whole_auto_solve_and_keeps_the_bound() -> None:
    p = Problem(cluster(48, 24, 2, distinct=True), objective="balanced", time_limit_s=2.0)
    assert not dp._lattice_applies(p)  # beyond the lattice: link-distinct subsets search, time-limited
    start = time.perf_counter()
    s = solve(p, "auto")
    assert time.perf_counter() - start < 2.0 + 2.0  # scoring after the last phase (and a loaded CI box)
    assert evaluate(p, s.devices, s.cuts).fits
    tau_star = dp.free_tau(p)
    assert tau_star is not None and s.lower_bound >= tau_star * (1 - 1e-9)  # the DP's tau* is kept
    assert s.objective[0] == pytest.approx(tau_star, rel=1e-9)  # and its plan: tau_max is optimal


def test_dp_past_its_deadline_returns_the_best_plan_so_far(monkeypatch: pytest.MonkeyPatch) -> None:
    p = Problem(cluster(64, 16, 4, distinct=False), objective="balanced")
    calls = {"n": 0}

    def check_after_tau(self: Budget) -> None:
        calls["n"] += 1
        if calls["n"] > 1:
            raise TimeUp

    monkeypatch.setattr(Budget, "check", check_after_tau)
    s = dp.solve(p)
    assert not s.optimal and s.status == "TIME_LIMIT"
    assert s.objective[0] == pytest.approx(dp.free_tau(p), rel=1e-12) and s.lower_bound == s.objective[0]


def test_ctrl_c_in_dp_returns_the_best_plan_so_far(monkeypatch: pytest.MonkeyPatch) -> None:
    p = Problem(cluster(64, 16, 4, distinct=False), objective="makespan")
    calls = {"n": 0}

    def interrupt(self: Budget) -> None:
        calls["n"] += 1
        if calls["n"] > 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(Budget, "check", interrupt)
    s = dp.solve(p)
    assert s.status == "INTERRUPTED" and not s.optimal
    assert 0 < s.lower_bound <= s.objective[0]


def test_ctrl_c_in_cpsat_returns_the_best_plan_so_far() -> None:
    p = Problem(cluster(60, 10, 10, distinct=True), objective="makespan", time_limit_s=60)
    timer = threading.Timer(1.0, _thread.interrupt_main)
    timer.start()
    start = time.perf_counter()
    try:
        s = cpsat.solve(p)
    finally:
        timer.cancel()
    assert time.perf_counter() - start < 10
    assert s.status in ("INTERRUPTED", "OPTIMAL")
    assert evaluate(p, s.devices, s.cuts).fits and 0 < s.lower_bound <= s.objective[0]


@pytest.mark.parametrize("objective", ["balanced", "throughput", "makespan"])
def test_bounds_are_never_zero_for_a_positive_objective(objective: str) -> None:
    p = Problem(cluster(40, 12, 12, distinct=True), objective=objective, time_limit_s=1.0)  # type: ignore[arg-type]
    found = [cpsat.solve(p), solve(p, "auto")]
    try:
        found.append(cpsat.solve(p, use_dp=False))  # CP-SAT alone may find nothing in 1 s
    except SolverError as err:
        assert "no plan found within the time limit" in str(err)
    for s in found:
        assert s.objective[0] > 0 and s.lower_bound > 0.5 * s.objective[0]


def test_score_evaluates_each_plan_once_and_keys_on_tables_M_and_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    from partitioner.solvers import budget as budget_mod

    calls = []

    def counted(problem: Problem, devices: tuple[int, ...], cuts: tuple[int, ...]):  # type: ignore[no-untyped-def]
        calls.append((devices, cuts))
        return evaluate(problem, devices, cuts)

    monkeypatch.setattr(budget_mod, "evaluate", counted)
    p = Problem(cluster(6, 3, 2, distinct=False), M=4)
    b = Budget(None)
    first = b.score(p, (0, 1), (0, 3, 6))
    assert b.score(p, (0, 1), (0, 3, 6)) is first and len(calls) == 1
    b.offer(p, (0, 1), (0, 3, 6))  # offer reuses it
    assert len(calls) == 1
    other_M = b.score(dataclasses.replace(p, M=9), (0, 1), (0, 3, 6))
    assert len(calls) == 2 and other_M.T_async != first.T_async
    assert b.score(p, (1, 0), (0, 3, 6)) is not first and len(calls) == 3
    from partitioner.errors import InputError

    with pytest.raises(InputError, match="not in listed order"):  # the fixed order's plan check still runs
        b.score(dataclasses.replace(p, order="fixed"), (1, 0), (0, 3, 6))
    for M in range(10, 10 + budget_mod.SCORED):  # the oldest entries give way
        b.score(dataclasses.replace(p, M=M), (0, 1), (0, 3, 6))
    assert len(b._scored) <= budget_mod.SCORED
    n = len(calls)
    b.score(p, (0, 1), (0, 3, 6))
    assert len(calls) == n + 1  # evicted, so scored again
