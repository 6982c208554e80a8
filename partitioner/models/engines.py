"""Engine presets (presets/engines.yaml) and the default efficiencies of a GPU under an engine.

The defaults in presets/gpus.yaml `defaults` were fitted by benchmarks/costmodel_fit.py: eta_memory
and the per-token fixed cost by memory type (gddr / hbm / unified) and weight-precision class
(16 / 8 / 4 bits and below), eta_compute by compute class (tensor / inference / fp32), and a memory
efficiency factor for NVIDIA GPUs older than Ampere (compute capability < 8.0). An engine scales
those defaults and adds a per-hop latency. Values a GPU spec gives (a catalogue entry, an inline
`gpu:` mapping, a cluster written by `partition calibrate profile`) are used as given; a spec that
gives any of them is calibrated and ignores the engine's scales (docs/costmodel.md "Efficiency factors").
"""

from __future__ import annotations

from functools import cache
from typing import Any, Literal

from pydantic import Field

from partitioner.costs.kvpool import FLAGS, EngineSettings, version_tuple
from partitioner.models import catalog
from partitioner.models.fields import Frozen, LocatedValueError, NonNegative, Positive

__all__ = ["engine_mapping", "pool_rule", "EngineSpec", "EngineSettings", "resolve_engine", "engine_ids", "precision_class", "default_factors",
           "DEFAULT_ENGINE", "split_engine", "resolve_settings"]

DEFAULT_ENGINE = "generic"


class EngineSpec(Frozen):
    """What an engine adds to the roofline (presets/engines.yaml)."""

    id: str = DEFAULT_ENGINE
    name: str = ""
    # Launch facts (one record per engine; each entry's `launch_source` cites the engine's code):
    launch_order: Literal["any", "ray", "equal_per_node"] = "any"  # device orders it launches as stage order
    min_compute_capability: str | None = None  # "7.0": GPUs below it are left out; None: not checked
    tensor_parallel: Literal["per_stage", "uniform", "none"] = "per_stage"  # TP degrees it takes per pipeline
    serve_port: int | None = None  # the server's default --port (replica r: + r)
    data_parallel_flag: str | None = None  # the option that launches identical replicas as one server
    launch_source: str = ""
    token_overhead_scale: NonNegative = 1.0
    hop_overhead_ms: NonNegative = 0.0
    eta_compute_scale: Positive | dict[Literal["tensor", "inference", "fp32"], Positive] = 1.0  # or per compute class
    eta_memory_scale: Positive = 1.0
    fp16_accumulate: bool = False  # GEMMs accumulate in fp16: GeForce tensor cores run at twice tensor_tflops
    source: str = ""
    settings: dict[str, Any] | None = None  # the engine's default flags for `version` (module doc of costs/kvpool.py)
    large_gpu: dict[str, Any] | None = None  # defaults that change on GPUs of >= min_gib (vLLM get_batch_defaults)
    small_gpu: dict[str, Any] | None = None  # defaults that change on GPUs below max_gib (SGLang ServerArgs)
    memory: dict[str, float] | None = None  # measured memory terms (non-torch GiB, sampler copies)
    # How each release measured its non-KV peak before sizing the KV pool, keyed by the first release
    # of each rule, newest first (costs/kvpool.py module doc; each entry cites the engine's source)
    pool_rules: dict[str, dict[str, Any]] | None = None

    @property
    def min_cc(self) -> tuple[int, int] | None:
        """min_compute_capability as (major, minor)."""
        if self.min_compute_capability is None:
            return None
        major, _, minor = str(self.min_compute_capability).partition(".")
        return int(major), int(minor or 0)
    versions: dict[str, dict[str, Any]] = Field(default_factory=dict)  # launch rules per release (export.versions)

    def compute_scale(self, compute_class: str) -> float:
        """eta_compute_scale for a compute class (a mapping may leave a class out: 1)."""
        scale = self.eta_compute_scale
        return float(scale.get(compute_class, 1.0)) if isinstance(scale, dict) else float(scale)  # type: ignore[call-overload]


def engine_ids() -> tuple[str, ...]:
    """The valid engine ids, in catalogue order."""
    return catalog.ids("engines")


def resolve_engine(engine: str | EngineSpec | None) -> EngineSpec:
    """The EngineSpec of an id (None: generic); ValueError listing the valid ids if unknown."""
    if isinstance(engine, EngineSpec):
        return engine
    return _preset(DEFAULT_ENGINE if engine is None else str(engine))


@cache
def _preset(key: str) -> EngineSpec:
    return EngineSpec.model_validate({"id": key, **catalog.require("engines", key)})


def precision_class(bits: float) -> int:
    """16 for >= 12 bits per weight, 8 for >= 6 (int8, fp8, Q8_0, Q6_K), else 4 (Q4_0, Q4_K_M, Q5_K)."""
    return 16 if bits >= 12 else 8 if bits >= 6 else 4


def default_factors(memory_type: str, compute_class: str, cc: tuple[int, int] | None, bits: float,
                    engine: EngineSpec | None) -> tuple[float, float, float, float]:
    """(eta_compute, eta_memory, overhead per layer s, overhead per token s) from gpus.yaml
    `defaults`, scaled by `engine` (None: unscaled); eta capped at 1."""
    d: dict[str, Any] = catalog.gpu_defaults()
    p = precision_class(bits)
    eta_m = float(d["eta_memory"][memory_type][p])
    if cc is not None and cc < (8, 0):
        eta_m *= float(d["pre_ampere_eta_memory_scale"])
    eta_c = float(d["eta_compute"][compute_class])
    t_token = float(d["token_overhead_ms"][memory_type][p]) / 1e3
    t_layer = float(d["overhead_ms"]) / 1e3
    if engine is not None:
        eta_c, eta_m = eta_c * engine.compute_scale(compute_class), eta_m * engine.eta_memory_scale
        t_token *= engine.token_overhead_scale
    return min(1.0, eta_c), min(1.0, eta_m), t_layer, t_token


