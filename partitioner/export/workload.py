"""The workload and serving numbers a launch command carries (dtypes, context, concurrency).

Read from the plan JSON: `workload` (model.yaml's workload section: weights, kv_cache,
activations, context, batch, in_flight) and, when present, `serving` (max_sequences,
context). Each engine maps them to its own flags in its rule module; a value the engine
cannot take from a flag (a pre-quantised int4 checkpoint's method) becomes a warning.
"""

from __future__ import annotations

from dataclasses import dataclass

from partitioner.export.view import PlanView

__all__ = ["Launchable", "launchable", "TORCH_DTYPE"]

TORCH_DTYPE = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


@dataclass(frozen=True)
class Launchable:
    """What the flags say: model id, weight/activation/KV precision, context and sequences."""

    model: str
    model_known: bool
    weights: str | None  # "bf16", "fp16", "fp8", "int8", "int4", "<bits>" or None (profile)
    kv_cache: str | None
    dtype: str | None  # torch dtype name of the activations/weights
    context: int | None
    max_sequences: int | None  # from serving only


def _precision(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{float(value):g}-bit"
    return str(value)


def launchable(view: PlanView, placeholder: str = "MODEL") -> Launchable:
    """The engine-neutral launch values of a plan (serving wins over workload for context)."""
    wl = dict(view.workload or {})
    sv = dict(view.serving or {})
    weights = _precision(wl.get("weights"))
    dtype = TORCH_DTYPE.get(weights or "") or TORCH_DTYPE.get(str(wl.get("activations", ""))) if wl else None
    context = sv.get("context") or wl.get("context")
    seqs = sv.get("max_sequences")
    return Launchable(
        model=view.model_id or placeholder,
        model_known=bool(view.model_id),
        weights=weights,
        kv_cache=_precision(wl.get("kv_cache")),
        dtype=dtype,
        context=int(context) if context else None,
        max_sequences=int(seqs) if seqs else None,
    )
