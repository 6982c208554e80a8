"""model.yaml: what the user serves, in exactly one of three forms (docs/costmodel.md).

1. ``preset: llama-3.1-8b`` (a catalogue id, presets/models.yaml);
2. ``architecture:`` (HuggingFace config.json names) or ``hf_config: config.json``;
3. ``layers:`` a measured per-layer profile.
Forms 1-2 take a ``workload:`` section that the roofline cost model (partitioner.costs) reads.
"""

from __future__ import annotations

import itertools
from typing import Any, Literal

from pydantic import Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from partitioner.models import catalog
from partitioner.models.architecture import Architecture
from partitioner.models.fields import (
    EngineField,
    Frozen,
    LocatedValueError,
    Name,
    NonNegative,
    NonNegativeInt,
    Positive,
    PositiveInt,
)

__all__ = ["Precision", "Architecture", "Workload", "LayerEntry", "ModelSpec"]

Precision = Literal["bf16", "fp16", "fp8", "int8", "int4"] | Positive  # a number: bits per weight


class Workload(Frozen):
    """What one micro-batch is (forms 1-2)."""

    weights: Precision = "bf16"  # weight precision, or bits per weight (4.85 = Q4_K_M)
    kv_cache: Precision = "bf16"
    activations: Literal["bf16", "fp16", "fp32"] = "bf16"  # dtype of the tensors sent at a cut
    phase: Literal["decode", "prefill"] = "decode"
    batch: PositiveInt = 1  # sequences per micro-batch
    prompt_tokens: PositiveInt = 512  # tokens per sequence processed in prefill
    context: PositiveInt = 4096  # context length: KV positions read in decode, KV held in memory
    in_flight: PositiveInt = 1  # micro-batches whose KV caches share a stage's memory
    engine: EngineField = None  # presets/engines.yaml id (as cluster.yaml `engine:`); or a mapping {name: id, <flag>: value}
    engine_settings: dict[str, Any] | None = None  # the flags of a mapping `engine:` (models/engines.py split_engine)

    @model_validator(mode="before")
    @classmethod
    def _engine_mapping(cls, data: Any) -> Any:
        """`engine:` as a mapping keeps its id in `engine` and its flags in `engine_settings`."""
        from partitioner.models.engines import engine_mapping

        return engine_mapping(data)

    # The request mix (partitioner.analysis.chunked): mean tokens, or a histogram {tokens: weight}.
    # With both given, serving numbers include chunked prefill; without them, pure decode.
    input_tokens: NonNegativeInt | dict[NonNegativeInt, Positive] | None = None  # prompt tokens per request
    output_tokens: PositiveInt | dict[PositiveInt, Positive] | None = None  # generated tokens per request
    request_rate: Positive | None = None  # requests/s (Poisson), or
    concurrency: PositiveInt | None = None  # clients, each sending the next request when one ends

    @field_validator("engine")
    @classmethod
    def _known_engine(cls, value: str | None) -> str | None:
        if value is not None:
            catalog.require("engines", value)
        return value

    @model_validator(mode="after")
    def _mix(self) -> Workload:
        if (self.input_tokens is None) != (self.output_tokens is None):
            field = "output_tokens" if self.output_tokens is None else "input_tokens"
            raise LocatedValueError((field,), "input_tokens and output_tokens go together (give both or neither)")
        if self.request_rate is not None and self.concurrency is not None:
            raise LocatedValueError(("concurrency",), "give request_rate or concurrency, not both")
        if self.input_tokens is None and (self.request_rate is not None or self.concurrency is not None):
            field = "request_rate" if self.request_rate is not None else "concurrency"
            raise LocatedValueError((field,), "a load needs input_tokens and output_tokens")
        return self

    @model_validator(mode="after")
    def _context(self) -> Workload:
        if self.context < self.prompt_tokens:
            raise LocatedValueError(
                ("context",), f"must be >= prompt_tokens={self.prompt_tokens} (got {self.context})"
            )
        return self


BatchTable = dict[PositiveInt, Positive]  # {batch size (or prompt tokens): seconds}, sizes rising
Cost = dict[str, Positive | BatchTable]


def _check_cost(value: dict[str, Any]) -> dict[str, Any]:
    """At least one key; every batch table non-empty with strictly increasing sizes as written."""
    if not value:
        raise ValueError("needs at least one GPU id or device name")
    for key, table in value.items():
        if isinstance(table, dict):
            sizes = list(table)
            if not sizes:
                raise LocatedValueError((key,), "a batch table needs at least one size: seconds row")
            for a, b in itertools.pairwise(sizes):
                if b <= a:
                    raise LocatedValueError((key,), f"batch sizes must increase (got {b} after {a})")
    return value


