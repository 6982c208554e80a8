"""Measured timings -> a `layers:` profile model.yaml (form 3, partitioner.models.llm.LayerEntry).

Pure: timings, the model's architecture and workload (duck-typed) and an optional efficiency
fit in; a plain mapping ready for YAML out. A profile is one workload point (phase, batch,
tokens). Each layer's cost on each device key of the CSV is its measured row, or its share of a
measured range (the range's time split evenly over its layers); a layer no row covers is filled
from the FITTED roofline of that device's GPU type, when a fit is given. Memory, cut bytes,
parameters and kinds come from the roofline model at that point
(`partitioner.costs.tables.roofline_layers`). Consecutive identical layers share an entry with
`repeat:`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from partitioner.calibrate.fit import DTypes, EfficiencyFit, row_terms, row_time
from partitioner.calibrate.layers_yaml import compress, layer_entries
from partitioner.calibrate.timings import Kind, Point, Timing
from partitioner.costs.roofline import Shape, precision_bytes
from partitioner.costs.tables import roofline_layers
from partitioner.errors import ConfigError, InputError

__all__ = ["points", "select_point", "WorkloadAt", "Profile", "profile_from_timings"]


def points(timings: Sequence[Timing]) -> tuple[Point, ...]:
    """The distinct workload points of the timings, sorted."""
    return tuple(sorted({t.point for t in timings}))


def select_point(timings: Sequence[Timing], phase: str | None = None, batch: int | None = None,
                 tokens: int | None = None) -> Point:
    """The one point matching the given fields; InputError listing the points present otherwise."""
    present = points(timings)
    match = [p for p in present if (phase is None or p.phase == phase) and (batch is None or p.batch == batch)
             and (tokens is None or p.tokens == tokens)]
    listed = "; ".join(str(p) for p in present)
    if len(match) == 1:
        return match[0]
    if not match:
        asked = ", ".join(f"{k} {v}" for k, v in (("phase", phase), ("batch", batch), ("tokens", tokens))
                          if v is not None)
        raise InputError(f"no timings at {asked}; the file has: {listed}")
    raise InputError(f"a profile takes one workload point and the file has {len(present)}: {listed}; "
                     f"choose one with --phase/--batch/--tokens")


@dataclass(frozen=True)
class WorkloadAt:
    """A `partitioner.models.Workload` moved to a point: prefill S = tokens, decode C = tokens."""

    weights: str | float
    kv_cache: str | float
    activations: str
    phase: str
    batch: int
    prompt_tokens: int
    context: int
    in_flight: int

    @classmethod
    def of(cls, workload: Any, point: Point) -> WorkloadAt:
        prefill = point.phase == "prefill"
        return cls(workload.weights, workload.kv_cache, workload.activations, point.phase, point.batch,
                   point.tokens if prefill else min(workload.prompt_tokens, point.tokens),
                   max(workload.context, point.tokens) if prefill else point.tokens, workload.in_flight)


@dataclass(frozen=True)
class Profile:
    """The profile mapping, its point, and the (layer, device) cells filled from the fit."""

    data: dict[str, Any]
    point: Point
    filled: tuple[tuple[str, str], ...]
    cells: int

    def to_dict(self) -> dict[str, Any]:
        return {"point": {"phase": self.point.phase, "batch": self.point.batch, "tokens": self.point.tokens},
                "cells": self.cells, "filled": [{"layer": layer, "device": d} for layer, d in self.filled]}


def _index_range(t: Timing, L: int) -> range:
    """Positions in the roofline layer list (embed 0, layer.k at k + 1, lm_head L + 1)."""
    if t.kind == "embed":
        return range(1)
    if t.kind == "head":
        return range(L + 1, L + 2)
    return range(t.first + 1, t.last + 2)


def _measured(rows: Sequence[Timing], L: int, names: Sequence[str], source: str) -> dict[tuple[str, int], Timing]:
    """(device key, layer position) -> the row covering it; a cell covered twice is an error."""
    cells: dict[tuple[str, int], Timing] = {}
    for t in rows:
        for pos in _index_range(t, L):
            seen = cells.get((t.device, pos))
            if seen is not None:
                raise ConfigError(f"{names[pos]} on {t.device!r} at {t.point} is timed twice (lines "
                                  f"{seen.line} and {t.line}); keep one row per layer",
                                  file=source or None, location="column 'layer'", line=t.line)
            cells[(t.device, pos)] = t
    return cells


def _fill(key: str, pos: int, L: int, point: Point, *, fit: EfficiencyFit, shape: Shape, dtypes: DTypes) -> float:
    """Seconds of one layer from the fitted roofline of the key's GPU type."""
    kind: Kind = "embed" if pos == 0 else "head" if pos == L + 1 else "decoder"
    k = pos - 1 if kind == "decoder" else 0
    t = Timing(key, kind, k, k, point.phase, point.batch, point.tokens, 1.0)
    f, m = row_terms(t, shape, dtypes)
    return row_time(f, m, 1, fit.for_device(key).fitted)


def _run_name(names: list[str]) -> str:
    """`layer.8-15` for layer.8..layer.15 (the planner shows its copies as layer.8-15.k)."""
    return names[0] if len(names) == 1 else f"{names[0]}-{names[-1].rsplit('.', 1)[-1]}"


def profile_from_timings(timings: Sequence[Timing], point: Point, arch: Any, workload: Any,
                         fit: EfficiencyFit | None, *, name: str, source: str = "") -> Profile:
    """A `layers:` model mapping at `point` (module docstring); `fit` None: every cell must be measured."""
    rows = [t for t in timings if t.point == point]
    keys = list(dict.fromkeys(t.device for t in rows))
    work = WorkloadAt.of(workload, point)
    layers = roofline_layers(arch, work, [])
    names, L = list(layers["layer_names"]), len(layers["layer_names"]) - 2
    cells = _measured(rows, L, names, source)
    shape, dtypes = Shape.of(arch), _dtypes(work)
    costs, filled = [], []
    for pos, layer in enumerate(names):
        cost = {}
        for key in keys:
            t = cells.get((key, pos))
            if t is not None:
                cost[key] = t.seconds / t.n_layers
                continue
            if fit is None:
                raise InputError(f"no timing for {layer} on device {key!r} at {point}; time it, or let the "
                                 f"fitted cost model fill it")
            cost[key] = _fill(key, pos, L, point, fit=fit, shape=shape, dtypes=dtypes)
            filled.append((layer, key))
        costs.append(cost)
    data = {"name": name, "layers": compress(layer_entries(layers, costs), _run_name)}
    return Profile(data, point, tuple(filled), len(names) * len(keys))


def _dtypes(work: WorkloadAt) -> DTypes:
    """(b_w, b_kv, b_a) of the workload."""
    return precision_bytes(work.weights), precision_bytes(work.kv_cache), precision_bytes(work.activations)
