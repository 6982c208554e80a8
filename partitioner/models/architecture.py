"""`Architecture`: a decoder-only transformer as HuggingFace config.json describes it (model.yaml
`architecture:`, `hf_config:` and the presets of presets/models.yaml). Its own module so that
partitioner.models.hf (config.json -> Architecture) and partitioner.models.llm (which reads
`hf_config:`) import it without importing each other."""

from __future__ import annotations

from pydantic import model_validator

from partitioner.models.fields import Frozen, LocatedValueError, PositiveInt

__all__ = ["Architecture"]


class Architecture(Frozen):
    """A decoder-only transformer, HuggingFace config.json field names verbatim."""

    num_hidden_layers: PositiveInt
    hidden_size: PositiveInt
    intermediate_size: PositiveInt
    num_attention_heads: PositiveInt
    num_key_value_heads: PositiveInt | None = None  # None: = num_attention_heads (MHA)
    head_dim: PositiveInt | None = None  # None: hidden_size / num_attention_heads
    vocab_size: PositiveInt
    tie_word_embeddings: bool = False
    attention_bias: bool = False  # QKV bias (Qwen2)
    num_local_experts: PositiveInt | None = None  # MoE: experts per layer (HF also: num_experts)
    num_experts_per_tok: PositiveInt | None = None  # MoE: top-k
    moe_intermediate_size: PositiveInt | None = None  # MoE expert width if != intermediate_size

    @model_validator(mode="after")
    def _shapes(self) -> Architecture:
        H, kv = self.num_attention_heads, self.kv_heads
        if H % kv:
            raise LocatedValueError(
                ("num_key_value_heads",), f"must divide num_attention_heads={H} (got {kv})"
            )
        if self.head_dim is None and self.hidden_size % H:
            raise LocatedValueError(
                ("num_attention_heads",),
                f"must divide hidden_size={self.hidden_size} unless head_dim is set (got {H})",
            )
        E, k = self.num_local_experts, self.num_experts_per_tok
        if (E is None) != (k is None):
            raise LocatedValueError(
                ("num_experts_per_tok" if k is None else "num_local_experts",),
                "MoE needs both num_local_experts and num_experts_per_tok",
            )
        if E is not None and k is not None and k > E:
            raise LocatedValueError(("num_experts_per_tok",), f"must be <= num_local_experts={E} (got {k})")
        return self

    @property
    def kv_heads(self) -> int:
        return self.num_key_value_heads or self.num_attention_heads

    @property
    def d_head(self) -> int:
        return self.head_dim or self.hidden_size // self.num_attention_heads
