"""Pure what-if edits: each returns a new, re-validated spec and leaves its input untouched.

Used by the what-if report: ``--without DEVICE``, ``--with GPU_ID@NODE``,
``--link A:B=latency_ms,bandwidth_gb_s`` and ``--phase``.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from partitioner.errors import ConfigError
from partitioner.models import catalog
from partitioner.models.cluster import ClusterSpec
from partitioner.models.llm import ModelSpec

__all__ = ["without_device", "with_device", "with_link", "with_phase"]


def _rebuild(data: dict[str, Any], what: str) -> ClusterSpec:
    try:
        return ClusterSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(f"{what}: {err['msg']}") from None


def _dump(cluster: ClusterSpec) -> dict[str, Any]:
    data = cluster.model_dump(by_alias=True, exclude_none=True)
    data["devices"] = list(data["devices"])
    data["pairs"] = list(data["pairs"])
    return data


def _require_device(cluster: ClusterSpec, name: str, option: str) -> None:
    names = [d.name for d in cluster.devices]
    if name not in names:
        raise ConfigError(catalog.unknown_message("device", name, names), location=option)


def without_device(cluster: ClusterSpec, name: str) -> ClusterSpec:
    """The cluster without device `name` (and without the pairs naming it)."""
    _require_device(cluster, name, "--without")
    if len(cluster.devices) == 1:
        raise ConfigError(f"cannot remove {name!r}: it is the only device", location="--without")
    data = _dump(cluster)
    data["devices"] = [d for d in data["devices"] if d["name"] != name]
    data["pairs"] = [p for p in data["pairs"] if name not in (p["from"], p["to"])]
    return _rebuild(data, "--without")


def with_device(cluster: ClusterSpec, gpu_id: str, node: str, name: str | None = None) -> ClusterSpec:
    """The cluster plus one catalogue GPU on `node`, named `name` or ``<gpu_id>@<node>[-k]``."""
    try:
        catalog.require("gpus", gpu_id)
    except ValueError as exc:
        raise ConfigError(str(exc), location="--with") from None
    taken = {d.name for d in cluster.devices}
    if name is None:
        name, k = f"{gpu_id}@{node}", 2
        while name in taken:
            name, k = f"{gpu_id}@{node}-{k}", k + 1
    elif name in taken:
        raise ConfigError(f"a device named {name!r} already exists", location="--with")
    data = _dump(cluster)
    data["devices"].append({"name": name, "gpu": gpu_id, "node": node})
    return _rebuild(data, "--with")


def with_link(cluster: ClusterSpec, a: str, b: str, latency_ms: float, bandwidth_gb_s: float) -> ClusterSpec:
    """The cluster with the link a<->b (both directions) set to the given latency and bandwidth."""
    for dev in (a, b):
        _require_device(cluster, dev, "--link")
    data = _dump(cluster)
    data["pairs"] = [p for p in data["pairs"] if {p["from"], p["to"]} != {a, b}]
    data["pairs"].append({"from": a, "to": b, "latency_ms": latency_ms, "bandwidth_gb_s": bandwidth_gb_s})
    return _rebuild(data, "--link")


def with_phase(model: ModelSpec, phase: str) -> ModelSpec:
    """The model with its workload's phase set to ``decode`` or ``prefill`` (forms 1-2 only)."""
    if model.is_profile:
        raise ConfigError("a measured profile (layers:) has a fixed phase; --phase needs a workload", location="--phase")
    if phase not in ("decode", "prefill"):
        raise ConfigError(f"phase must be decode or prefill (got {phase!r})", location="--phase")
    workload = model.workload.model_copy(update={"phase": phase})
    return model.model_copy(update={"workload": workload})
