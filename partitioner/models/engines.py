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

from partitioner.models import catalog
from partitioner.models.fields import Frozen, NonNegative, Positive

__all__ = ["EngineSpec", "resolve_engine", "engine_ids", "precision_class", "default_factors", "DEFAULT_ENGINE"]

DEFAULT_ENGINE = "generic"


class EngineSpec(Frozen):
    """What an engine adds to the roofline (presets/engines.yaml)."""

    id: str = DEFAULT_ENGINE
    name: str = ""
    token_overhead_scale: NonNegative = 1.0
    hop_overhead_ms: NonNegative = 0.0
    eta_compute_scale: Positive | dict[Literal["tensor", "inference", "fp32"], Positive] = 1.0  # or per compute class
    eta_memory_scale: Positive = 1.0
    fp16_accumulate: bool = False  # GEMMs accumulate in fp16: GeForce tensor cores run at twice tensor_tflops
    source: str = ""
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
