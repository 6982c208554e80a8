"""Tensor-parallel groups as the solver's unit: `Group`s of one node and their `CostTables` rows.

A group is t GPUs of one node that run one stage together (partitioner.costs.tp). The solvers
see one row per group exactly as they saw one row per GPU: its cost row c[group][l], its
capacity t·min C_m, and links from its first member. Rows of overlapping groups may coexist
only in a relaxation; a real plan uses pairwise disjoint groups (`disjoint`).

Per-node configurations: the ways to split a node's GPUs into groups of allowed sizes, GPUs of
one kind (GPU id and usable memory) taken as interchangeable, so ``4 T4`` has the four
configurations 1+1+1+1, 2+1+1, 2+2 and 4. Only maximal ones are kept (no leftover GPUs could
form another group): a solver may leave rows unused, so a sub-configuration is never better.

Takes the specs of `partitioner.models` duck-typed, like tables.py.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from partitioner.costs import roofline, tp
from partitioner.costs.roofline import Hardware, Shape, Work
from partitioner.costs.tables import _entry_cost, build_tables, engine_capacity_gb, select_engine
from partitioner.problem import CostTables

__all__ = ["Group", "node_configurations", "candidate_groups", "disjoint", "group_tables"]


@dataclass(frozen=True)
class Group:
    """t = len(members) GPUs (indices into cluster.devices) of one node running one stage."""

    members: tuple[int, ...]
    node: str

    @property
    def t(self) -> int:
        return len(self.members)


def _kinds(cluster: Any, devices: list[int]) -> dict[tuple[str, float], list[int]]:
    out: dict[tuple[str, float], list[int]] = {}
    for g in devices:
        dev = cluster.devices[g]
        out.setdefault((dev.gpu_id, round(cluster.capacity_gb(dev), 9)), []).append(g)
    return out


@functools.lru_cache(maxsize=1024)
def _block_sets(counts: tuple[int, ...], sizes: tuple[int, ...]) -> tuple[tuple[tuple[int, ...], ...], ...]:
    """Maximal multisets of blocks (each a count vector over kinds) with sizes in `sizes`; pure, so
    cached: the nodes of one kind and every later call share it (64 GPUs: 176 calls, 2 s)."""
    found: set[tuple[tuple[int, ...], ...]] = set()

    def blocks_of(size: int, left: tuple[int, ...]) -> list[tuple[int, ...]]:
        out = []
        for combo in itertools.product(*(range(c + 1) for c in left)):
            if sum(combo) == size:
                out.append(combo)
        return out

    def rec(left: tuple[int, ...], chosen: tuple[tuple[int, ...], ...]) -> None:
        if sum(left) < min(sizes):
            found.add(tuple(sorted(chosen)))
            return
        for size in sizes:
            if size > sum(left):
                continue
            for block in blocks_of(size, left):
                if chosen and block < chosen[-1]:  # canonical order: blocks non-decreasing
                    continue
                rec(tuple(a - b for a, b in zip(left, block, strict=True)), (*chosen, block))

    rec(counts, ())
    return tuple(sorted(found))


def node_configurations(cluster: Any, node: str, devices: list[int] | None = None,
                        sizes: tuple[int, ...] | None = None) -> list[tuple[Group, ...]]:
    """Every maximal split of `node`'s GPUs (or of `devices` on it) into groups of allowed sizes
    (cluster.tp_sizes, intersected with `sizes` if given); [] when no group fits."""
    if devices is None:
        devices = [g for g, d in enumerate(cluster.devices) if d.node == node]
    allowed = cluster.tp_sizes(node) if sizes is None else tuple(s for s in cluster.tp_sizes(node) if s in sizes)
    sizes = tuple(s for s in allowed if s <= len(devices))
    if not sizes:
        return []
    kinds = _kinds(cluster, devices)
    keys = sorted(kinds)
    counts = tuple(len(kinds[k]) for k in keys)
    configs = []
    for blocks in _block_sets(counts, sizes):
        used = [0] * len(keys)
        groups = []
        for block in blocks:
            members = []
            for k, n in enumerate(block):
                members += kinds[keys[k]][used[k]:used[k] + n]
                used[k] += n
            groups.append(Group(tuple(sorted(members)), node))
        configs.append(tuple(groups))
    return configs


def candidate_groups(cluster: Any, devices: list[int] | None = None,
                     sizes: tuple[int, ...] | None = None, whole_nodes: bool = False) -> list[Group]:
    """The union of every node's configurations (rows of the relaxation), in a stable order;
    `whole_nodes`: one group of all of each node's GPUs (Helix's machine-as-a-unit model)."""
    chosen = list(range(len(cluster.devices))) if devices is None else devices
    nodes = list(dict.fromkeys(cluster.devices[g].node for g in chosen))
    if whole_nodes:
        return [Group(tuple(g for g in chosen if cluster.devices[g].node == node), node) for node in nodes]
    out: dict[Group, None] = {}
    for node in nodes:
        on = [g for g in chosen if cluster.devices[g].node == node]
        for config in node_configurations(cluster, node, on, sizes):
            for group in config:
                out[group] = None
    return sorted(out, key=lambda gr: (gr.members[0], gr.t))


def disjoint(groups: list[Group] | tuple[Group, ...]) -> bool:
    """Whether no GPU is in two of `groups` (the constraint every real plan meets)."""
    seen: set[int] = set()
    for gr in groups:
        if seen.intersection(gr.members):
            return False
        seen.update(gr.members)
    return True


def _ring_link(cluster: Any, members: tuple[int, ...]) -> tuple[float, float]:
    """(alpha, beta) of the slowest hop of the ring through `members` (intra-node link)."""
    devs = [cluster.devices[g] for g in members]
    links = [cluster.link(a, b) for a, b in zip(devs, devs[1:] + devs[:1], strict=True)]
    return max(x.latency_ms for x in links) / 1e3, min(x.bandwidth_gb_s for x in links) * 1e9


def _roofline_rows(model: Any, cluster: Any, groups: list[Group], work: Work, engine: Any = None) -> np.ndarray:
    s = Shape.of(model.arch)
    kinds = ["embed"] + ["decoder"] * s.L + ["head"]
    flops = [roofline.embed_flops(s, work)] + [roofline.layer_flops(s, work)] * s.L + [roofline.head_flops(s, work)]
    nbytes = [roofline.embed_bytes(s, work)] + [roofline.layer_bytes(s, work)] * s.L + [roofline.head_bytes(s, work)]
    act = work.T * s.h * work.b_a  # one tensor of the layer's activations (docs/costmodel.md cut bytes / 2)
    logits = work.B * s.V * work.b_a
    rows = []
    # A row depends only on its members' GPU specs and its ring's link, and a layer's cost only on
    # (kind, FLOPs, bytes): the decoder layers of a dense model are one entry, and groups of the same
    # GPUs on the same link one row (64 GPUs: 232 groups x 82 layers were 19,000 roofline calls).
    made: dict[tuple[Any, ...], list[float]] = {}
    for gr in groups:
        specs = [cluster.devices[g].spec for g in gr.members]
        alpha, beta = _ring_link(cluster, gr.members) if gr.t > 1 else (0.0, np.inf)
        key = (tuple(id(spec) for spec in specs), alpha, beta)  # specs live in the cluster or the cache
        if key not in made:
            hws = [Hardware.of(spec, 8.0 * work.b_w, engine) for spec in specs]
            memo: dict[tuple[str, float, float], float] = {}
            for k, f, b in zip(kinds, flops, nbytes, strict=True):
                if (k, f, b) not in memo:
                    memo[k, f, b] = tp.tp_layer_s(k, f, b, hws, act_bytes=act, logits_bytes=logits, alpha_s=alpha,
                                                  beta_Bps=beta)
            row = [memo[k, f, b] for k, f, b in zip(kinds, flops, nbytes, strict=True)]
            row[-1] += max(hw.t_token for hw in hws)  # the engine's per-token cost, on the LM head (tables.py)
            made[key] = row
        rows.append(list(made[key]))
    return np.array(rows, dtype=float)


@dataclass(frozen=True)
class _Key:
    """A stand-in device for tables._entry_cost: looks a group's profile key up by its name."""

    name: str
    gpu_id: str


