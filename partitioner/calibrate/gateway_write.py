"""YAML text of the files `partition calibrate gateway` writes: a cluster and a `layers:` profile.

Pure: takes a `GatewayCalibration`, GPU ids (checked by the CLI) and, for the profile, a
template's roofline layer list (`partitioner.costs.tables.roofline_layers` on the chosen nodes'
GPUs); returns text.

- Cluster: one device per chosen node, in pipeline order, ``name: <node>, node: <node>,
  gpu: <id>``; links are not measured, so the cluster's defaults apply.
- Profile (form 3, `partitioner.models.llm.LayerEntry`): the template's layers, memory, cut
  bytes, kinds and params; the cost of layer l on node g is

      c[g][l] = tau_g * r[g][l] / sum_k r[g][k]        (r: the template's roofline cost on g's GPU)

  so a stage holding the whole model on node g takes exactly the measured tau_g, and the split
  over layers follows the roofline cost model (docs/costmodel.md). Cost keys are node names, i.e. the
  device names of the written cluster. Consecutive identical layers become one `repeat:` entry.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import yaml

from partitioner.calibrate.gateway import GatewayCalibration
from partitioner.calibrate.layers_yaml import compress, layer_entries
from partitioner.errors import InputError

__all__ = ["layer_costs", "profile_entries", "cluster_yaml", "profile_yaml"]


def layer_costs(tau: Sequence[float], roofline_cost: np.ndarray) -> np.ndarray:
    """c[g][l] = tau_g * r[g][l] / sum_k r[g][k]: row g sums to tau_g (module docstring)."""
    r = np.asarray(roofline_cost, dtype=float)
    t = np.asarray(tau, dtype=float)
    if r.ndim != 2 or r.shape[0] != t.size or not np.all(r > 0):
        raise InputError(f"roofline costs must be a positive ({t.size}, L) array (got shape {r.shape})")
    bad = np.flatnonzero(t <= 0)
    if bad.size:
        j = int(bad[0])
        raise InputError(f"cannot write a profile: tau = {float(t[j])!r} on stage {j}; costs must be > 0")
    out: np.ndarray = r / r.sum(axis=1, keepdims=True) * t[:, None]
    return out


def _run_name(names: Sequence[str]) -> str:
    """`layer` for layer.0..layer.N-1 (what `repeat:` expands back to); else first..last."""
    if len(names) == 1:
        return names[0]
    base = re.sub(r"\.\d+$", "", names[0])
    if list(names) == [f"{base}.{k}" for k in range(len(names))]:
        return base
    return f"{names[0]}..{names[-1]}"


def profile_entries(nodes: Sequence[str], cost: np.ndarray, layers: Mapping[str, Any]) -> list[dict[str, Any]]:
    """`layers:` entries from per-node layer costs and the template's layer list, runs compressed."""
    costs = [{n: float(cost[g, j]) for g, n in enumerate(nodes)} for j in range(cost.shape[1])]
    return compress(layer_entries(layers, costs), _run_name)


def _dump(header: Sequence[str], data: Mapping[str, Any]) -> str:
    body = yaml.safe_dump(dict(data), sort_keys=False, default_flow_style=None, allow_unicode=True, width=1000)
    return "".join(f"# {line}\n" for line in header) + body


def cluster_yaml(cal: GatewayCalibration, gpus: Sequence[str], header: Sequence[str]) -> str:
    """A cluster.yaml with one device per chosen node (pipeline order); `header` becomes comments."""
    devices = [{"name": e.node, "node": e.node, "gpu": g} for e, g in zip(cal.nodes, gpus, strict=True)]
    notes = [
        "Devices are named after the gateway nodes, in pipeline order; the planner may reorder them (order: free).",
        "Links were not measured: the inter-node default below applies; edit it to your network.",
        "Once edited, a re-run refuses to replace this file (checksum in the first line) unless given --force.",
    ]
    return _dump([*header, *notes], {"name": f"gateway {cal.model}", "devices": devices,
                                     "links": {"inter_node": "10gbe"}, "order": "free"})


def profile_yaml(
    cal: GatewayCalibration, layers: Mapping[str, Any], template: str, header: Sequence[str]
) -> str:
    """A `layers:` model.yaml whose per-node whole-model time is the measured tau (module docstring)."""
    nodes = [e.node for e in cal.nodes]
    cost = layer_costs(cal.tau, layers["cost"])
    notes = [
        f"cost: tau_g x the layer's share of the whole model's roofline time on g's GPU (template {template});",
        f"a stage holding every layer on node g takes tau_g, the measured {cal.stat} service time per request.",
        "Cost keys are node names = the device names of the cluster written by --write-cluster.",
    ]
    if layers.get("tied_gb"):
        notes.append(f"Tied embeddings: embed and lm_head memory both count the shared matrix "
                     f"({layers['tied_gb']:.4g} GB); a single stage holding both needs that much less.")
    data = {"name": f"{cal.model} (gateway {cal.stat}, template {template})",
            "layers": profile_entries(nodes, cost, layers)}
    return _dump([*header, *notes], data)