class LayerEntry(Frozen):
    """One measured layer (form 3). `cost` keys: GPU ids or device names (a device name wins).

    A cost is seconds per micro-batch, or a table ``{1: s, 8: s, 32: s}`` of seconds at each
    batch size, interpolated linearly (an error outside it). `prefill_cost` is the same keyed by
    prompt tokens (one prompt's pass; the TTFT is reported when every entry has one). `memory_gb`
    excludes the KV cache, which is
    kv_bytes_per_token per token of every sequence held (default 0: memory_gb is all of it).
    """

    name: Name
    cost: Cost  # seconds per micro-batch, or {batch: seconds}
    memory_gb: NonNegative
    out_bytes: NonNegative = 0.0  # bytes sent on if the pipeline is cut after this layer
    repeat: PositiveInt = 1
    kind: Literal["embed", "decoder", "head"] = "decoder"
    params: NonNegativeInt = 0
    kv_bytes_per_token: NonNegative = 0.0
    prefill_cost: Cost | None = None  # {gpu: seconds or {prompt tokens: seconds}}

    @field_validator("cost")
    @classmethod
    def _non_empty(cls, value: dict[str, Any]) -> dict[str, Any]:
        return _check_cost(value)

    @field_validator("prefill_cost")
    @classmethod
    def _prefill(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if value is None else _check_cost(value)

    @property
    def batch_dependent(self) -> bool:
        return any(isinstance(v, dict) for v in self.cost.values())


_FORMS = ("preset", "architecture", "hf_config", "layers")
PROFILE_WORKLOAD = ("batch", "prompt_tokens", "context", "in_flight")


class ModelSpec(Frozen):
    """A validated model.yaml. Exactly one of preset / architecture / hf_config / layers."""

    name: str = ""  # display name (default: the preset's name or the file name)
    hf_id: str | None = None  # engine-usable model id or path (default: the preset's hf_id)
    preset: str | None = None
    architecture: Architecture | None = None
    hf_config: str | None = None  # path to a config.json, relative to the YAML file
    layers: tuple[LayerEntry, ...] | None = Field(default=None, min_length=1)
    workload: Workload = Workload()
    _arch: Architecture | None = PrivateAttr(default=None)  # resolved hf_config (set by the loader)
    _source: Any = PrivateAttr(default=None)  # loader.Source: file name and line marks
    _base_batch: int | None = PrivateAttr(default=None)  # a profile's own batch when a search changes it

    def with_batch(self, batch: int, in_flight: int = 1) -> ModelSpec:
        """The same model at another batch and in_flight (the serve search re-costs per batch)."""
        copy = self.model_copy(update={"workload": self.workload.model_copy(
            update={"batch": batch, "in_flight": in_flight})})
        copy._base_batch = self._base_batch or self.workload.batch
        return copy

    @model_validator(mode="before")
    @classmethod
    def _default_name(cls, data: Any, info: ValidationInfo) -> Any:
        if not isinstance(data, dict) or data.get("name"):
            return data
        name = (info.context or {}).get("stem") or "model"
        preset = data.get("preset")
        if isinstance(preset, str) and preset in catalog.entries("models"):
            name = catalog.entries("models")[preset]["name"]
        return {**data, "name": name}

    @field_validator("preset")
    @classmethod
    def _known(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                catalog.require("models", value)
            except ValueError as exc:  # any model works without a preset: say how
                raise ValueError(f"{exc}. A model that is not a preset: give `hf_config: path/to/config.json` "
                                 "(its HuggingFace config.json) or `architecture: {num_hidden_layers: ..., "
                                 "hidden_size: ..., ...}` instead of `preset:`") from None
        return value

    @model_validator(mode="after")
    def _one_form(self) -> ModelSpec:
        given = [f for f in _FORMS if getattr(self, f) is not None]
        if len(given) != 1:
            got = ", ".join(given) if given else "none"
            raise ValueError(f"give exactly one of preset, architecture, hf_config, layers (got {got})")
        if self.layers is not None and "workload" in self.model_fields_set:
            extra = sorted(self.workload.model_fields_set - set(PROFILE_WORKLOAD))
            if extra:
                raise LocatedValueError(
                    ("workload", extra[0]),
                    f"a measured profile (layers:) takes only {', '.join(PROFILE_WORKLOAD)} in its "
                    "workload (its precision and phase are in its numbers)",
                )
        return self

    @property
    def is_profile(self) -> bool:
        return self.layers is not None

    @property
    def model_id(self) -> str | None:
        """What an engine loads: `hf_id:`, else the preset's `hf_id`, else None."""
        if self.hf_id:
            return self.hf_id
        if self.preset is not None:
            value = catalog.require("models", self.preset).get("hf_id")
            return str(value) if value else None
        return None

    @property
    def arch(self) -> Architecture | None:
        """The architecture of forms 1-2 (None for a profile)."""
        if self._arch is not None:
            return self._arch
        if self.architecture is not None:
            return self.architecture
        if self.preset is not None:
            return Architecture.model_validate(catalog.require("models", self.preset)["architecture"])
        if self.hf_config is not None:
            from partitioner.models.hf import load_hf_config

            return load_hf_config(self.hf_config)
        return None

    def locate(self, *path: str | int) -> tuple[str | None, int | None]:
        """(file, line) of a YAML path in the file this spec was loaded from, if known."""
        if self._source is None:
            return None, None
        return self._source.file, self._source.line(path)