def _profile_rows(model: Any, cluster: Any, base: CostTables, groups: list[Group], *, field: str,
                  x: float, single: np.ndarray, cut: np.ndarray) -> np.ndarray:
    """A measured group key (``l4x2``) where every layer entry has it, else tp_from_single_s."""
    rows = []
    kinds = base.kinds
    for gr in groups:
        if gr.t == 1:
            rows.append(single[gr.members[0]])
            continue
        gpus = {cluster.devices[g].gpu_id for g in gr.members}
        key = tp.group_key(next(iter(gpus)), gr.t) if len(gpus) == 1 else None
        entries = model.layers
        if key is not None and all(getattr(e, field) and key in getattr(e, field) for e in entries):
            row: list[float] = []
            for index, entry in enumerate(entries):
                row += _entry_cost(model, index, entry, [_Key(key, key)], field=field, x=x) * entry.repeat
            rows.append(row)
            continue
        beta = _ring_link(cluster, gr.members)[1]
        rows.append([tp.tp_from_single_s(single[list(gr.members), ell].tolist(), kinds[ell], cut[ell] / 2.0, beta)
                     for ell in range(base.L)])
    return np.array(rows, dtype=float)


def group_label(cluster: Any, gr: Group) -> tuple[str, str]:
    """(device name, gpu name) of a group's row: ``l4-0+l4-1`` and ``l4x2`` (mixed: ``a+b``)."""
    devs = [cluster.devices[g] for g in gr.members]
    gpus = [d.gpu_id for d in devs]
    gpu = tp.group_key(gpus[0], gr.t) if len(set(gpus)) == 1 else "+".join(gpus)
    return "+".join(d.name for d in devs), gpu


