"""`layers:` entries (form 3, partitioner.models.llm.LayerEntry) from a roofline layer list.

Shared by the two writers of measured profiles (`gateway_write`, `profile`): one entry per
layer with its cost per device key and the template's memory, cut bytes, kind and parameters;
consecutive entries equal but for the name become one entry with `repeat:`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["KEY_ORDER", "layer_entries", "compress"]

#: Key order of a written entry (the order `partitioner.models.llm.LayerEntry` documents).
KEY_ORDER = ("name", "kind", "repeat", "cost", "memory_gb", "out_bytes", "params")


def layer_entries(layers: Mapping[str, Any], costs: Sequence[Mapping[str, float]]) -> list[dict[str, Any]]:
    """One entry per layer of `layers` (`partitioner.costs.tables.roofline_layers`); `costs[l]`
    maps each device key to layer l's seconds."""
    return [
        {"name": str(name), "kind": str(layers["layer_kinds"][j]), "cost": dict(costs[j]),
         "memory_gb": float(layers["memory_gb"][j]), "out_bytes": float(layers["cut_bytes"][j]),
         "params": round(float(layers["params"][j]))}
        for j, name in enumerate(layers["layer_names"])
    ]


def compress(entries: Sequence[Mapping[str, Any]], run_name: Callable[[list[str]], str]) -> list[dict[str, Any]]:
    """Runs of entries equal but for the name -> one entry named `run_name(names of the run)`,
    with `repeat` when the run is longer than one; keys in KEY_ORDER."""
    out: list[dict[str, Any]] = []
    start = 0
    for end in range(1, len(entries) + 1):
        if end < len(entries) and {**entries[end], "name": ""} == {**entries[start], "name": ""}:
            continue
        entry = {**entries[start], "name": run_name([e["name"] for e in entries[start:end]])}
        if end - start > 1:
            entry["repeat"] = end - start
        out.append({k: entry[k] for k in KEY_ORDER if k in entry})
        start = end
    return out
