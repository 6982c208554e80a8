"""Efficiency fit: per GPU type, eta_compute, eta_memory and the per-layer overhead that make the
roofline reproduce measured per-layer timings (docs/costmodel.md).

Pure: timings (frozen `Timing`), per-device `Hardware` and the model `Shape` in; frozen results
out. Each row's FLOPs f and bytes m come from `partitioner.costs.roofline` at the row's own
phase, batch B and tokens (prefill S, decode C); a range a-b counts (b - a + 1) decoder layers,
embed / lm_head their own terms. Row i on GPU g is modelled as

    t_i = max(f_i / (eta_c F_g), m_i / (eta_m BW_g)) + t_fixed · n_i          (docs/costmodel.md)

with n_i the layers in the row; `partitioner.calibrate.regimes` fits it (relative least squares,
eta in (0, 1], t_fixed >= 0). Devices of one GPU type pool their rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from partitioner.calibrate import regimes
from partitioner.calibrate.timings import Timing
from partitioner.costs import roofline
from partitioner.costs.roofline import Hardware, Shape, Work
from partitioner.errors import InputError

__all__ = ["DTypes", "row_work", "row_terms", "row_time", "GpuFit", "RowFit", "EfficiencyFit", "fit_efficiencies"]

DTypes = tuple[float, float, float]  # bytes per weight b_w, per KV element b_kv, per activation b_a


def row_work(t: Timing, dtypes: DTypes) -> Work:
    """The micro-batch a row timed: its phase and B; prefill S = tokens, decode C = tokens."""
    b_w, b_kv, b_a = dtypes
    S = t.tokens if t.phase == "prefill" else 1
    return Work(b_w=b_w, b_kv=b_kv, b_a=b_a, phase=t.phase, B=t.batch, S=S, C=t.tokens)


def row_terms(t: Timing, shape: Shape, dtypes: DTypes) -> tuple[float, float]:
    """(FLOPs, bytes) of a row: embed / lm_head terms, or n_i times one decoder layer's."""
    w = row_work(t, dtypes)
    if t.kind == "embed":
        return roofline.embed_flops(shape, w), roofline.embed_bytes(shape, w)
    if t.kind == "head":
        return roofline.head_flops(shape, w), roofline.head_bytes(shape, w)
    return t.n_layers * roofline.layer_flops(shape, w), t.n_layers * roofline.layer_bytes(shape, w)


def row_time(flops: float, nbytes: float, n: int, hw: Hardware) -> float:
    """Roofline time of a row of n layers: t_fixed is charged per layer (docs/costmodel.md)."""
    return roofline.roofline_time(flops, nbytes, hw) + (n - 1) * hw.t_fixed


@dataclass(frozen=True)
class GpuFit:
    """Fitted efficiencies of one GPU type against the catalogue (or cluster) defaults."""

    gpu: str
    devices: tuple[str, ...]  # the CSV device keys whose rows were pooled
    default: Hardware
    fitted: Hardware
    status: tuple[str, str, str]  # of (eta_compute, eta_memory, overhead): regimes.STATUSES
    rows: int
    rms_before: float  # RMS relative error with the defaults (weighted by samples)
    rms_after: float
    notes: tuple[str, ...]

    @property
    def identified(self) -> tuple[str, ...]:
        """The factors the data determined (fitted, or fitted to their bound)."""
        names = ("eta_compute", "eta_memory", "overhead_ms")
        return tuple(n for n, s in zip(names, self.status, strict=False) if s in ("fitted", "bound"))

    def to_dict(self) -> dict[str, Any]:
        def factors(hw: Hardware) -> dict[str, float]:
            return {"eta_compute": hw.eta_c, "eta_memory": hw.eta_m, "overhead_ms": hw.t_fixed * 1e3}

        return {
            "gpu": self.gpu, "devices": list(self.devices), "rows": self.rows,
            "default": factors(self.default), "fitted": factors(self.fitted),
            "status": dict(zip(("eta_compute", "eta_memory", "overhead_ms"), self.status, strict=False)),
            "rms_error_before": self.rms_before, "rms_error_after": self.rms_after, "notes": list(self.notes),
        }


@dataclass(frozen=True)
class RowFit:
    """One measured row against the roofline with default and fitted factors."""

    timing: Timing
    gpu: str
    flops: float
    nbytes: float
    predicted_default: float
    predicted_fitted: float
    regime: str  # under the fitted factors: "compute" or "memory"

    @property
    def error_default(self) -> float:
        return (self.predicted_default - self.timing.seconds) / self.timing.seconds

    @property
    def error(self) -> float:
        """Relative error of the fitted prediction, (predicted - measured) / measured."""
        return (self.predicted_fitted - self.timing.seconds) / self.timing.seconds

    def to_dict(self) -> dict[str, Any]:
        return {**self.timing.to_dict(), "gpu": self.gpu, "flops": self.flops, "bytes": self.nbytes,
                "predicted_default_s": self.predicted_default, "predicted_fitted_s": self.predicted_fitted,
                "error_default": self.error_default, "error": self.error, "regime": self.regime}


@dataclass(frozen=True)
class EfficiencyFit:
    """Per-GPU fits and per-row predictions; `gpu_of` maps each CSV device key to its GPU type."""

    gpus: tuple[GpuFit, ...]
    rows: tuple[RowFit, ...]
    gpu_of: Mapping[str, str]

    def for_device(self, key: str) -> GpuFit:
        """The fit of the GPU type a CSV device key belongs to."""
        gpu = self.gpu_of[key]
        return next(g for g in self.gpus if g.gpu == gpu)

    def to_dict(self) -> dict[str, Any]:
        return {"gpus": [g.to_dict() for g in self.gpus], "rows": [r.to_dict() for r in self.rows]}