_BOUNDS: dict[str, tuple[float, float]] = {"gpu_memory_utilization": (0.0, 1.0), "mem_fraction_static": (0.0, 1.0)}


def engine_mapping(data: Any) -> Any:
    """A model validator's input with `engine:` as a mapping split into its id (`engine`) and its
    flags (`engine_settings`), for cluster.yaml and the model's workload alike."""
    if isinstance(data, dict) and isinstance(data.get("engine"), dict):
        name, flags = split_engine(data["engine"])
        data = {**data, "engine": name, "engine_settings": flags}
    return data


def split_engine(value: Any, where: tuple[str | int, ...] = ("engine",)) -> tuple[str | None, dict[str, Any] | None]:
    """`engine:` as written (an id, or a mapping {name: id, version: ..., <flag>: value}) -> (id,
    flags); a bad key or value raises LocatedValueError at where + key (one line: field and value)."""
    if value is None or isinstance(value, str):
        if isinstance(value, str):
            catalog.require("engines", value)
        return value, None
    if not isinstance(value, dict):
        raise LocatedValueError(where, f"must be an engine id or a mapping with `name:` (got {value!r})")
    name = value.get("name")
    if not isinstance(name, str):
        raise LocatedValueError((*where, "name"), f"a mapping `engine:` needs `name:` (one of {', '.join(engine_ids())})")
    try:
        catalog.require("engines", name)
    except ValueError as exc:
        raise LocatedValueError((*where, "name"), str(exc)) from None
    allowed = ("name", "version", *FLAGS.get(name, ()))
    flags: dict[str, Any] = {}
    for key, v in value.items():
        if key not in allowed:
            raise LocatedValueError((*where, key), f"{key!r} is not a setting of {name} (valid: {', '.join(allowed)})")
        if key == "name":
            continue
        if key == "version":
            flags[key] = str(v)
        elif key == "async_scheduling":
            if not isinstance(v, bool):
                raise LocatedValueError((*where, key), f"must be true or false (got {v!r})")
            flags[key] = v
        elif key in _BOUNDS:
            lo, hi = _BOUNDS[key]
            if isinstance(v, bool) or not isinstance(v, int | float) or not lo < float(v) <= hi:
                raise LocatedValueError((*where, key), f"must be a fraction in ({lo:g}, {hi:g}] (got {v!r})")
            flags[key] = float(v)
        else:
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise LocatedValueError((*where, key), f"must be a positive integer (got {v!r})")
            flags[key] = v
    return name, flags


def resolve_settings(name: str | None, flags: dict[str, Any] | None = None, *, min_visible_gib: float = 0.0,
                     gpu_names: tuple[str, ...] = (), context: int | None = None) -> EngineSettings:
    """The EngineSettings in force: `flags` over the engine's defaults (presets/engines.yaml
    `settings`, and `large_gpu` when every GPU has >= min_gib and none is an A100, as vLLM's
    get_batch_defaults decides, or `small_gpu` below max_gib, as SGLang's ServerArgs does),
    max_model_len / context_length defaulting to the plan's context."""
    spec = resolve_engine(name)
    base: dict[str, Any] = dict(spec.settings or {})
    big, small = spec.large_gpu or {}, spec.small_gpu or {}
    if big and min_visible_gib >= float(big.get("min_gib", 0)) and not any("a100" in g.lower() for g in gpu_names):
        base.update({k: v for k, v in big.items() if k != "min_gib"})
    if small and 0 < min_visible_gib < float(small.get("max_gib", 0)):
        base.update({k: v for k, v in small.items() if k != "max_gib"})
    base.update(flags or {})
    for key in ("max_model_len", "context_length"):
        if key in FLAGS.get(spec.id, ()) and base.get(key) is None and context is not None:
            base[key] = context
    values: dict[str, Any] = {k: v for k, v in base.items() if k in EngineSettings.__dataclass_fields__}
    values.update({k: float(v) for k, v in (spec.memory or {}).items()})
    values["version"] = str(values.get("version") or "")
    rule = pool_rule(spec, values["version"])[1]
    if rule:
        values["peak_rule"] = str(rule["peak"])
        values["allreduce_held"] = bool(rule.get("allreduce_held", False))
        for key, value in (rule.get("settings") or {}).items():  # the release's own defaults, below the user's flags
            if key not in (flags or {}):
                values[key] = value
        ctx = values.get("max_model_len")
        if (rule.get("batched_tokens") == "max_model_len" and "max_num_batched_tokens" not in (flags or {})
                and ctx is not None and int(ctx) <= 32768):
            values["max_num_batched_tokens"] = max(int(ctx), 2048)
    return EngineSettings(name=spec.id, **values)


def pool_rule(spec: EngineSpec, version: str) -> tuple[str, dict[str, Any]]:
    """(first release, rule) of `pool_rules` that `version` follows: the newest rule whose first
    release is <= version (no version: the newest rule); ("", {}) when the engine lists none."""
    rules = spec.pool_rules or {}
    if not rules:
        return "", {}
    def key(text: str) -> tuple[int, ...]:  # "0.4" is release 0.4.0
        parts = version_tuple(text)
        return parts + (0,) * (3 - len(parts))

    ordered = sorted(rules.items(), key=lambda kv: key(kv[0]), reverse=True)
    v = version_tuple(version)
    for since, rule in ordered:
        if not v or key(version) >= key(since):
            return since, rule
    return ordered[-1]
