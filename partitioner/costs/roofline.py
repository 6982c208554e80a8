"""Roofline cost of one layer: parameters, FLOPs and bytes per component, and the time.

Pure functions over two frozen dataclasses (no pydantic, no I/O). Notation and formulas:
docs/costmodel.md "Formulas (per decoder layer)": h hidden, i intermediate, H q-heads,
kv KV-heads, d head_dim, V vocab, E/k experts/top-k, b_w/b_kv/b_a bytes per weight/KV/activation,
T new tokens in the step, C context.

    t = max(FLOPs / (eta_c * F), bytes / (eta_m * BW)) + t_fixed          (docs/costmodel.md)

plus a fixed cost t_token per token (one decode step or prefill pass of a micro-batch: kernel
launches, sampling, synchronisation), charged once per pipeline with the LM head
(partitioner.costs.tables). Defaults: presets/gpus.yaml `defaults` and presets/engines.yaml.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "PRECISIONS",
    "precision_bytes",
    "Shape",
    "Work",
    "Hardware",
    "attn_params",
    "mlp_params",
    "norm_params",
    "layer_params",
    "embed_params",
    "head_params",
    "total_params",
    "experts_touched",
    "kv_bytes_per_token",
    "attn_flops",
    "layer_flops",
    "layer_bytes",
    "embed_flops",
    "embed_bytes",
    "head_flops",
    "head_bytes",
    "cut_bytes",
    "roofline_time",
]


PRECISIONS: dict[str, float] = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}


def precision_bytes(p: str | float) -> float:
    """Bytes per element: a named dtype, or bits per weight / 8 (e.g. 4.85 for Q4_K_M)."""
    return PRECISIONS[p] if isinstance(p, str) else float(p) / 8.0


@dataclass(frozen=True)
class Shape:
    """A decoder-only transformer's shapes (HF config names in the comments)."""

    L: int  # num_hidden_layers
    h: int  # hidden_size
    i: int  # intermediate_size (MoE: expert width)
    H: int  # num_attention_heads
    kv: int  # num_key_value_heads
    d: int  # head_dim
    V: int  # vocab_size
    tie: bool = False  # tie_word_embeddings
    bias: bool = False  # attention_bias (QKV bias)
    E: int = 1  # num_local_experts (1: dense)
    k: int = 1  # num_experts_per_tok

    @classmethod
    def of(cls, arch: Any) -> Shape:
        """From a `partitioner.models.Architecture` (duck-typed)."""
        moe = arch.num_local_experts is not None
        return cls(
            L=arch.num_hidden_layers, h=arch.hidden_size,
            i=(arch.moe_intermediate_size or arch.intermediate_size) if moe else arch.intermediate_size,
            H=arch.num_attention_heads, kv=arch.kv_heads, d=arch.d_head, V=arch.vocab_size,
            tie=arch.tie_word_embeddings, bias=arch.attention_bias,
            E=arch.num_local_experts or 1, k=arch.num_experts_per_tok or 1,
        )


@dataclass(frozen=True)
class Work:
    """One micro-batch: B sequences, S prompt tokens each, context C, `in_flight` micro-batches."""

    b_w: float  # bytes per weight
    b_kv: float  # bytes per KV element
    b_a: float  # bytes per activation element
    phase: str  # "decode" or "prefill"
    B: int
    S: int
    C: int
    in_flight: int = 1
    b_ends: float | None = None  # bytes per embedding / LM-head weight; None: b_w

    @classmethod
    def of(cls, workload: Any) -> Work:
        """From a `partitioner.models.Workload` (duck-typed). The embedding and LM head stay 16-bit
        in fp8 / int8 / int4 checkpoints: vLLM's quantisation methods quantise Linear layers only
        and skip the LM head (vllm/model_executor/layers/quantization/fp8.py `Fp8Config`,
        `Fp8Config.get_quant_method` returns a quantised method for LinearBase, FusedMoE and
        Attention only, so VocabParallelEmbedding and ParallelLMHead stay in the checkpoint's 16-bit
        dtype; AWQ/GPTQ likewise quantise linear layers), so Llama-3-70B-FP8 keeps 2 x 2.1 GB there.
        A number of bits per weight (a GGUF file) applies to every tensor as given."""
        weights = workload.weights
        b_w = precision_bytes(weights)
        ends = 2.0 if weights in ("fp8", "int8", "int4") else None
        return cls(
            b_w=b_w, b_kv=precision_bytes(workload.kv_cache),
            b_a=precision_bytes(workload.activations), phase=workload.phase, B=workload.batch,
            S=workload.prompt_tokens, C=workload.context, in_flight=workload.in_flight, b_ends=ends,
        )

    @property
    def b_e(self) -> float:
        """Bytes per weight of the embedding table and the LM head."""
        return self.b_w if self.b_ends is None else self.b_ends

    @property
    def T(self) -> int:
        """New tokens in one step: B in decode, B*S in prefill."""
        return self.B if self.phase == "decode" else self.B * self.S

    @property
    def kv_tokens(self) -> int:
        """KV positions held per sequence: the context in decode, the prompt in prefill."""
        return self.C if self.phase == "decode" else self.S


