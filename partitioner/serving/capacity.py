"""KV-cache capacity of a plan: how many sequences fit beside each stage's weights.

Generic engine (the free-memory model), per stage s on device g_s (layers [e_s, e_{s+1})):

    free_s  = C_g - Σ weight_gb[l]              (weights, workspace; the reserve is out of C_g)
    kv_s    = Σ kv_bytes_per_token[l] · context  bytes one sequence's KV cache holds on stage s
    N_s     = floor((C_g·(1 + RTOL) + 1e-12 − Σ weight_gb) / (kv_s/1e9))   (closed form of Metrics.fits)

With `engine: vllm | sglang | llamacpp` the tables carry a KVPool and the pool is the engine's own
(partitioner.costs.kvpool): tokens_s from the engine's start-up rule, the plan's pool
kv_tokens = min_s tokens_s, and N = floor(kv_tokens / context). A pool below the engine's
max_model_len is a plan the engine refuses to start (N = 0, said in `note`).

The plan's capacity is N = min_s N_s: every stage holds the KV of every sequence in flight on
its own layers, and the engine admits no more than its smallest worker can hold (vLLM sizes
its KV cache by the worst worker: vllm/v1/engine/core.py `EngineCore._initialize_kv_caches`
takes the least of every worker's available memory, as v0.5.x `DistributedGPUExecutor.
determine_num_available_blocks` took the min of every worker's `num_gpu_blocks`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from partitioner.costs.kvpool import StageMemory, plan_kv_tokens
from partitioner.problem import RTOL, CostTables

__all__ = ["MAX_SEQUENCES", "MAX_FIT_PROBES", "Capacity", "stage_weight_gb", "stage_kv_gb", "fits", "capacity", "sequence_cap"]


@dataclass(frozen=True)
class Capacity:
    """max_sequences (None: no KV cache is modelled, unbounded) and the stage that sets it; with an
    engine pool also the pool in tokens, per stage, each stage's memory and a note."""

    max_sequences: int | None
    stage: int | None
    per_stage: tuple[int | None, ...]
    kv_tokens: int | None = None
    stage_kv_tokens: tuple[int | None, ...] = ()
    memory: tuple[StageMemory, ...] = ()
    note: str = ""


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


def _engine_capacity(t: CostTables, devices: tuple[int, ...], cuts: tuple[int, ...]) -> Capacity:
    """The engine's pool (module doc): tokens per stage, the least of them, sequences at the context."""
    pool = t.kv_pool
    tokens, mem = plan_kv_tokens(pool, devices, cuts)
    per_tok = tuple(m.kv_tokens for m in mem)
    if tokens is None:
        return Capacity(None, None, tuple(None for _ in mem), None, per_tok, mem)
    stage = min((n, s) for s, n in enumerate(per_tok) if n is not None)[1]
    C = max(1, t.context)
    per = tuple(None if n is None else n // C for n in per_tok)
    st = pool.settings
    need = st.max_model_len if st.name == "vllm" else None
    if need is not None and tokens < need:
        note = (f"{st.name} refuses to start: its KV pool holds {tokens:,} tokens < max_model_len {need:,} "
                f"(stage {stage}); raise gpu_memory_utilization, lower max_model_len or use more GPUs")
        return Capacity(0, stage, per, tokens, per_tok, mem, note)
    note = "" if tokens >= C else (f"the KV pool holds {tokens:,} tokens, less than one {C:,}-token sequence; "
                                   f"shorter sequences are served")
    return Capacity(tokens // C, stage, per, tokens, per_tok, mem, note)


def capacity(t: CostTables, devices: tuple[int, ...], cuts: tuple[int, ...]) -> Capacity:
    """N_s per stage and N = min_s N_s (module doc)."""
    if t.kv_pool is not None:
        return _engine_capacity(t, devices, cuts)
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
    (the tied embedding is counted once only on a one-stage plan). inf without a KV model.
    With an engine pool: every stage s of a plan holding N sequences has N·C·k_s <= u·M_g·t_g − W_s,
    so summed, N <= (Σ_g u·M_g·t_g − Σ W) / (C·Σ k); llama.cpp: N <= ctx_size // C."""
    if t.kv_pool is not None:
        p = t.kv_pool
        kv_all = float(np.sum(p.kv_bytes)) * max(1, t.context)
        if kv_all <= 0:
            return math.inf
        if p.settings.name == "llamacpp":
            return float(int(p.settings.ctx_size or 4096) // max(1, t.context))
        u = np.array([p.settings.fraction(int(t)) for t in p.tp])
        room = float(np.sum(u * p.visible_bytes * p.tp)) - float(np.sum(p.weight_bytes))
        return max(0.0, room / kv_all)
    kv = stage_kv_gb(t, 0, t.L)
    if kv <= 0 or t.weight_gb is None:
        return math.inf
    room = float(t.capacity_gb.sum()) * (1 + RTOL) + t.G * 1e-12 - (float(t.weight_gb.sum()) - t.tied_gb)
    return max(0.0, room / kv)
