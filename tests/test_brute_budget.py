"""The brute force runs in the one budget: it checks it every CHECK_EVERY candidates, and past it
(a work count, an injected clock) or on Ctrl-C returns the best plan so far, not proven, with a
true lower bound. No wall clock: the tests count the budget's checks."""

from __future__ import annotations

import numpy as np
import pytest

from partitioner.errors import SolverError
from partitioner.problem import CostTables, Problem, evaluate
from partitioner.solvers import brute
from partitioner.solvers.bounds import lower_bound
from partitioner.solvers.budget import Budget


def five_devices(L: int = 6) -> Problem:
    """5 devices of 3 speeds, L unit layers, each device holds at most 3 layers: 2,505 candidates."""
    speed = np.array([1.0, 1.5, 2.0, 1.0, 3.0])
    G = len(speed)
    tables = CostTables(
        cost=np.outer(speed, np.ones(L)), memory_gb=np.ones(L), cut_bytes=np.full(L, 1e6),
        capacity_gb=np.full(G, 3.0), latency_s=np.full((G, G), 1e-4) - np.eye(G) * 1e-4,
        bandwidth_Bps=np.full((G, G), 1e9), layer_names=tuple(f"l{i}" for i in range(L)),
        device_names=tuple(f"g{g}" for g in range(G)), gpu_names=tuple(f"t{s}" for s in speed),
        node_names=("n",) * G,
    )
    return Problem(tables, objective="throughput")


def test_a_full_enumeration_checks_the_budget_once_per_check_every_candidates() -> None:
    p = five_devices()
    budget = Budget(None)
    sol = brute.solve(p, budget)
    assert sol.optimal and sol.status == "OPTIMAL"
    assert budget.work == brute.count(p) // brute.CHECK_EVERY == 2505 // 256


def test_a_work_limit_stops_it_with_the_best_so_far_not_proven() -> None:
    p = five_devices()
    exact = brute.solve(p)
    budget = Budget(None)
    budget.work_limit = 3  # stops at the 4th check: 1,024 candidates seen (stages 1-3 and part of 4)
    sol = brute.solve(p, budget)
    assert budget.work == 4
    assert sol.status == "TIME_LIMIT" and not sol.optimal
    assert evaluate(p, sol.devices, sol.cuts).fits
    assert sol.objective[0] >= exact.objective[0]
    assert sol.lower_bound == pytest.approx(min(lower_bound(p, lp=False), sol.objective[0]))
    assert sol.lower_bound <= exact.objective[0] + 1e-12  # a true bound on the optimum


def test_an_injected_clock_past_the_deadline_stops_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from partitioner.solvers import budget as budget_mod

    now = [0.0]

    def tick() -> float:  # one second per read: the start, then one read per check
        now[0] += 1.0
        return now[0]

    monkeypatch.setattr(budget_mod, "clock", tick)
    p = Problem(five_devices().tables, objective="throughput", time_limit_s=2.5)
    sol = brute.solve(p)  # Budget(2.5) from the problem: reads at 1 (start), 2, 3, 4 > 3.5
    assert sol.status == "TIME_LIMIT" and not sol.optimal
    assert now[0] == 4.0  # stopped at the third check, not after 2,505 candidates


def test_ctrl_c_returns_the_best_so_far_and_none_yet_reraises() -> None:
    class InterruptAt(Budget):
        def __init__(self, at: int) -> None:
            super().__init__(None)
            self.at = at

        def check(self) -> None:
            super().check()
            if self.work >= self.at:
                raise KeyboardInterrupt

    p = five_devices()
    sol = brute.solve(p, InterruptAt(2))
    assert sol.status == "INTERRUPTED" and not sol.optimal and evaluate(p, sol.devices, sol.cuts).fits
    # every device holds at most 3 layers: of 10 layers the first 256 candidates (1-3 stages, the
    # first check) hold none, so there is nothing to return
    with pytest.raises(KeyboardInterrupt):
        brute.solve(five_devices(L=10), InterruptAt(1))
    stopped = Budget(None)
    stopped.work_limit = 0
    with pytest.raises(SolverError, match="no plan found within the time limit"):
        brute.solve(five_devices(L=10), stopped)
