"""KV-cache capacity of a plan: how many sequences fit beside each stage's weights.

Per stage s on device g_s (layers [e_s, e_{s+1})):

    free_s  = C_g - Σ weight_gb[l]              (weights, workspace; the reserve is out of C_g)
    kv_s    = Σ kv_bytes_per_token[l] · context  bytes one sequence's KV cache holds on stage s
    N_s     = the largest N with  Σ weight_gb + N·kv_s/1e9 <= C_g  (the test of Metrics.fits)

The plan's capacity is N = min_s N_s: every stage holds the KV of every sequence in flight on
its own layers, and the engine admits no more than its smallest worker can hold (vLLM sizes
its KV cache by the worst worker: vllm/executor/distributed_gpu_executor.py
`DistributedGPUExecutor.determine_num_available_blocks` takes the min of every worker's
`num_gpu_blocks`, v0.5.x, the version of vLLM PR #6920).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from partitioner.problem import RTOL, CostTables

__all__ = ["MAX_SEQUENCES", "MAX_FIT_PROBES", "Capacity", "stage_weight_gb", "stage_kv_gb", "fits", "capacity", "sequence_cap"]


@dataclass(frozen=True)
class Capacity:
    """max_sequences (None: no KV cache is modelled, unbounded) and the stage that sets it."""

    max_sequences: int | None
    stage: int | None
    per_stage: tuple[int | None, ...]


def stage_weight_gb(t: CostTables, i: int, j: int) -> float:
    """GB layers [i, j) need besides their KV cache (tied embedding counted once, as stage_memory)."""
    w = t.memory_gb if t.weight_gb is None else t.weight_gb
    mem = float(np.sum(w[i:j]))
    if i == 0 and j == t.L and t.tied_gb:
        mem -= t.tied_gb
    return mem


def stage_kv_gb(t: CostTables, i: int, j: int) -> float:
    """GB one sequence's KV cache holds on layers [i, j) at the tables' context length."""
    if t.kv_bytes_per_token is None:
        return 0.0
    return float(np.sum(t.kv_bytes_per_token[i:j])) * t.context / 1e9


def fits(weight_gb: float, kv_gb: float, cap_gb: float, n: int) -> bool:
    """Whether n sequences fit: the same tolerance as `Metrics.fits`."""
    return weight_gb + n * kv_gb <= cap_gb * (1 + RTOL) + 1e-12


#: Largest sequence count reported: exact in a float, and far more than any engine admits
#: (a stage whose memory holds more is reported as holding this many).
MAX_SEQUENCES = 2**53
#: Most `fits` tests one `_stage_max` makes: its closed-form guess in [0, MAX_SEQUENCES] is
#: corrected by a gallop and a bisection of at most 54 steps each (in practice a handful).
MAX_FIT_PROBES = 2 * 54 + 3


def _stage_max(weight_gb: float, kv_gb: float, cap_gb: float) -> int | None:
    """The largest n with fits(weight_gb, kv_gb, cap_gb, n), None without KV: `fits` solved for n
    (a floor of a quotient), then corrected for float rounding by galloping from that guess to a
    bracket [lo fits, hi does not] and bisecting it; `fits` is monotone in n. O(1) in the memory
    size (it counted sequences one at a time: kv_cache 1e-12 took minutes)."""
    if kv_gb <= 0:
        return None
    if not fits(weight_gb, kv_gb, cap_gb, 0):
        return 0
    if fits(weight_gb, kv_gb, cap_gb, MAX_SEQUENCES):
        return MAX_SEQUENCES
    quotient = (cap_gb * (1 + RTOL) + 1e-12 - weight_gb) / kv_gb
    guess = int(min(max(quotient, 0.0), MAX_SEQUENCES))
    step = 1
    if fits(weight_gb, kv_gb, cap_gb, guess):
        lo = guess
        while lo + step < MAX_SEQUENCES and fits(weight_gb, kv_gb, cap_gb, lo + step):
            lo, step = lo + step, step * 2
        hi = min(lo + step, MAX_SEQUENCES)
    else:
        hi = guess
        while hi - step > 0 and not fits(weight_gb, kv_gb, cap_gb, hi - step):
            hi, step = hi - step, step * 2
        lo = max(0, hi - step)  # fits: 0 does, and so does any n that the loop stopped at
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(weight_gb, kv_gb, cap_gb, mid):
            lo = mid
        else:
            hi = mid
    return lo


def capacity(t: CostTables, devices: tuple[int, ...], cuts: tuple[int, ...]) -> Capacity:
    """N_s per stage and N = min_s N_s (module doc)."""
    per = tuple(
        _stage_max(stage_weight_gb(t, cuts[s], cuts[s + 1]), stage_kv_gb(t, cuts[s], cuts[s + 1]),
                   float(t.capacity_gb[g]))
        for s, g in enumerate(devices)
    )
    known = [(n, s) for s, n in enumerate(per) if n is not None]
    if not known:
        return Capacity(None, None, per)
    n, s = min(known)
    return Capacity(n, s, per)


def sequence_cap(t: CostTables) -> float:
    """An upper bound on `capacity(...)` over every plan on t's devices: stages hold disjoint
    layers on distinct devices and each passes the test of `fits`, so summed over stages
    Σ weights + N·Σ kv <= Σ C_g·(1 + RTOL) + G·1e-12, with Σ weights >= Σ weight_gb − tied_gb
    (the tied embedding is counted once only on a one-stage plan). inf without a KV model."""
    kv = stage_kv_gb(t, 0, t.L)
    if kv <= 0 or t.weight_gb is None:
        return math.inf
    room = float(t.capacity_gb.sum()) * (1 + RTOL) + t.G * 1e-12 - (float(t.weight_gb.sum()) - t.tied_gb)
    return max(0.0, room / kv)
