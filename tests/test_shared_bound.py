"""The fluid bound over rows that share devices (TP groups): by hand, and never above the best plan
over disjoint rows (brute force over every disjoint row set) on seeded random instances."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from partitioner.errors import InfeasibleError
from partitioner.problem import CostTables, Problem, select_rows
from partitioner.solvers import brute
from partitioner.solvers.bounds import fluid_bound
from partitioner.solvers.shared_bound import shared_fluid_bound


def rows_table(cost: np.ndarray, memory: np.ndarray, capacity: np.ndarray) -> CostTables:
    R, L = cost.shape
    return CostTables(
        cost=cost, memory_gb=memory, cut_bytes=np.zeros(L), capacity_gb=capacity,
        latency_s=np.zeros((R, R)), bandwidth_Bps=np.full((R, R), np.inf),
        layer_names=tuple(f"l{i}" for i in range(L)), device_names=tuple(f"r{r}" for r in range(R)),
        gpu_names=("x",) * R, node_names=("n",) * R,
    )


def test_two_gpus_and_their_pair_by_hand() -> None:
    # rows {0}, {1}, {0, 1}; 4 unit layers: 1 s each alone, 0.6 s as a TP pair. Fluid over the rows
    # as if all three ran at once: 4 / (1 + 1 + 1/0.6) = 1.09 s. Shared: device loads
    # x0 + 0.6 x01 and x1 + 0.6 x01 with x0 + x1 + x01 = 4: best x0 = x1 = 2, so 2 s, the optimum.
    t = rows_table(np.array([[1.0] * 4, [1.0] * 4, [0.6] * 4]), np.ones(4), np.full(3, 10.0))
    assert fluid_bound(t) == pytest.approx(4 / (2 + 1 / 0.6), rel=1e-6)
    assert shared_fluid_bound(t, [(0,), (1,), (0, 1)]) == pytest.approx(2.0, rel=1e-6)


def test_memory_is_shared_too() -> None:
    # each GPU has 1.5 GB (1 layer of 1 GB), the pair 4 GB. Per device the fills x0/1.5 + x01/4 <= 1
    # with x0 = x1 = a, x01 = 4 - 2a (symmetry) give a (1/1.5 - 1/4 * 2) <= 0, so a = 0: all four
    # layers on the pair, B = 2.4 s, the optimum; the memory-free bound would say 2 s
    t = rows_table(np.array([[1.0] * 4, [1.0] * 4, [0.6] * 4]), np.ones(4), np.array([1.5, 1.5, 4.0]))
    assert shared_fluid_bound(t, [(0,), (1,), (0, 1)]) == pytest.approx(2.4, rel=1e-6)


@pytest.mark.parametrize("seed", range(6))
def test_never_above_the_best_disjoint_plan(seed: int) -> None:
    rng = np.random.default_rng(seed)
    members = [(0,), (1,), (2,), (3,), (0, 1), (2, 3)]  # two nodes of two GPUs, singles and pairs
    L = 4
    single = rng.uniform(0.5, 2.0, size=(4, 1)) * rng.uniform(0.5, 1.5, size=(1, L))
    pair = np.array([np.maximum(single[a], single[b]) / 2 * rng.uniform(1.0, 1.4) for a, b in members[4:]])
    memory = rng.uniform(0.5, 1.5, size=L)
    capacity = np.concatenate([rng.uniform(1.0, 3.0, size=4), [0.0, 0.0]])
    capacity[4:] = [capacity[0] + capacity[1], capacity[2] + capacity[3]]
    t = rows_table(np.vstack([single, pair]), memory, capacity)
    best = np.inf
    for k in range(1, 5):
        for rows in itertools.combinations(range(6), k):
            used = [d for r in rows for d in members[r]]
            if len(used) != len(set(used)):
                continue
            try:
                sol = brute.solve(Problem(select_rows(t, list(rows)), objective="balanced"))
            except InfeasibleError:
                continue
            best = min(best, sol.objective[0])
    bound = shared_fluid_bound(t, members)
    if np.isfinite(best):
        assert bound <= best * (1 + 1e-9)
        assert bound >= fluid_bound(t) * (1 - 1e-9) or not np.isfinite(fluid_bound(t))
