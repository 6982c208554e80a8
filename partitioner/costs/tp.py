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

Fitted at serving batches (`TpFit`, `fit_tp`). Measured TP groups gain less than the ring model
says, more so at large batches: Helix's LLaMA-2-70B decode tables (Thesys-lab/Helix-ASPLOS25
commit 148b7330, simulator/model_manager/llama2_70b/{l4,l4x2,t4,t4x2,t4x4}/decode_bs2time.csv)
give 1.68x for two L4 at batch 100 where c/t plus the ring all-reduces predict 1.91x. Two
constants close the gap:

    T_group(B) = (T_1(B) - o)/t + o + 2·T_ar(B·h·b_a, t, 0, beta/k)

o: per-layer time TP does not shrink (kernel launches and the all-reduces' fixed cost, which
replaces the ring's 2(t-1)·alpha: with the links' alpha the left-out t4x4 table is 10.8 % off
at batch 100, without it 8.7 %); k: the
all-reduce runs at beta/k (NCCL over PCIe without peer-to-peer stages through host memory; the
T4 boxes are PCIe Gen3, the L4 boxes Gen4: links.yaml pcie3 / pcie4). `fit_tp` finds (o, k)
minimising the largest relative error (Lawson's iteratively reweighted least squares, a
minimax fit of a linear model); DEFAULT_FIT is its result on all three tables at batches
8-100 (benchmarks/tp_fit.py prints it with each table left out in turn).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from partitioner.costs.roofline import Hardware, roofline_time

__all__ = [
    "DEFAULT_TP",
    "TpFit",
    "TpSample",
    "DEFAULT_FIT",
    "group_time_s",
    "fit_tp",
    "relative_errors",
    "ring_allreduce_s",
    "ring_allgather_s",
    "tp_compute_s",
    "tp_layer_s",
    "group_capacity_gb",
    "tp_from_single_s",
    "group_key",
]

DEFAULT_TP: tuple[int, ...] = (1, 2, 4, 8)


@dataclass(frozen=True)
class TpFit:
    """The two fitted constants of a TP group's time (module doc)."""

    overhead_s: float = 0.0  # o: per-layer time TP does not divide by t
    bandwidth_factor: float = 1.0  # k: all-reduces run at the link's beta / k


# fit_tp on Helix's l4x2, t4x2 and t4x4 LLaMA-2-70B decode tables at batches 8-100, with the
# pcie4 (L4) and pcie3 (T4) presets: largest error 7.6 % (benchmarks/tp_fit.py)
DEFAULT_FIT = TpFit(overhead_s=1.115e-4, bandwidth_factor=5.057)


@dataclass(frozen=True)
class TpSample:
    """One measured group time against its single-GPU time at the same batch."""

    single_s: float  # T_1(B): one GPU, one layer
    group_s: float  # T_group(B): measured
    t: int
    act_bytes: float  # B·h·b_a: one all-reduce's message
    beta_Bps: float  # the intra-node link


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
    "head": one all-gather of `logits_bytes` (B·V·b_a). Collectives at beta / DEFAULT_FIT's k; the
    roofline's fixed per-layer time is already undivided (roofline_time adds it once).
    """
    t = len(members)
    comp = tp_compute_s(flops, nbytes, members)
    beta_Bps = beta_Bps / DEFAULT_FIT.bandwidth_factor  # measured all-reduce speed (module doc)
    if kind == "decoder":
        return comp + 2.0 * ring_allreduce_s(act_bytes, t, alpha_s, beta_Bps)
    if kind == "embed":
        return comp + ring_allreduce_s(act_bytes, t, alpha_s, beta_Bps)
    return comp + ring_allgather_s(logits_bytes, t, alpha_s, beta_Bps)


def group_time_s(single_s: float, t: int, act_bytes: float, beta_Bps: float, fit: TpFit,
                 allreduces: float = 2.0) -> float:
    """(T_1 - o)/t + o + n·T_ar(act, t, 0, beta/k): a layer's time on t GPUs (module doc)."""
    if t <= 1:
        return single_s
    o = min(fit.overhead_s, single_s)
    return (single_s - o) / t + o + allreduces * ring_allreduce_s(act_bytes, t, 0.0, beta_Bps / fit.bandwidth_factor)


def tp_from_single_s(single_s: Sequence[float], kind: str, act_bytes: float, beta_Bps: float,
                     fit: TpFit = DEFAULT_FIT) -> float:
    """A measured profile without a group entry: `group_time_s` of the slowest member's time,
    two all-reduces for a decoder layer, one for the embedding, none for the head."""
    n = 2.0 if kind == "decoder" else (1.0 if kind == "embed" else 0.0)
    return group_time_s(max(single_s), len(single_s), act_bytes, beta_Bps, fit, n)


def _design(samples: Sequence[TpSample]) -> tuple[np.ndarray, np.ndarray]:
    """Rows of the relative residual, linear in (o, k): (pred - measured)/measured = A·(o, k) - y."""
    a = np.array([[(1.0 - 1.0 / s.t) / s.group_s,
                   2.0 * ring_allreduce_s(s.act_bytes, s.t, 0.0, s.beta_Bps) / s.group_s] for s in samples])
    y = np.array([(s.group_s - s.single_s / s.t) / s.group_s for s in samples])
    return a, y


def fit_tp(samples: Sequence[TpSample], iterations: int = 400) -> TpFit:
    """(o, k) minimising the largest relative error over `samples` (Lawson's algorithm: weighted
    least squares, each weight multiplied by its residual; C. L. Lawson, 1961). Needs two samples
    of different t or batch; ValueError otherwise."""
    if len(samples) < 2:
        raise ValueError(f"fit_tp needs at least 2 samples (got {len(samples)})")
    a, y = _design(samples)
    if np.linalg.matrix_rank(a) < 2:
        raise ValueError("fit_tp needs samples that separate o from k (two batch sizes or group sizes)")
    w = np.full(len(y), 1.0 / len(y))
    coef = np.zeros(2)
    for _ in range(iterations):
        sw = np.sqrt(w)
        coef = np.linalg.lstsq(a * sw[:, None], y * sw, rcond=None)[0]
        r = np.abs(a @ coef - y)
        if float(r.sum()) <= 0.0:
            break
        w = w * r
        w /= w.sum()
    o, k = float(coef[0]), float(coef[1])
    if k <= 0:
        raise ValueError(f"fit_tp: the samples give a non-positive all-reduce time (k = {k:.3g})")
    return TpFit(overhead_s=max(0.0, o), bandwidth_factor=k)


def relative_errors(samples: Sequence[TpSample], fit: TpFit) -> np.ndarray:
    """(predicted - measured) / measured of every sample under `fit`."""
    return np.array([group_time_s(s.single_s, s.t, s.act_bytes, s.beta_Bps, fit) / s.group_s - 1.0
                     for s in samples])


def group_capacity_gb(member_capacity_gb: Sequence[float]) -> float:
    """t·min_m C_m: every rank holds 1/t of a stage's weights and KV cache (module doc)."""
    return len(member_capacity_gb) * min(member_capacity_gb)


def group_key(gpu_id: str, t: int) -> str:
    """The profile key of a measured TP group, Helix's naming: ``l4x2`` is two L4s in TP."""
    return gpu_id if t == 1 else f"{gpu_id}x{t}"