def _groups(rows: Sequence[Timing], specs: Mapping[str, tuple[str, Hardware]]) -> dict[str, list[int]]:
    """Row indices per GPU type, in order of first appearance; one Hardware per type."""
    groups: dict[str, list[int]] = {}
    hw_of: dict[str, tuple[str, Hardware]] = {}
    for i, t in enumerate(rows):
        if t.device not in specs:
            raise InputError(f"no GPU spec for device {t.device!r} (line {t.line})")
        gpu, hw = specs[t.device]
        if gpu in hw_of and hw_of[gpu][1] != hw:
            raise InputError(f"GPU type {gpu!r} has two different specs (devices {hw_of[gpu][0]!r} and "
                             f"{t.device!r}); give the inline GPUs distinct names")
        hw_of.setdefault(gpu, (t.device, hw))
        groups.setdefault(gpu, []).append(i)
    return groups


def _notes(status: tuple[str, str, str], default: Hardware, fitted: Hardware) -> tuple[str, ...]:
    """One sentence per factor the data did not determine freely (regimes.STATUSES)."""
    why = {0: "no row is compute-bound", 1: "no row is memory-bound",
           2: "every row's layer count is proportional to its work in its regime (add other batch "
              "sizes, token counts, or embed / lm_head rows)"}
    names = ("eta_compute", "eta_memory", "overhead_ms")
    before = (default.eta_c, default.eta_m, default.t_fixed * 1e3)
    after = (fitted.eta_c, fitted.eta_m, fitted.t_fixed * 1e3)
    out = []
    for j, s in enumerate(status):
        absorb = "; the fitted etas absorb the rest" if j == 2 else ""
        if s == "unidentified":
            out.append(f"{names[j]} not identified ({why[j]}): kept the default {before[j]:.4g}{absorb}")
        elif s == "clamped" and j == 2:
            out.append(f"{names[j]} not identified ({why[j]}): {after[j]:.4g} instead of the default "
                       f"{before[j]:.4g}, as the bounds require (eta <= 1, overhead >= 0){absorb}")
        elif s == "clamped":
            out.append(f"{names[j]} not identified ({why[j]}): raised from the default {before[j]:.4g} to "
                       f"{after[j]:.4g}, the least value that keeps every row in its regime")
        elif s == "bound":
            out.append(f"{names[j]} fitted to its bound {after[j]:.4g}")
    if status == ("kept",) * 3:
        out.append("no fit beat the defaults; kept them")
    return tuple(out)


def _fit_gpu(gpu: str, rows: list[Timing], hw: Hardware, shape: Shape,
             dtypes: DTypes) -> tuple[GpuFit, list[RowFit]]:
    terms = [row_terms(t, shape, dtypes) for t in rows]
    d = regimes.RowData(f=np.array([x[0] for x in terms]), m=np.array([x[1] for x in terms]),
                        n=np.array([t.n_layers for t in rows], dtype=float),
                        y=np.array([t.seconds for t in rows]), w=np.array([t.samples for t in rows], dtype=float))
    default_p = (1.0 / (hw.eta_c * hw.F), 1.0 / (hw.eta_m * hw.BW), hw.t_fixed)
    sol = regimes.solve(d, (1.0 / hw.F, 1.0 / hw.BW, 0.0), default_p)
    a, b, c = sol.p
    fitted = replace(hw, eta_c=min(1.0, 1.0 / (a * hw.F)), eta_m=min(1.0, 1.0 / (b * hw.BW)), t_fixed=c)
    fits = [RowFit(t, gpu, f, m, row_time(f, m, t.n_layers, hw), row_time(f, m, t.n_layers, fitted),
                   "compute" if f / (fitted.eta_c * fitted.F) > m / (fitted.eta_m * fitted.BW) else "memory")
            for t, (f, m) in zip(rows, terms, strict=False)]
    wsum = float(d.w.sum())
    rms = [float(np.sqrt(sum(t.samples * e * e for t, e in zip(rows, errs, strict=False)) / wsum))
           for errs in ([r.error_default for r in fits], [r.error for r in fits])]
    devices = tuple(dict.fromkeys(t.device for t in rows))
    return GpuFit(gpu, devices, hw, fitted, sol.status, len(rows), rms[0], rms[1],
                  _notes(sol.status, hw, fitted)), fits


def fit_efficiencies(rows: Sequence[Timing], specs: Mapping[str, tuple[str, Hardware]],
                     shape: Shape, dtypes: DTypes) -> EfficiencyFit:
    """Fit (eta_c, eta_m, t_fixed) per GPU type; `specs`: device key -> (GPU type, default Hardware)."""
    if not rows:
        raise InputError("no timings to fit (got 0 rows)")
    gpus: list[Any] = []
    by_index: dict[int, Any] = {}
    for gpu, idx in _groups(rows, specs).items():
        g, fits = _fit_gpu(gpu, [rows[i] for i in idx], specs[rows[idx[0]].device][1], shape, dtypes)
        gpus.append(g)
        by_index.update(zip(idx, fits, strict=False))
    gpu_of = {t.device: specs[t.device][0] for t in rows}
    return EfficiencyFit(tuple(gpus), tuple(by_index[i] for i in range(len(rows))), gpu_of)
