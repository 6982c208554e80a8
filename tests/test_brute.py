"""The brute-force oracle on hand-computed instances (it defines the objective semantics)."""

from __future__ import annotations

import numpy as np
import pytest

from partitioner.errors import InfeasibleError, InputError
from partitioner.problem import CostTables, Problem
from partitioner.solvers import brute, get


def two_devices(cap: tuple[float, float] = (10.0, 10.0), latency: float = 0.0) -> CostTables:
    # Four unit layers; device 0 is twice as fast as device 1.
    return CostTables(
        cost=np.array([[1.0] * 4, [2.0] * 4]),
        memory_gb=np.ones(4),
        cut_bytes=np.zeros(4),
        capacity_gb=np.array(cap),
        latency_s=np.array([[0.0, latency], [latency, 0.0]]),
        bandwidth_Bps=np.full((2, 2), np.inf),
        layer_names=tuple(f"l{i}" for i in range(4)),
        device_names=("fast", "slow"),
        gpu_names=("a", "b"),
        node_names=("n", "n"),
    )


def test_balances_compute_by_hand() -> None:
    # Splits: fast alone 4 s; 3 on fast + 1 on slow -> max(3, 2) = 3; 2 + 2 -> max(2, 4) = 4.
    sol = brute.solve(Problem(two_devices()))
    assert sol.objective[0] == 3.0 and sol.optimal
    layers = dict(zip(sol.devices, np.diff(sol.cuts).tolist()))
    assert layers == {0: 3, 1: 1}  # either order: the first stage's position does not matter


def test_latency_objective_prefers_one_device_at_M1() -> None:
    # makespan at M=1 is sum tau + sum d: everything on the fast device (4 s) beats any split.
    sol = brute.solve(Problem(two_devices(latency=0.5), M=1, objective="makespan"))
    assert sol.devices == (0,) and sol.objective == (4.0,)


def test_memory_forces_a_split() -> None:
    sol = brute.solve(Problem(two_devices(cap=(2.0, 2.0))))
    assert sorted(np.diff(sol.cuts).tolist()) == [2, 2]
    assert sol.objective[0] == 4.0


def test_infeasible_says_what_is_needed() -> None:
    with pytest.raises(InfeasibleError, match="needs 4.00 GB but the cluster has 2.00 GB"):
        brute.solve(Problem(two_devices(cap=(1.0, 1.0))))


def test_refuses_huge_enumerations(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(brute, "MAX_CANDIDATES", 3)
    with pytest.raises(InputError, match="brute force would enumerate"):
        brute.solve(Problem(two_devices()))


def test_unknown_solver_lists_valid_ones() -> None:
    with pytest.raises(InputError, match="unknown solver 'greedy'; valid solvers: auto, dp, cpsat"):
        get("greedy")