@dataclass(frozen=True)
class Hardware:
    """Peak rates of one device and its efficiencies (gpus.yaml, engines.yaml)."""

    F: float  # FLOP/s: tensor rate (GeForce: FP32-accumulate), else FP32
    BW: float  # bytes/s
    eta_c: float
    eta_m: float
    t_fixed: float  # seconds per layer per micro-batch
    t_token: float = 0.0  # seconds per token (micro-batch step) per pipeline, charged with the LM head

    @classmethod
    def of(cls, gpu: Any, bits: float = 16.0, engine: Any = None) -> Hardware:
        """From a `partitioner.models.GpuSpec` (duck-typed): tensor rate if any, else FP32; the
        efficiencies for weights of `bits` per weight under `engine` (None: generic)."""
        eta_c, eta_m, t_fixed, t_token = gpu.factors(bits, engine)
        return cls(F=gpu.peak_flops(engine), BW=gpu.bandwidth_gb_s * 1e9, eta_c=eta_c, eta_m=eta_m, t_fixed=t_fixed,
                   t_token=t_token)


def attn_params(s: Shape) -> int:
    """h·H·d (Q) + 2·h·kv·d (K,V) + H·d·h (O), + H·d + 2·kv·d QKV bias (docs/costmodel.md)."""
    p = s.h * s.H * s.d + 2 * s.h * s.kv * s.d + s.H * s.d * s.h
    return p + (s.H * s.d + 2 * s.kv * s.d if s.bias else 0)


def mlp_params(s: Shape, experts: float | None = None) -> float:
    """Gated SwiGLU 3·h·i per expert, plus the router h·E for MoE (docs/costmodel.md)."""
    n = s.E if experts is None else experts
    return 3 * s.h * s.i * n + (s.h * s.E if s.E > 1 else 0)


def norm_params(s: Shape) -> int:
    """Two RMSNorms per layer: 2h (docs/costmodel.md)."""
    return 2 * s.h


def layer_params(s: Shape) -> int:
    """All parameters of one decoder layer."""
    return int(attn_params(s) + mlp_params(s) + norm_params(s))


def embed_params(s: Shape) -> int:
    """Token embedding V·h (docs/costmodel.md)."""
    return s.V * s.h


def head_params(s: Shape) -> int:
    """LM head V·h plus the final norm h; a tied head still holds a copy (docs/costmodel.md)."""
    return s.V * s.h + s.h


def total_params(s: Shape) -> int:
    """L·P_layer + V·h·(1 if tied else 2) + h: the published model size (docs/costmodel.md table)."""
    return s.L * layer_params(s) + s.V * s.h * (1 if s.tie else 2) + s.h


def experts_touched(s: Shape, T: int) -> float:
    """Expected distinct experts used by T tokens: E·(1 − (1 − k/E)^T) (docs/costmodel.md)."""
    if s.E <= 1:
        return 1.0
    return s.E * (1.0 - (1.0 - s.k / s.E) ** T)


def kv_bytes_per_token(s: Shape, b_kv: float) -> float:
    """KV cache per token per layer: 2·kv·d·b_kv (docs/costmodel.md; all tools agree)."""
    return 2 * s.kv * s.d * b_kv


def attn_flops(s: Shape, w: Work) -> float:
    """Score and value FLOPs: 4·H·d·Σ_t C_t; causal prefill Σ_t C_t = B·S(S+1)/2 (docs/costmodel.md)."""
    if w.phase == "decode":
        return 4.0 * s.H * s.d * w.B * w.C
    return 4.0 * s.H * s.d * w.B * w.S * (w.S + 1) / 2


def layer_flops(s: Shape, w: Work) -> float:
    """2·T·P_active (k experts per token) + attention (docs/costmodel.md)."""
    active = attn_params(s) + mlp_params(s, experts=s.k) + norm_params(s)
    return 2.0 * w.T * active + attn_flops(s, w)


def layer_bytes(s: Shape, w: Work) -> float:
    """Weights read once per step (experts touched only) + KV read B·C·2·kv·d·b_kv + KV write T·2·kv·d·b_kv.

    docs/costmodel.md "Decode bytes per step"; in prefill the KV of the new tokens is written.
    """
    weights = attn_params(s) + mlp_params(s, experts=experts_touched(s, w.T)) + norm_params(s)
    kv_read = w.B * w.C * kv_bytes_per_token(s, w.b_kv) if w.phase == "decode" else 0.0
    return w.b_w * weights + kv_read + w.T * kv_bytes_per_token(s, w.b_kv)


def embed_flops(s: Shape, w: Work) -> float:
    """An embedding lookup does no arithmetic."""
    return 0.0


def embed_bytes(s: Shape, w: Work) -> float:
    """T rows of the table read (b_e) and written as activations (b_a)."""
    return w.T * s.h * (w.b_e + w.b_a)


def head_flops(s: Shape, w: Work) -> float:
    """2·T_out·h·V with T_out = B: logits only at sampled positions, as vLLM (docs/costmodel.md)."""
    return 2.0 * w.B * s.h * s.V


def head_bytes(s: Shape, w: Work) -> float:
    """The LM head and final norm read once per step, plus the B·V logits written."""
    return w.b_e * head_params(s) + w.B * s.V * w.b_a


def cut_bytes(s: Shape, w: Work) -> float:
    """T·h·b_a·2: vLLM sends hidden_states and residual between PP ranks (docs/costmodel.md [S9])."""
    return 2.0 * w.T * s.h * w.b_a


def roofline_time(flops: float, nbytes: float, hw: Hardware) -> float:
    """max(FLOPs/(eta_c·F), bytes/(eta_m·BW)) + t_fixed, in seconds (docs/costmodel.md)."""
    return max(flops / (hw.eta_c * hw.F), nbytes / (hw.eta_m * hw.BW)) + hw.t_fixed
