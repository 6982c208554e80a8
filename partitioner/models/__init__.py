"""User-facing schemas (pydantic v2, frozen) and their loaders: model.yaml and cluster.yaml.

Pydantic lives only here (style.md rule 3); `partitioner.costs` turns these specs into arrays.
"""

from __future__ import annotations

from partitioner.models.cluster import ClusterSpec, Device, GpuSpec, Links, LinkSpec, Pair
from partitioner.models.files import load_cluster, load_model
from partitioner.models.llm import Architecture, LayerEntry, ModelSpec, Workload
from partitioner.models.whatif import with_device, with_link, with_phase, without_device

__all__ = [
    "load_model",
    "load_cluster",
    "ModelSpec",
    "Architecture",
    "Workload",
    "LayerEntry",
    "ClusterSpec",
    "Device",
    "GpuSpec",
    "LinkSpec",
    "Links",
    "Pair",
    "without_device",
    "with_device",
    "with_link",
    "with_phase",
]
