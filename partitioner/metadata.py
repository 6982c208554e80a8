"""What a plan JSON says about its inputs: model id, workload, hosts, units, version, hash.

Engines need an id they can load (`model_id`: the model.yaml `hf_id:`, else the preset's
`hf_id`, else the directory of `hf_config:`), the workload's dtypes and context, and each
host's address; a reader needs the units and which inputs produced the plan (`input_hash`,
sha256 of the validated model and cluster specs, so a re-plan of the same files gives the
same JSON). Pure apart from reading the installed package version.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

__all__ = ["UNITS", "plan_metadata", "tool_version"]

UNITS: dict[str, str] = {
    "tau": "s", "d": "s", "sigma": "s", "tau_max": "s", "sigma_max": "s", "T_async": "s",
    "T_block": "s", "T_gpipe": "s", "period": "s", "first_latency": "s", "lower_bound": "s",
    "throughput": "micro-batches/s", "memory_gb": "GB (1e9 bytes)", "capacity_gb": "GB (1e9 bytes)",
    "context": "tokens", "batch": "sequences per micro-batch",
}


def tool_version() -> str:
    """The installed partitioner version ("unknown" when not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("partitioner")
    except PackageNotFoundError:
        return "unknown"


def _model_id(model: Any) -> str | None:
    model_id = getattr(model, "model_id", None)
    if model_id:
        return str(model_id)
    hf_config = getattr(model, "hf_config", None)
    if hf_config:
        source = getattr(model, "_source", None)
        base = Path(getattr(source, "file", "") or ".").parent
        return str(base / Path(hf_config).parent)
    return None


def plan_metadata(model: Any, cluster: Any) -> dict[str, Any]:
    """The plan JSON's input fields for a validated `ModelSpec` and `ClusterSpec`."""
    digest = hashlib.sha256()
    for spec in (model, cluster):
        digest.update(spec.model_dump_json(by_alias=True).encode())
        digest.update(b"\0")
    hosts = []
    for node in dict.fromkeys(dev.node for dev in cluster.devices):
        address = cluster.address_of(node)
        hosts.append({
            "node": node,
            "address": address,
            "address_assumed": address is None,
            "devices": [dev.name for dev in cluster.devices if dev.node == node],
        })
    workload = None if model.is_profile else model.workload.model_dump()
    return {
        "model_id": _model_id(model),
        "workload": workload,
        "hosts": hosts,
        "tool_version": tool_version(),
        "input_hash": "sha256:" + digest.hexdigest(),
    }
