"""Several replicas inside one machine: a node's GPUs split into disjoint pipelines.

The replica search (partitioner.deploy.replicas, columns) gives replicas whole nodes. A machine
with several GPUs may instead serve several replicas side by side (two TP-4 replicas on an
8-GPU box, or one replica per GPU when the model fits one: the data-parallel layout of vLLM and
SGLang). This module widens the unit vector e_k (one node of kind k alone) to the best packing of
that node into disjoint replicas, each planned as any replica is:

    w_k = max over partitions of the node's GPUs into parts (GPUs may stay unused) of Σ v(part)

GPUs of one kind (GPU id and usable memory) inside a node are interchangeable (same intra-node
links), so a part is a count vector z over them and the packing is an exact recursion over z,
W(y) = max(W(y − e_j), max_{0 < z <= y} v(z) + W(y − z)), memoised. Its bound is the same
recursion over the replica bound (bounds.py) of each part; so the search stays exact over every
deployment whose replicas are whole nodes or parts of one node. (A replica that takes part of a
node together with other nodes is not searched.)
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from partitioner.errors import InfeasibleError

__all__ = ["Bundle", "NodeSplit"]


@dataclass(frozen=True)
class Bundle:
    """Replicas sharing one machine, valued together as the search's unit vector."""

    plans: tuple[Any, ...]
    optimal: bool

    feasible = True

    @property
    def serving(self) -> Any:
        return SimpleNamespace(tokens_per_s=math.fsum(float(p.serving.tokens_per_s) for p in self.plans))


def _sub_kinds(cluster: Any, node: tuple[int, ...]) -> list[list[int]]:
    kinds: dict[Any, list[int]] = {}
    for g in node:
        d = cluster.devices[g]
        kinds.setdefault((d.gpu_id, round(cluster.capacity_gb(d), 9)), []).append(g)
    return list(kinds.values())


def _packing(counts: tuple[int, ...], val: Callable[[tuple[int, ...]], float]) -> dict[tuple[int, ...], tuple[float, tuple[tuple[int, ...], ...]]]:
    """W(y) of the module doc for every y <= counts, with the parts that attain it."""
    W: dict[tuple[int, ...], tuple[float, tuple[tuple[int, ...], ...]]] = {}
    for y in sorted(itertools.product(*(range(n + 1) for n in counts)), key=sum):
        best: tuple[float, tuple[tuple[int, ...], ...]] = (0.0, ())
        for j, yj in enumerate(y):
            if yj:
                less = W[tuple(a - (i == j) for i, a in enumerate(y))]
                if less[0] > best[0]:
                    best = less
        for z in itertools.product(*(range(a + 1) for a in y)):
            if not any(z):
                continue
            vz = val(z)
            if vz <= 0:
                continue
            rest = W[tuple(a - b for a, b in zip(y, z, strict=True))]
            if vz + rest[0] > best[0] * (1 + 1e-12) + 1e-15:
                best = (vz + rest[0], (z, *rest[1]))
        W[y] = best
    return W


