"""Tensor parallelism inside one node: the per-layer time of a group of t GPUs.

Pure formulas (no files, no pydantic). A stage on a TP group of t GPUs of one node runs every
layer split t ways (Megatron-LM, Shoeybi et al. 2019, §3: column-parallel QKV / gate-up,
row-parallel O / down projections):

    compute  t_c = max over members m of roofline(FLOPs/t, bytes/t, hw_m)        (slowest member)
    comm     per decoder layer two all-reduces of the layer's activations T·h·b_a: one after the
             attention output projection and one after the MLP down projection, each
             RowParallelLinear.forward -> tensor_model_parallel_all_reduce
             (vllm-project/vllm vllm/model_executor/layers/linear.py, RowParallelLinear.forward)
    embed    one all-reduce of T·h·b_a (VocabParallelEmbedding.forward all-reduces its output,
             vllm/model_executor/layers/vocab_parallel_embedding.py)
    head     one gather of the B·V logits (LogitsProcessor._gather_logits,
             vllm/model_executor/layers/logits_processor.py)

Ring collectives on a link of latency alpha and bandwidth beta (Thakur, Rabenseifner, Gropp,
"Optimization of collective communication operations in MPICH", IJHPCA 2005, §4; Patarasuk &
Yuan 2009): reduce-scatter then all-gather, 2(t-1) steps each moving n/t bytes,

    all-reduce  T_ar(n, t) = 2(t-1)·alpha + 2(t-1)/t · n/beta
    all-gather  T_ag(n, t) =  (t-1)·alpha +  (t-1)/t · n/beta

Memory: every rank holds 1/t of the weights and of the KV cache (K/V heads split, which needs
t <= num_key_value_heads, else heads are replicated), so a stage fits a group iff its memory/t
fits the smallest member: the group's capacity is t·min_m C_m.

A group of mixed GPU types runs at its slowest member (each rank waits for the all-reduce).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from partitioner.costs.roofline import Hardware, roofline_time

__all__ = [
    "DEFAULT_TP",
    "ring_allreduce_s",
    "ring_allgather_s",
    "tp_compute_s",
    "tp_layer_s",
    "group_capacity_gb",
    "tp_from_single_s",
    "group_key",
]

DEFAULT_TP: tuple[int, ...] = (1, 2, 4, 8)


def ring_allreduce_s(nbytes: float, t: int, alpha_s: float, beta_Bps: float) -> float:
    """2(t-1)·alpha + 2(t-1)/t · n/beta (Thakur et al. 2005, ring reduce-scatter + all-gather)."""
    if t <= 1:
        return 0.0
    transfer = 0.0 if math.isinf(beta_Bps) else 2.0 * (t - 1) / t * nbytes / beta_Bps
    return 2.0 * (t - 1) * alpha_s + transfer


def ring_allgather_s(nbytes: float, t: int, alpha_s: float, beta_Bps: float) -> float:
    """(t-1)·alpha + (t-1)/t · n/beta for n bytes gathered in all (Thakur et al. 2005, ring)."""
    if t <= 1:
        return 0.0
    transfer = 0.0 if math.isinf(beta_Bps) else (t - 1) / t * nbytes / beta_Bps
    return (t - 1) * alpha_s + transfer


def tp_compute_s(flops: float, nbytes: float, members: Sequence[Hardware]) -> float:
    """Per-rank roofline of FLOPs/t and bytes/t; the slowest member sets the group's time."""
    t = len(members)
    return max(roofline_time(flops / t, nbytes / t, hw) for hw in members)


def tp_layer_s(kind: str, flops: float, nbytes: float, members: Sequence[Hardware], *, act_bytes: float,
               logits_bytes: float, alpha_s: float, beta_Bps: float) -> float:
    """One layer on a TP group: compute ÷ t plus its collectives (module doc).

    kind "decoder": two all-reduces of `act_bytes` (T·h·b_a); "embed": one all-reduce;
    "head": one all-gather of `logits_bytes` (B·V·b_a).
    """
    t = len(members)
    comp = tp_compute_s(flops, nbytes, members)
    if kind == "decoder":
        return comp + 2.0 * ring_allreduce_s(act_bytes, t, alpha_s, beta_Bps)
    if kind == "embed":
        return comp + ring_allreduce_s(act_bytes, t, alpha_s, beta_Bps)
    return comp + ring_allgather_s(logits_bytes, t, alpha_s, beta_Bps)


def tp_from_single_s(single_s: Sequence[float], kind: str, act_bytes: float, alpha_s: float,
                     beta_Bps: float) -> float:
    """A measured profile without a group entry: max_m c_m / t plus the collectives.

    Dividing the whole measured time by t also divides its fixed per-layer overhead, which TP
    does not shrink, so this is optimistic where the overhead matters (small batches).
    """
    t = len(single_s)
    comm = ring_allreduce_s(act_bytes, t, alpha_s, beta_Bps)
    n = 2.0 if kind == "decoder" else (1.0 if kind == "embed" else 0.0)
    return max(single_s) / t + n * comm


def group_capacity_gb(member_capacity_gb: Sequence[float]) -> float:
    """t·min_m C_m: every rank holds 1/t of a stage's weights and KV cache (module doc)."""
    return len(member_capacity_gb) * min(member_capacity_gb)


def group_key(gpu_id: str, t: int) -> str:
    """The profile key of a measured TP group, Helix's naming: ``l4x2`` is two L4s in TP."""
    return gpu_id if t == 1 else f"{gpu_id}x{t}"
