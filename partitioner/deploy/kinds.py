"""Node kinds: a cluster's whole nodes grouped into interchangeable kinds.

Nodes of one kind (same GPUs with the same usable memory, same allowed TP degrees) are
interchangeable when links are uniform (no `pairs:` in cluster.yaml; README, "Cluster-scale
plans"), so a replica is a count vector x over node kinds, valued once per x by the replica
search (partitioner.deploy.replicas, columns). With `pairs:` every node is its own kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["NodeKinds", "node_kinds"]


@dataclass(frozen=True)
class NodeKinds:
    """Node kinds: kinds[k] lists the nodes (each its device indices) of kind k."""

    kinds: tuple[tuple[tuple[int, ...], ...], ...]
    labels: tuple[str, ...]

    @property
    def counts(self) -> tuple[int, ...]:
        return tuple(len(k) for k in self.kinds)

    def devices(self, x: tuple[int, ...], offset: tuple[int, ...] | None = None) -> list[int]:
        """Device indices of x_k nodes of each kind k (the first ones after `offset`)."""
        off = offset or (0,) * len(x)
        return sorted(g for k, n in enumerate(x) for node in self.kinds[k][off[k]:off[k] + n] for g in node)


def node_kinds(cluster: Any) -> NodeKinds:
    """Group the cluster's nodes into interchangeable kinds (module doc)."""
    nodes: dict[str, list[int]] = {}
    for g, d in enumerate(cluster.devices):
        nodes.setdefault(d.node, []).append(g)
    kinds: dict[Any, list[tuple[int, ...]]] = {}
    for node, devs in nodes.items():
        sig = (tuple(sorted((cluster.devices[g].gpu_id, round(cluster.capacity_gb(cluster.devices[g]), 9)) for g in devs)),
               cluster.tp_sizes(node))
        kinds.setdefault(node if cluster.pairs else sig, []).append(tuple(devs))
    labels = []
    for members in kinds.values():
        gpus = [cluster.devices[g].gpu_id for g in members[0]]
        labels.append("+".join(f"{n}×{gpu}" if n > 1 else gpu for gpu, n in _counts(gpus)))
    return NodeKinds(tuple(tuple(v) for v in kinds.values()), tuple(labels))


def _counts(items: list[str]) -> list[tuple[str, int]]:
    out: dict[str, int] = {}
    for i in items:
        out[i] = out.get(i, 0) + 1
    return list(out.items())
