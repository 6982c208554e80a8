"""`params`: DeepSpeed's `partition_method="parameters"`, replayed as the code is today.

Source: deepspeedai/DeepSpeed `deepspeed/runtime/pipe/module.py::PipelineModule._partition_layers`
(method "parameters": `self.parts = ds_utils.partition_balanced(weights=param_counts,
num_parts=num_stages)`) and `deepspeed/runtime/utils.py::partition_balanced`, the
O(n^2 m) dynamic programme of the Linear Partition Problem since PR #4312 that minimises
max - min stage weight (not the bottleneck), with `partition_uniform` when n <= m:

    dp_max[0,0] = dp_cost[0,0] = 0, everything else inf (dp_min[0,0] stays inf)
    for i in 1..n, j in 1..min(i, m), k in 0..i-1:
        max_sum = max(dp_max[k,j-1], w(k,i)); min_sum = min(dp_min[k,j-1], w(k,i))
        if dp_cost[i,j] >= max_sum - min_sum: take it (ties -> the last k)

The weights are the per-layer parameter counts `CostTables.params` over the whole layer
list (embedding and head included, as they are layers of a PipelineModule); when a model
carries no parameter counts, the per-layer memory `memory_gb` stands in for them. P is the
number of devices, in listed order. DeepSpeed keeps empty ranks (#5078): a stage that gets
0 layers makes the plan infeasible, with reason "stage k gets 0 layers".
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from partitioner.errors import InputError
from partitioner.problem import Problem, Solution
from partitioner.solvers.baselines._common import finish

__all__ = ["solve", "partition_uniform", "partition_balanced"]


def partition_uniform(num_items: int, num_parts: int) -> list[int]:
    """DeepSpeed's `partition_uniform`: P+1 boundaries, the first `residual` parts one larger."""
    if num_items <= num_parts:
        return [min(p, num_items) for p in range(num_parts + 1)]
    chunk = num_items // num_parts
    residual = num_items - chunk * num_parts
    parts = [p * chunk for p in range(num_parts + 1)]
    for i in range(residual):
        for q in range(i + 1, num_parts + 1):
            parts[q] += 1
    return parts


def partition_balanced(weights: Sequence[float], num_parts: int) -> list[int]:
    """DeepSpeed's `partition_balanced`: P+1 boundaries minimising max - min part weight."""
    n, m = len(weights), int(num_parts)
    if m < 1:
        raise InputError(f"num_parts must be >= 1 (got {num_parts})")
    if n <= m:
        return partition_uniform(n, m)
    inf = np.inf
    dp_max = np.full((n + 1, m + 1), inf)
    dp_min = np.full((n + 1, m + 1), inf)
    dp_cost = np.full((n + 1, m + 1), inf)
    position = np.zeros((n + 1, m + 1), dtype=int)
    prefix = np.zeros(n + 1)
    prefix[1:] = np.cumsum(np.asarray(weights, dtype=float))
    dp_max[0, 0] = 0.0
    dp_cost[0, 0] = 0.0
    for i in range(1, n + 1):
        ks = np.arange(i)
        seg = prefix[i] - prefix[ks]
        for j in range(1, min(i, m) + 1):
            max_sum = np.maximum(dp_max[ks, j - 1], seg)
            min_sum = np.minimum(dp_min[ks, j - 1], seg)
            cost = max_sum - min_sum
            best = cost.min()
            if not dp_cost[i, j] >= best:
                continue
            k = int(np.flatnonzero(cost == best)[-1])  # `>=` keeps the last k with the least cost
            dp_cost[i, j], dp_max[i, j], dp_min[i, j] = best, max_sum[k], min_sum[k]
            position[i, j] = k
    parts = [n]
    for j in reversed(range(1, m + 1)):
        parts.append(int(position[parts[-1], j]))
    parts.reverse()
    return parts


def solve(problem: Problem) -> Solution:
    """DeepSpeed's parameter balance over all devices in listed order (status BASELINE)."""
    start = time.perf_counter()
    t = problem.tables
    weights = t.params if t.params is not None else t.memory_gb
    parts = partition_balanced([float(w) for w in weights], problem.G)
    return finish(problem, "params", tuple(range(problem.G)), parts, keep_empty=True, started=start)