class NodeSplit:
    """(value, bound) for the replica search where a lone multi-GPU node may be several replicas."""

    def __init__(self, nk: Any, cluster: Any, value: Callable[[list[int]], Any], bound: Any,
                 upper_of: Callable[[Any], float] | None, fits: Callable[[list[int]], bool],
                 allowed: Callable[[tuple[int, ...]], tuple[int, ...] | None] = lambda node: None,
                 cap: float = math.inf) -> None:
        """`allowed(node)`: the part sizes a node may be split into (None: any); `cap`: tokens/s no
        replica on any of the cluster's devices beats (the whole cluster's proven bound: a plan on
        fewer devices is a plan on all of them), which caps every bound (monotonicity)."""
        self.nk, self.cluster, self.inner, self.bound_inner = nk, cluster, value, bound
        self.cap = float(cap)
        self.upper_inner = upper_of or (lambda p: math.inf)
        self.fits, self.allowed = fits, allowed
        self.node_kind = {tuple(sorted(node)): k for k, nodes in enumerate(nk.kinds) for node in nodes}
        self.subs = {k: _sub_kinds(cluster, nodes[0]) for k, nodes in enumerate(nk.kinds) if len(nodes[0]) > 1}
        self.split_ub = {k: self._bound_packing(k) for k in self.subs}
        self.chosen: dict[int, tuple[tuple[int, ...], ...]] = {}
        self.pack_upper: dict[int, float] = {}
        self.pack_exact: dict[int, bool] = {}
        self.uppers: dict[int, float] = {}

    # -- bound --------------------------------------------------------------------------------
    def _devices(self, node_devs: list[list[int]], z: tuple[int, ...]) -> list[int]:
        return sorted(g for kind, n in zip(node_devs, z, strict=True) for g in kind[:n])

    def _bound_packing(self, k: int) -> float:
        subs = self.subs[k]
        counts = tuple(len(s) for s in subs)

        sizes = self.allowed(self.nk.kinds[k][0])

        def ub(z: tuple[int, ...]) -> float:
            devs = self._devices(subs, z)
            ok = self.fits(devs) and (sizes is None or sum(z) in sizes)
            return float(self.bound_inner(devs)) if ok else 0.0

        return _packing(counts, ub)[counts][0]

    def __getattr__(self, name: str) -> Any:  # prepare, tail, rates, need, fluid: the inner bound's
        return getattr(self.bound_inner, name)

    def __call__(self, devices: list[int]) -> float:
        k = self.node_kind.get(tuple(sorted(devices)))
        base = float(self.bound_inner(devices))
        return min(self.cap, max(base, self.split_ub[k]) if k in self.split_ub else base)

    def joint(self, devices: list[int]) -> float:
        """The inner bound's memory-aware one (kvbound), the packing bound for a lone node."""
        k = self.node_kind.get(tuple(sorted(devices)))
        inner = getattr(self.bound_inner, "joint", self.bound_inner)
        base = float(inner(devices))
        return min(self.cap, max(base, self.split_ub[k]) if k in self.split_ub else base)

    def vectors(self, X: np.ndarray) -> np.ndarray:
        u = self.bound_inner.vectors(X)
        single = X.sum(axis=1) == 1
        for k, ub in self.split_ub.items():
            rows = single & (X[:, k] == 1)
            u[rows] = np.maximum(u[rows], ub)
        return np.minimum(u, self.cap)

    # -- value --------------------------------------------------------------------------------
    def value(self, devices: list[int]) -> Any:
        """The node's best packing (its parts re-planned on these devices), else the inner plan."""
        k = self.node_kind.get(tuple(sorted(devices)))
        if k not in self.subs:
            return self.inner(devices)
        node = [list(s) for s in _sub_kinds(self.cluster, tuple(sorted(devices)))]
        if k not in self.chosen:
            self._pack(k, node)
        parts, upper, exact = self.chosen[k], self.pack_upper[k], self.pack_exact[k]
        plans, off = [], [0] * len(node)
        for z in parts:  # each part on the next GPUs of each kind (interchangeable inside the node)
            plans.append(self.inner(sorted(g for j, n in enumerate(z) for g in node[j][off[j]:off[j] + n])))
            off = [a + b for a, b in zip(off, z, strict=True)]
        if len(plans) == 1 and sum(parts[0]) == len(devices):
            out: Any = dataclasses.replace(plans[0], optimal=bool(plans[0].optimal and exact))
        else:
            out = Bundle(tuple(plans), optimal=exact)
        self.uppers[id(out)] = upper
        return out

    def _pack(self, k: int, node: list[list[int]]) -> None:
        counts = tuple(len(s) for s in node)
        sizes = self.allowed(self.nk.kinds[k][0])
        got: dict[tuple[int, ...], tuple[float, float]] = {}  # z -> (tokens/s, upper)

        def solve(z: tuple[int, ...]) -> tuple[float, float]:
            if z not in got:
                devs = self._devices(node, z)
                got[z] = (0.0, 0.0)
                if self.fits(devs) and (sizes is None or sum(z) in sizes):
                    try:
                        p = self.inner(devs)
                    except InfeasibleError:
                        return got[z]
                    tps = float(p.serving.tokens_per_s) if p.feasible and p.serving is not None else 0.0
                    got[z] = (tps, max(tps, self.upper_inner(p)))
            return got[z]

        W = _packing(counts, lambda z: solve(z)[0])
        up = _packing(counts, lambda z: solve(z)[1])[counts][0]
        self.chosen[k] = W[counts][1] or (counts,)
        self.pack_upper[k] = max(up, W[counts][0])
        self.pack_exact[k] = W[counts][0] >= up * (1 - 1e-9)

    def quick(self, devices: list[int]) -> Any:
        """A cheaper first plan where the inner planner has one (its `quick`), else `value`."""
        k = self.node_kind.get(tuple(sorted(devices)))
        inner_quick = getattr(self.inner, "quick", None)
        return inner_quick(devices) if k not in self.subs and inner_quick is not None else self.value(devices)

    def complete(self, plan: Any) -> bool:
        """False for a quick plan that a full solve might still improve."""
        done = getattr(self.inner, "complete", None)
        return True if done is None or isinstance(plan, Bundle) else bool(done(plan))

    def upper_of(self, plan: Any) -> float:
        if id(plan) in self.uppers:
            return self.uppers[id(plan)]
        return self.upper_inner(plan)


