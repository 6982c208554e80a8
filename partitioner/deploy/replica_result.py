"""The replica search's result: the chosen count vectors, their plans placed on their own nodes.

A `ReplicaSearch` is what the exact recursion (partitioner.deploy.replicas), column generation
(partitioner.deploy.columns) and the greedy search (partitioner.deploy.greedy) return: the
replicas' vectors and plans, their total tokens/s, whether it is proven optimal, the upper bound,
and why the search stopped early (`_Stop`: the time limit or Ctrl-C). Each replica after the
first takes the memoised plan of its vector moved onto the nodes after those of earlier replicas
(`_place`): nodes of a kind are interchangeable (partitioner.deploy.kinds), so its figures are the
memoised ones.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from partitioner.deploy.kinds import NodeKinds

__all__ = ["ReplicaSearch", "ReplicaPlanner"]

Value = Callable[[list[int]], Any]  # devices -> Plan (or raises InfeasibleError)


class ReplicaPlanner:
    """A replica's planner: `value(devices)` (the replica's Plan, or InfeasibleError), `quick(devices)`
    (a cheaper first plan), `upper(plan)` (its proven upper bound on tokens/s, else inf) and
    `complete(plan)` (False for a quick plan a full solve may improve): what the replica searches
    (partitioner.deploy.replicas, columns, split) read.

    `solve(devices, quick)` returns (plan, upper bound, complete); `keep` maps the devices asked
    for to those the planner may use (an engine's supported GPUs), applied before every solve.
    Calling the planner is `value`.
    """

    def __init__(self, solve: Callable[[list[int], bool], tuple[Any, float, bool]],
                 keep: Callable[[list[int]], list[int]] | None = None) -> None:
        self._solve, self._keep = solve, keep
        self._uppers: dict[int, float] = {}
        self._partial: set[int] = set()
        self._known: dict[frozenset[int], Any] = {}

    def know(self, devices: list[int], plan: Any, upper: float = math.inf) -> None:
        """`plan` is the answer for `devices` (asked as here), solved elsewhere with at least the
        budget a solve here gets (the whole-cluster floor): returned for them, full or quick,
        with `upper` (tokens/s no plan on them beats) as its bound, or its tokens/s where it is
        proven."""
        self._known[frozenset(devices)] = plan
        tps = float(plan.serving.tokens_per_s) if getattr(plan, "serving", None) is not None else 0.0
        self._uppers[id(plan)] = tps if getattr(plan, "optimal", False) else max(tps, upper)

    def _run(self, devices: list[int], quick: bool) -> Any:
        if frozenset(devices) in self._known:
            return self._known[frozenset(devices)]
        plan, upper, complete = self._solve(self._keep(devices) if self._keep else devices, quick)
        self._uppers[id(plan)] = upper if math.isfinite(upper) else math.inf
        if not complete:
            self._partial.add(id(plan))
        return plan

    def value(self, devices: list[int]) -> Any:
        return self._run(devices, False)

    __call__ = value

    def quick(self, devices: list[int]) -> Any:
        return self._run(devices, True)

    def upper(self, plan: Any) -> float:
        return self._uppers.get(id(plan), math.inf)

    def complete(self, plan: Any) -> bool:
        return id(plan) not in self._partial

    def restricted(self, keep: Callable[[list[int]], list[int]]) -> ReplicaPlanner:
        """The same planner on `keep(devices)` only (its plans' bounds recorded in this one too)."""
        out = ReplicaPlanner(self._solve, keep)
        out._uppers, out._partial, out._known = self._uppers, self._partial, self._known
        return out


@dataclass
class ReplicaSearch:
    """The best deployment: replica vectors, their plans, and how sure the search is."""

    vectors: list[tuple[int, ...]]
    plans: list[Any]
    total: float
    optimal: bool
    upper_bound: float
    solved: int
    wall_time_s: float
    stopped: str = ""  # "", "time_limit" or "interrupted": the best found so far


class _Stop(Exception):
    """The time limit passed or Ctrl-C was pressed: fall back to the replicas solved so far."""


def _place(nk: NodeKinds, chosen: list[tuple[int, ...]], k: int, memo: dict[tuple[int, ...], tuple[float, Any]],
           value: Value, cluster: Any = None) -> Any:
    """Replica k's plan on its own nodes: the memoised plan for the first replica, else the same
    plan moved onto the nodes after those of earlier replicas (nodes of a kind are interchangeable:
    same GPUs, memory, TP degrees and links, so its figures are the memoised ones); without the
    cluster, planned again there."""
    offset = tuple(sum(chosen[j][i] for j in range(k)) for i in range(len(nk.counts)))
    if not any(offset):
        return memo[chosen[k]][1]
    if cluster is None:
        return value(nk.devices(chosen[k], offset))
    names: dict[str, str] = {}
    nodes: dict[str, str] = {}
    ordinals: dict[str, int] = {}
    for kind, n in enumerate(chosen[k]):
        for src, dst in zip(nk.kinds[kind][:n], nk.kinds[kind][offset[kind]:offset[kind] + n], strict=True):
            nodes[cluster.devices[src[0]].node] = cluster.devices[dst[0]].node
            names.update({cluster.devices[a].name: cluster.devices[b].name for a, b in _by_gpu(cluster, src, dst)})
            ordinals.update({cluster.devices[b].name: i for i, b in enumerate(dst)})
    return _relabel(memo[chosen[k]][1], names, nodes, ordinals)


def _by_gpu(cluster: Any, src: tuple[int, ...], dst: tuple[int, ...]) -> list[tuple[int, int]]:
    """The devices of node `src` paired with those of node `dst` (one node kind: the same GPUs
    and usable memory, partitioner.deploy.kinds) GPU for GPU: the i-th card of each GPU in listed
    order, so a node listing [4090, 3090] maps onto one listing [3090, 4090] card by kind, not
    by position."""
    def key(g: int) -> tuple[str, float]:
        return cluster.devices[g].gpu_id, round(cluster.capacity_gb(cluster.devices[g]), 9)

    return list(zip(sorted(src, key=key), sorted(dst, key=key), strict=True))  # stable: listed order within a GPU


def _relabel(plan: Any, names: dict[str, str], nodes: dict[str, str], ordinals: dict[str, int] | None = None) -> Any:
    """`plan` with its devices and nodes renamed (a Bundle: each of its plans); `ordinals`: the
    renamed devices' listed positions on their nodes (a stage's is its first device's)."""
    import dataclasses

    if hasattr(plan, "plans") and not hasattr(plan, "stages"):
        return dataclasses.replace(plan, plans=tuple(_relabel(p, names, nodes, ordinals) for p in plan.plans))
    at = ordinals or {}

    def moved(st: Any) -> Any:
        device = "+".join(names.get(d, d) for d in st.device.split("+"))
        members = tuple(names.get(m, m) for m in st.members)
        first = members[0] if members else device
        return dataclasses.replace(st, device=device, node=nodes.get(st.node, st.node), members=members,
                                   ordinal=at.get(first, st.ordinal))

    stages = tuple(moved(st) for st in plan.stages)
    frontier = tuple({**f, "devices": ["+".join(names.get(d, d) for d in str(x).split("+")) for x in f["devices"]]}
                     if "devices" in f else f for f in plan.frontier)
    return dataclasses.replace(plan, stages=stages, frontier=frontier)
