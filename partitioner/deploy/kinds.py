"""Node kinds: a cluster's whole nodes grouped into interchangeable kinds.

Nodes of one kind (same GPUs with the same usable memory, same allowed TP degrees) are
interchangeable when links are uniform (no `pairs:` in cluster.yaml; README, "Cluster-scale
plans"), so a replica is a count vector x over node kinds, valued once per x by the replica
search (partitioner.deploy.replicas, columns). With `pairs:` every node is its own kind.

`gpu_kinds` is the finer unit a fixed replica count searches on small clusters: every GPU is a
unit, and the GPUs of one node with the same GPU and usable memory are one kind (they share
the node's links), as are machines of one GPU with the same GPU and usable memory (whole nodes,
as above). Under `pairs:` a card no pair names keeps that kind (its links are the defaults), and a
card a pair names shares a kind only with cards it can be swapped with, every link unchanged (the
two NVLink-bridged A100s of examples/clusters/a100-l4-t4.yaml are one kind). A count vector over these kinds is
any set of GPUs up to that symmetry, so the replica search's recursion runs over every partition
of the GPUs: several replicas on one machine, a replica over parts of several machines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["NodeKinds", "node_kinds", "gpu_kinds"]

_PAIRED = object()  # marks the kind of a card a `pairs:` entry names (gpu_kinds)


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


def gpu_kinds(cluster: Any) -> NodeKinds:
    """Every GPU a unit, grouped into interchangeable kinds (module doc)."""
    per_node = {d.node: sum(1 for e in cluster.devices if e.node == d.node) for d in cluster.devices}
    kinds: dict[Any, list[tuple[int, ...]]] = {}
    paired = {name for pair in cluster.pairs for name in (pair.from_, pair.to)}
    for g, d in enumerate(cluster.devices):
        sig = (d.gpu_id, round(cluster.capacity_gb(d), 9))
        # a machine of one GPU is a whole node: interchangeable with its like (as node_kinds)
        key: Any = (sig, cluster.tp_sizes(d.node)) if per_node[d.node] == 1 else (d.node, *sig)
        if d.name in paired:  # a card a pair names: its like only where swapping the two keeps every link
            key = next((k for k, units in kinds.items() if k[0] is _PAIRED and k[1] == key
                        and _swappable(cluster, units[0][0], g)), (_PAIRED, key, g))
        kinds.setdefault(key, []).append((g,))
    labels = tuple(f"{cluster.devices[units[0][0]].gpu_id}@{cluster.devices[units[0][0]].node}" for units in kinds.values())
    return NodeKinds(tuple(tuple(v) for v in kinds.values()), labels)


def _swappable(cluster: Any, g: int, h: int) -> bool:
    """Whether exchanging cards g and h (same node, GPU and memory) leaves every link as it is."""
    devs, a, b = cluster.devices, cluster.devices[g], cluster.devices[h]
    if cluster.link(a, b) != cluster.link(b, a):
        return False
    return all(cluster.link(a, x) == cluster.link(b, x) and cluster.link(x, a) == cluster.link(x, b)
               for i, x in enumerate(devs) if i not in (g, h))


def _counts(items: list[str]) -> list[tuple[str, int]]:
    out: dict[str, int] = {}
    for i in items:
        out[i] = out.get(i, 0) + 1
    return list(out.items())
