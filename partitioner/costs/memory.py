"""Memory per layer: weights + KV cache of the micro-batches in flight + a workspace share.

docs/costmodel.md "Memory per layer": b_w·P_layer + KV(B_max, C_max) + workspace; GB = 1e9 bytes.
The runtime's fixed needs (CUDA context, allocator slack, the MLP's transient intermediate)
are the per-device `reserve_gb` of cluster.yaml, not charged per layer.
"""

from __future__ import annotations

from partitioner.costs.roofline import Shape, Work, embed_params, head_params, kv_bytes_per_token, layer_params

__all__ = ["GB", "kv_cache_gb", "workspace_gb", "decoder_memory_gb", "embed_memory_gb", "head_memory_gb", "tied_gb"]

GB = 1e9


def kv_cache_gb(s: Shape, w: Work) -> float:
    """in_flight · B · C · 2·kv·d·b_kv per layer (C: context in decode, prompt in prefill)."""
    return w.in_flight * w.B * w.kv_tokens * kv_bytes_per_token(s, w.b_kv) / GB


def workspace_gb(s: Shape, w: Work) -> float:
    """Live activations a layer holds while it runs: T·h·b_a for hidden, residual, attention
    output and MLP input (4 tensors)."""
    return 4.0 * w.T * s.h * w.b_a / GB


def decoder_memory_gb(s: Shape, w: Work) -> float:
    """Weights b_w·P_layer + KV cache + workspace of one decoder layer."""
    return w.b_w * layer_params(s) / GB + kv_cache_gb(s, w) + workspace_gb(s, w)


def embed_memory_gb(s: Shape, w: Work) -> float:
    """The embedding table b_e·V·h plus the workspace of its output (b_e: roofline.Work.b_e)."""
    return w.b_e * embed_params(s) / GB + workspace_gb(s, w)


def head_memory_gb(s: Shape, w: Work) -> float:
    """LM head (V·h + final norm; tied: the copy of the embedding) plus B·V logits."""
    return (w.b_e * head_params(s) + w.B * s.V * w.b_a) / GB


def tied_gb(s: Shape, w: Work) -> float:
    """GB saved when embedding and a tied LM head share a device: one V·h copy (0 if untied)."""
    return w.b_e * embed_params(s) / GB if s.tie else 0.0
