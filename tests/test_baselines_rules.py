"""Engine baselines: each rule replayed against hand-computed splits and the engines' own code."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from partitioner.errors import InputError
from partitioner.problem import CostTables, Problem
from partitioner.solvers.baselines import even, memory, params, speed


def tables(
    n_dec: int = 10,
    caps: tuple[float, ...] = (24, 24, 8, 8),
    cost: np.ndarray | None = None,
    mem: float = 1.0,
    kinds: bool = True,
    gpus: tuple[str, ...] | None = None,
) -> CostTables:
    G = len(caps)
    names = ("embed",) + ("decoder",) * n_dec + ("head",) if kinds else ("decoder",) * n_dec
    L = len(names)
    c = np.ones((G, L)) if cost is None else np.asarray(cost, dtype=float)
    return CostTables(
        cost=c,
        memory_gb=np.full(L, mem),
        cut_bytes=np.zeros(L),
        capacity_gb=np.array(caps, dtype=float),
        latency_s=np.zeros((G, G)),
        bandwidth_Bps=np.full((G, G), np.inf),
        layer_names=tuple(f"layer{i}" for i in range(L)),
        device_names=tuple(f"dev{g}" for g in range(G)),
        gpu_names=gpus or ("rtx-3090",) * G,
        node_names=tuple(f"n{g}" for g in range(G)),
        layer_kinds=names if kinds else (),
        params=np.array([1.0] + [4.0] * n_dec + [1.0]) if kinds else None,
    )


# -- vLLM get_pp_indices -----------------------------------------------------------------
def vllm_get_pp_indices(num_hidden_layers: int, pp_rank: int, pp_size: int) -> tuple[int, int]:
    """Literal transcription of vllm/distributed/utils.py::get_pp_indices (no env var)."""
    layers_per_partition = num_hidden_layers // pp_size
    partitions = [layers_per_partition for _ in range(pp_size)]
    if remaining_layers := num_hidden_layers % pp_size:
        for i in range(2, remaining_layers + 2):
            partitions[-i] += 1
    start_layer = sum(partitions[:pp_rank])
    return (start_layer, start_layer + partitions[pp_rank])


@pytest.mark.parametrize(
    ("L", "P", "expected"),
    [
        (10, 4, [2, 3, 3, 2]),  # r = 2: stages P-2 and P-3 get the extra layers
        (61, 4, [15, 15, 16, 15]),  # DeepSeek-V3.1 at PP=4 (vLLM PR #46217 quotes 15,15,16,15)
        (32, 4, [8, 8, 8, 8]),
        (7, 4, [2, 2, 2, 1]),  # r = P-1: the first stage gets one too, the last never
        (5, 3, [2, 2, 1]),
        (3, 3, [1, 1, 1]),
    ],
)
def test_vllm_remainder_rule(L: int, P: int, expected: list[int]) -> None:
    assert even.pp_partitions(L, P) == expected


@given(st.integers(1, 200), st.integers(1, 40))
@settings(max_examples=60)
def test_vllm_rule_matches_vllm_code(L: int, P: int) -> None:
    counts = even.pp_partitions(L, P)
    starts = np.concatenate([[0], np.cumsum(counts)])
    for r in range(P):
        assert vllm_get_pp_indices(L, r, P) == (starts[r], starts[r + 1])


def test_even_puts_embedding_first_and_head_last() -> None:
    sol = even.solve(Problem(tables()))
    # 12 layers: embed, 10 decoders, head; decoder counts [2, 3, 3, 2]
    assert sol.cuts == (0, 3, 6, 9, 12)
    assert sol.devices == (0, 1, 2, 3)
    assert (sol.solver, sol.optimal, sol.status, sol.feasible) == ("even", False, "BASELINE", True)


def test_even_needs_a_decoder_layer_per_device() -> None:
    with pytest.raises(InputError, match="only 3 decoder layers"):
        even.solve(Problem(tables(n_dec=3)))


# -- DeepSpeed partition_balanced ----------------------------------------------------------
def deepspeed_partition_balanced(weights: list[float], num_parts: int) -> list[int]:
    """Literal transcription of deepspeed/runtime/utils.py::partition_balanced (today's DP)."""
    n, m = len(weights), num_parts
    if n <= m:
        return params.partition_uniform(n, m)
    dp_max = np.full((n + 1, m + 1), np.inf)
    dp_min = np.full((n + 1, m + 1), np.inf)
    dp_cost = np.full((n + 1, m + 1), np.inf)
    position = np.zeros((n + 1, m + 1), dtype=int)
    prefix_sum = np.zeros(n + 1)
    prefix_sum[1:] = np.cumsum(weights)
    dp_max[0, 0] = 0
    dp_cost[0, 0] = 0
    for i in range(1, n + 1):
        for j in range(1, min(i, m) + 1):
            for k in range(i):
                max_sum = max(dp_max[k, j - 1], prefix_sum[i] - prefix_sum[k])
                min_sum = min(dp_min[k, j - 1], prefix_sum[i] - prefix_sum[k])
                cost = max_sum - min_sum
                if dp_cost[i, j] >= cost:
                    dp_cost[i, j] = cost
                    dp_max[i, j] = max_sum
                    dp_min[i, j] = min_sum
                    position[i, j] = k
    parts = [n]
    for i in reversed(range(1, m + 1)):
        parts.append(position[parts[-1], i])
    parts.reverse()
    return [int(p) for p in parts]


def test_deepspeed_documented_example() -> None:
    # engines.md: [0, 2, 4, 5, 5] before PR #4312 (bottleneck search); today's max-min DP:
    assert params.partition_balanced([1, 1, 1, 1, 1], 4) == [0, 2, 3, 4, 5]


def test_deepspeed_partition_uniform() -> None:
    assert params.partition_uniform(3, 5) == [0, 1, 2, 3, 3, 3]
    assert params.partition_uniform(10, 4) == [0, 3, 6, 8, 10]


@given(st.lists(st.integers(0, 9), min_size=1, max_size=9), st.integers(1, 5))
@settings(max_examples=60)
def test_partition_balanced_matches_deepspeed_code(weights: list[int], m: int) -> None:
    assert params.partition_balanced(weights, m) == deepspeed_partition_balanced(weights, m)


def test_params_balances_parameters() -> None:
    # weights [1, 4 x 10, 1] over 4 stages
    sol = params.solve(Problem(tables()))
    assert list(sol.cuts) == params.partition_balanced([1] + [4] * 10 + [1], 4)
    assert sol.feasible and sol.status == "BASELINE"


def test_params_empty_rank_is_infeasible() -> None:
    # 2 decoders + embed + head = 4 layers on 5 devices: partition_uniform leaves rank 4 empty
    sol = params.solve(Problem(tables(n_dec=2, caps=(9, 9, 9, 9, 9))))
    assert not sol.feasible
    assert "stage 4 gets 0 layers" in sol.reason
    assert sol.cuts == (0, 1, 2, 3, 4)


def test_partition_balanced_error() -> None:
    with pytest.raises(InputError, match="num_parts must be >= 1"):
        params.partition_balanced([1.0], 0)


# -- llama.cpp load_tensors ------------------------------------------------------------------
def test_llamacpp_counts_hand_computed() -> None:
    # 32 repeating layers + output = 33 positions; splits 24/56, 48/56, 1:
    # il/33 < 0.4286 -> il <= 14 (15 positions), < 0.8571 -> il <= 28 (14), rest 4
    assert memory.counts_per_device([24, 24, 8], 32) == [15, 14, 4]
    assert memory.counts_per_device([3, 1], 32) == [25, 8]
    # equal shares at an exact boundary: float32(1)/float32(3) equals the split point 1/3,
    # and upper_bound moves past it (position 1 goes to device 1)
    assert memory.counts_per_device([1, 1, 1], 2) == [1, 1, 1]


def test_memory_baseline_split() -> None:
    # capacities 24, 24, 8, 8 -> positions 11 (10 decoders + output): 5, 4, 1, 1
    sol = memory.solve(Problem(tables()))
    assert sol.cuts == (0, 6, 10, 11, 12)  # embedding joins the first device
    assert sol.feasible


def test_memory_baseline_drops_device_without_layers() -> None:
    sol = memory.solve(Problem(tables(n_dec=4, caps=(100, 100, 1))))
    assert sol.devices == (0, 1)
    assert "'dev2' gets 0 layers and is left out" in sol.reason
    assert sol.feasible


def test_memory_errors() -> None:
    with pytest.raises(InputError, match="usable memory > 0"):
        memory.solve(Problem(tables(caps=(0, 0))))
    with pytest.raises(InputError, match="finite and >= 0"):
        memory.split_points([1.0, -1.0])


# -- speed -----------------------------------------------------------------------------------
def test_speed_hand_computed() -> None:
    cost = np.array([[1, 1, 1, 1], [2, 2, 2, 2]], dtype=float)
    t = tables(n_dec=4, caps=(9, 9), cost=cost, kinds=False)
    # speeds 1/4 and 1/8: shares 2/3, 1/3; W = 0, .25, .5, .75, 1 -> closest to 2/3 is .75
    assert speed.solve(Problem(t)).cuts == (0, 3, 4)


def test_speed_error() -> None:
    cost = np.array([[1, 1], [0, 0]], dtype=float)
    with pytest.raises(InputError, match="'dev1' has 0.0 s"):
        speed.solve(Problem(tables(n_dec=2, caps=(9, 9), cost=cost, kinds=False)))


# -- memory limits ---------------------------------------------------------------------------
def test_baseline_breaking_memory_is_infeasible_with_reason() -> None:
    t = tables(n_dec=10, caps=(24, 24, 24, 7.0), mem=3.04, gpus=("rtx-3090",) * 3 + ("gtx-1070",))
    sol = even.solve(Problem(t))
    # last stage: 2 decoders + head = 3 layers x 3.04 GB = 9.12 GB on a 7 GB card
    assert not sol.feasible
    assert sol.reason == "stage 3 (gtx-1070 'dev3') needs 9.1 GB > 7.0 GB usable"
    assert sol.cuts == (0, 3, 6, 9, 12)  # never silently repaired
