"""A cluster.yaml mapping with fitted efficiencies written into its devices' `gpu:` entries.

Pure: the user's cluster mapping (as parsed) and an `EfficiencyFit` in, a new mapping out; the
input is not modified. A device whose GPU type was fitted gets ``gpu: {base: <catalogue id>,
eta_compute: .., eta_memory: .., overhead_ms: ..}`` (an inline spec keeps its fields and gets
these updated), which `partitioner.models.load_cluster` reads as a catalogue GPU with
overridden efficiencies (cluster.py GpuSpec). Only the factors the data moved are written
(fitted, at a bound, or clamped); an unidentified factor keeps inheriting its default.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from partitioner.calibrate.fit import EfficiencyFit, GpuFit

__all__ = ["fitted_factors", "calibrated_cluster"]

_MOVED = ("fitted", "bound", "clamped")


def _sig(x: float) -> float:
    """6 significant digits: readable, and within 1e-6 of the fitted prediction."""
    return float(f"{x:.6g}")


def fitted_factors(g: GpuFit) -> dict[str, float]:
    """The factors of `g` the data moved, in cluster.yaml units (eta_*, overhead_ms)."""
    values = (min(1.0, _sig(g.fitted.eta_c)), min(1.0, _sig(g.fitted.eta_m)), _sig(g.fitted.t_fixed * 1e3))
    names = ("eta_compute", "eta_memory", "overhead_ms")
    return {n: v for n, v, s in zip(names, values, g.status, strict=False) if s in _MOVED}


def calibrated_cluster(data: Mapping[str, Any], fit: EfficiencyFit,
                       gpu_of_device: Mapping[str, str]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """(new cluster mapping, names of the devices updated); `gpu_of_device`: name -> GPU type."""
    fits = {g.gpu: fitted_factors(g) for g in fit.gpus}
    out = copy.deepcopy(dict(data))
    updated = []
    for dev in out.get("devices", []):
        gpu = gpu_of_device.get(str(dev.get("name")))
        factors = fits.get(gpu) if gpu is not None else None
        if not factors:
            continue
        spec = dev["gpu"]
        dev["gpu"] = {**spec, **factors} if isinstance(spec, dict) else {"base": spec, **factors}
        updated.append(str(dev["name"]))
    return out, tuple(updated)
