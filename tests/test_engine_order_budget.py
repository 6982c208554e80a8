"""`--engine` search under one wall-clock budget: the whole order-restricted search honours
`time_limit_s` (each sub-solve gets only what is left), and Ctrl-C returns the best launchable
plan so far, not proven, with a bound that holds."""

from __future__ import annotations

import numpy as np
import pytest

from partitioner import solvers
from partitioner.errors import SolverError
from partitioner.problem import CostTables, Problem, Solution
from partitioner.solvers import engine_order, engine_sequences


def _problem(limit: float | None = None) -> Problem:
    """Three nodes of 1, 2 and 3 GPUs of random speeds (seeded): the free optimum is an order Ray
    refuses, so the vLLM search solves 145 sequences after the free solve."""
    rng = np.random.default_rng(0)
    nodes = ("A", "B", "B", "C", "C", "C")
    G, L = 6, 8
    speed = rng.uniform(0.5, 3, size=G)
    cap = rng.integers(2, 4, size=G).astype(float)
    lat = np.where(np.equal.outer(nodes, nodes), 0.001, rng.uniform(0.0, 0.05, size=(G, G)))
    t = CostTables(
        cost=np.outer(speed, np.ones(L)), memory_gb=np.ones(L), cut_bytes=np.zeros(L), capacity_gb=cap,
        latency_s=lat, bandwidth_Bps=np.full((G, G), np.inf), layer_names=tuple(f"l{i}" for i in range(L)),
        device_names=tuple(f"d{g}" for g in range(G)), gpu_names=("t4",) * G, node_names=nodes,
    )
    return Problem(t, objective="balanced", M=4, order="free", time_limit_s=limit)


def _counting_solver(monkeypatch: pytest.MonkeyPatch, calls: list[float | None], interrupt_at: int | None = None) -> None:
    real = solvers.solve

    def counting(problem: Problem, solver: str = "auto", **kw: object) -> Solution:
        calls.append(problem.time_limit_s)
        if interrupt_at is not None and len(calls) == interrupt_at:
            raise KeyboardInterrupt
        return real(problem, solver, **kw)

    monkeypatch.setattr(solvers, "solve", counting)


def test_unbounded_search_needs_many_subsolves(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[float | None] = []
    _counting_solver(monkeypatch, calls)
    sol = engine_order.solve(_problem(), "vllm")
    assert len(calls) > 20 and sol.optimal and sol.status == "OPTIMAL"


def test_time_limit_bounds_the_whole_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake clock that advances 1/64 s per solve: with a 1 s limit the search stops after 64
    of its 146 solves (not 1 s per sub-solve), each given only what is left."""
    from partitioner.solvers import budget, engine_clock

    class Clock:
        now = 0.0

        def monotonic(self) -> float:
            return self.now

        perf_counter = monotonic

    clock = Clock()
    monkeypatch.setattr(budget, "time", clock)
    monkeypatch.setattr(budget, "clock", clock.perf_counter)  # the clock every Budget reads
    real = solvers.solve
    calls: list[float | None] = []

    def tick(problem: Problem, solver: str = "auto", **kw: object) -> Solution:
        calls.append(problem.time_limit_s)
        clock.now += 1 / 64  # exact in binary
        return real(problem, solver, **kw)

    monkeypatch.setattr(solvers, "solve", tick)
    limit = 1.0
    sol = engine_order.solve(_problem(limit), "vllm")
    assert len(calls) == 64  # the free solve (at t = 0) and 63 sub-solves started before t = 1 s
    # what is left of the one budget (at least engine_clock.MIN_SUB_S for a sub-solve started in time)
    assert calls == [max(engine_clock.MIN_SUB_S, limit - k / 64) for k in range(64)]
    assert sol.status == "TIME_LIMIT" and not sol.optimal
    assert engine_sequences.realisable("vllm", _problem().tables, sol.devices, {})
    monkeypatch.setattr(solvers, "solve", real)
    exact = engine_order.solve(_problem(), "vllm")
    assert sol.lower_bound <= exact.objective[0] + 1e-12 and sol.objective[0] >= exact.objective[0] - 1e-12


@pytest.mark.parametrize("at", [18, 60])  # the first launchable plan comes at sub-solve 16
def test_ctrl_c_returns_the_best_launchable_plan_so_far(monkeypatch: pytest.MonkeyPatch, at: int) -> None:
    calls: list[float | None] = []
    _counting_solver(monkeypatch, calls, interrupt_at=at)
    sol = engine_order.solve(_problem(), "vllm")
    assert len(calls) == at  # nothing is started after the interrupt
    assert sol.status == "INTERRUPTED" and not sol.optimal
    assert engine_sequences.realisable("vllm", _problem().tables, sol.devices, {})
    assert sol.lower_bound <= sol.objective[0]


def test_a_subsolver_that_caught_ctrl_c_stops_the_search(monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    real = solvers.solve
    calls: list[int] = []

    def caught(problem: Problem, solver: str = "auto", **kw: object) -> Solution:
        calls.append(1)
        sol = real(problem, solver, **kw)
        return dataclasses.replace(sol, status="INTERRUPTED", optimal=False) if len(calls) == 20 else sol

    monkeypatch.setattr(solvers, "solve", caught)
    sol = engine_order.solve(_problem(), "vllm")
    assert len(calls) == 20 and sol.status == "INTERRUPTED" and not sol.optimal


def test_stopped_before_any_launchable_plan_is_a_solver_error(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[float | None] = []
    _counting_solver(monkeypatch, calls, interrupt_at=10)  # before sub-solve 16, the first launchable plan
    with pytest.raises(SolverError, match="stopped \\(Ctrl-C\\) before a plan vllm can launch"):
        engine_order.solve(_problem(), "vllm")
