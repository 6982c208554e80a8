"""The units the replica search counts in: GPU sets on small clusters, else whole nodes.

Over whole nodes (partitioner.deploy.kinds) a lone multi-GPU node is widened to its best packing
into several replicas (partitioner.deploy.split): such a packing is one vector of the recursion
however many replicas it holds, which is right when the count is free but not when it is fixed,
and a replica never takes part of one machine with parts of others. Over GPU units (`gpu_kinds`)
each vector is exactly one replica, any set of GPUs (part of a machine, or parts of several), so
the recursion of partitioner.deploy.replicas is exact over every partition of the GPUs into
replicas (exactly N of them for `--replicas N`) with some GPUs unused. That space has
prod_k (n_k + 1) vectors over the GPU kinds; up to MAX_UNIT_VECTORS both `auto` and a fixed
count search it. Above, `auto` searches whole nodes with the node packing, and a fixed count
whole nodes alone (one replica per vector, so still exactly N), said in a note. Where every
machine has one GPU the two spaces are the same.

Under `--tp node` (a machine is one TP group) a replica holds, per machine, the whole machine
or a TP degree the machine allows (as the node packing, partitioner.deploy.split, allows).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from partitioner.deploy.kinds import NodeKinds, gpu_kinds, node_kinds

__all__ = ["Units", "search_units", "MAX_UNIT_VECTORS"]

#: GPU sets searched at most: mixed-8gpu's 192 take 89 replica solves (2 s); a100-l4-t4's 1,024 (its
#: `pairs:` make every GPU a kind) took 377 (20 s) where whole machines take 8.
MAX_UNIT_VECTORS = 512


@dataclass(frozen=True)
class Units:
    """What the replica search runs on: its kinds, the (possibly node-split) value and bound, the
    feasibility test, and whether it relabels memoised plans (whole nodes) or plans again (GPUs)."""

    kinds: NodeKinds
    gpus: bool  # True: GPU units, False: whole nodes
    fits: Callable[[list[int]], bool]
    note: str = ""


def search_units(cluster: Any, count: int | None, tp: str, fits: Callable[[list[int]], bool]) -> Units:
    """The units for a replica count (`None`: auto); module doc."""
    nodes = node_kinds(cluster)
    if count == 1 or all(len(node) == 1 for kind in nodes.kinds for node in kind):
        return Units(nodes, False, fits)  # one-GPU machines: whole nodes are GPU units already
    fine = gpu_kinds(cluster)
    if math.prod(n + 1 for n in fine.counts) > MAX_UNIT_VECTORS:
        if count is None:  # auto: whole nodes, a lone machine packed into several (deploy.split)
            return Units(nodes, False, fits)
        return Units(nodes, False, fits, note=(
            f"--replicas {count}: every replica is whole machines (splitting machines among {count} replicas is "
            f"searched up to {MAX_UNIT_VECTORS} GPU sets; --replicas auto splits a lone machine)"))
    if tp != "node":
        return Units(fine, True, fits)
    size = {n: sum(1 for d in cluster.devices if d.node == n) for n in {d.node for d in cluster.devices}}

    def whole_groups(devices: list[int]) -> bool:
        on: dict[str, int] = {}
        for g in devices:
            on[cluster.devices[g].node] = on.get(cluster.devices[g].node, 0) + 1
        return all(k == size[n] or k in cluster.tp_sizes(n) for n, k in on.items()) and fits(devices)

    return Units(fine, True, whole_groups)
