"""Read a HuggingFace config.json into an `Architecture` (model.yaml `hf_config:`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from partitioner.errors import ConfigError
from partitioner.models.architecture import Architecture
from partitioner.userfiles import read_user_text

__all__ = ["load_hf_config", "architecture_from_hf"]

_REQUIRED = ("num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads", "vocab_size")
_OPTIONAL = (
    "num_key_value_heads", "head_dim", "tie_word_embeddings", "attention_bias",
    "num_local_experts", "num_experts_per_tok", "moe_intermediate_size",
)
_BIAS_BY_DEFAULT = ("qwen2", "qwen2_moe")  # Qwen2 has QKV bias without an `attention_bias` key
_DECODER_SUFFIXES = ("ForCausalLM", "LMHeadModel")


def _not_decoder(data: dict[str, Any]) -> str | None:
    """Why this config is not a decoder-only LLM, or None."""
    if data.get("is_encoder_decoder"):
        return "is_encoder_decoder is true"
    archs = data.get("architectures")
    if isinstance(archs, list) and archs and not any(str(a).endswith(_DECODER_SUFFIXES) for a in archs):
        return f"architectures {archs} has no *ForCausalLM"
    return None


def architecture_from_hf(data: Any, file: str) -> Architecture:
    """The decoder-LLM shapes of a config.json mapping; ConfigError if it is not one."""
    from pydantic import ValidationError

    if not isinstance(data, dict):
        raise ConfigError(f"expected a JSON object (got {type(data).__name__})", file=file)
    why = _not_decoder(data)
    if why:
        raise ConfigError(f"not a decoder LLM config: {why}", file=file, location="architectures")
    missing = [k for k in _REQUIRED if k not in data]
    if missing:
        raise ConfigError(
            f"not a decoder LLM config: missing {', '.join(missing)} (model_type {data.get('model_type')!r})",
            file=file,
        )
    fields = {k: data[k] for k in _REQUIRED + _OPTIONAL if data.get(k) is not None}
    if "num_local_experts" not in fields and data.get("num_experts"):
        fields["num_local_experts"] = data["num_experts"]
    if data.get("model_type") in _BIAS_BY_DEFAULT:
        fields.setdefault("attention_bias", True)
    try:
        return Architecture.model_validate(fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        raise ConfigError(f"{err['msg']} (got {err.get('input')!r})", file=file, location=loc) from None


def load_hf_config(path: str | Path, shown: str | None = None) -> Architecture:
    """Parse the config.json at `path` (ConfigError naming it when missing, malformed, not a regular
    file or beyond the limits of partitioner.limits: MAX_YAML_BYTES, MAX_YAML_DEPTH, MAX_INT_DIGITS)."""
    from partitioner.jsonio import loads_user

    name = shown or str(path)
    text = read_user_text(path, name, limit_name="MAX_YAML_BYTES")
    return architecture_from_hf(loads_user(text, name), name)