def group_tables(model: Any, cluster: Any, groups: list[Group], base: CostTables | None = None,
                 engine: Any = None) -> CostTables:
    """CostTables whose rows are `groups` (module doc); `base` is build_tables(model, cluster, engine)
    (its links carry the engine's per-hop cost; `engine` also enters the roofline rows as there)."""
    base = build_tables(model, cluster, engine) if base is None else base
    if model.is_profile:
        wl = model.workload
        cost = _profile_rows(model, cluster, base, groups, field="cost", x=wl.batch, single=base.cost, cut=base.cut_bytes)
        prefill = None
        if base.prefill_cost is not None and base.prefill_cut_bytes is not None:
            prefill = _profile_rows(model, cluster, base, groups, field="prefill_cost", x=wl.prompt_tokens,
                                    single=base.prefill_cost, cut=base.prefill_cut_bytes)
    else:
        w = Work.of(model.workload)
        eng = select_engine(model, cluster, engine)
        cost = _roofline_rows(model, cluster, groups, w, eng)
        prefill = None
        if base.prefill_cost is not None:
            prefill = _roofline_rows(model, cluster, groups, dataclasses.replace(w, phase="prefill", B=1, in_flight=1),
                                     eng)
    first = [gr.members[0] for gr in groups]
    labels = [group_label(cluster, gr) for gr in groups]
    pool = None if base.kv_pool is None else base.kv_pool.regroup([gr.members for gr in groups])
    capacity = (engine_capacity_gb(pool) if pool is not None else
                np.array([tp.group_capacity_gb([float(base.capacity_gb[g]) for g in gr.members]) for gr in groups]))
    return dataclasses.replace(
        base,
        cost=cost,
        prefill_cost=prefill,
        capacity_gb=capacity,
        latency_s=base.latency_s[np.ix_(first, first)],
        bandwidth_Bps=base.bandwidth_Bps[np.ix_(first, first)],
        device_names=tuple(name for name, _ in labels),
        gpu_names=tuple(gpu for _, gpu in labels),
        node_names=tuple(gr.node for gr in groups),
        kv_pool=pool,
        gpus_per_row=tuple(len(gr.members) for gr in groups),
    )
