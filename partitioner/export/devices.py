"""Which physical device each pipeline rank must use, as the engines number them.

A plan names devices and nodes, not CUDA ordinals. Assumption (documented in the README):
the CUDA ordinal of a device is given by `ordinals` (CLI: `--device-id NAME=ORDINAL`);
otherwise it is the device's position among its node's devices in the cluster file (the plan's
`ordinal`, so list each node's GPUs in CUDA order), else the trailing integer of the device name ("gpu3" -> 3, "box-1" -> 1) when
every stage device of that node has a distinct one, else the device's position among its
node's stage devices sorted by name. Inferred ordinals are reported as a warning.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from partitioner.errors import InputError
from partitioner.export.shell import comment
from partitioner.export.view import PlanView, decoder_ranges, node_runs

__all__ = ["cuda_ordinals", "rank_comments", "single_node", "interleaved_nodes", "visible_devices", "group_ordinals",
           "rank_devices"]

_TRAILING = re.compile(r"(\d+)$")


def cuda_ordinals(view: PlanView, given: Mapping[str, int] | None = None) -> tuple[dict[str, int], list[str]]:
    """CUDA ordinal of every stage device (every member of a TP group), and the warnings saying
    which were inferred."""
    given = dict(given or {})
    names = {d for st in view.stages for d in st.group}
    unknown = sorted(set(given) - names)
    if unknown:
        raise InputError(f"--device-id names devices not in the plan: {', '.join(map(repr, unknown))} (plan: {', '.join(sorted(names))})")
    out: dict[str, int] = {}
    inferred: list[str] = []
    for node in view.nodes:
        devs = [d for st in view.stages if st.node == node for d in st.group]
        todo = [d for d in devs if d not in given]
        trailing = {d: _TRAILING.search(d) for d in todo}
        order = view.listed(node)
        if all(d in order for d in devs):  # the node's devices as cluster.yaml lists them
            listed = {d: order.index(d) for d in devs}
        else:  # a stage's `ordinal` is its (first) device's listed position
            listed = {st.group[0]: st.ordinal for st in view.stages if st.node == node and st.ordinal is not None and st.tp == 1}
        if len(listed) == len(devs) and len(set(listed.values())) == len(devs):
            guess = {d: listed[d] for d in todo}
        elif all(trailing.values()) and len({int(m.group(1)) for m in trailing.values() if m}) == len(todo):
            guess = {d: int(m.group(1)) for d, m in trailing.items() if m}
        else:
            guess = {d: i for i, d in enumerate(sorted(devs)) if d in todo}
        out.update({d: int(given[d]) for d in devs if d in given})
        out.update(guess)
        inferred += [f"{d!r} -> {guess[d]}" for d in todo]
        if len({out[d] for d in devs}) != len(devs):
            raise InputError(f"two devices on node {node!r} have the same CUDA ordinal: {[(d, out[d]) for d in devs]}")
    warnings = []
    if inferred:
        warnings.append(
            "CUDA ordinals assumed (" + ", ".join(inferred) + "): a device's position among its node's "
            "devices in the cluster file, else the trailing number of its name; "
            "pass --device-id NAME=ORDINAL if they differ"
        )
    return out, warnings


def rank_comments(view: PlanView, prefix: str = "rank") -> list[str]:
    """'# rank k: device ... on node ..., decoder layers a-b (+ embedding, + LM head)' lines."""
    lines = []
    for s, (st, (a, b)) in enumerate(zip(view.stages, decoder_ranges(view), strict=True)):
        layers = f"decoder layers {a}-{b - 1}" if b > a else "no decoder layers"
        extra = (" + embedding" if st.embed else "") + (" + LM head" if st.head else "")
        where = f"device {st.device!r}" if st.tp == 1 else f"TP group {list(st.group)!r} (tp {st.tp})"
        lines.append(comment(f"{prefix} {s}: {where} ({st.gpu}) on node {st.node!r}, {layers}{extra}"))
    return lines


def group_ordinals(view: PlanView, ords: Mapping[str, int]) -> list[list[int]]:
    """Per stage, its GPUs' CUDA ordinals in tensor-parallel rank order (ascending: the order
    vLLM's Ray executor hands a node's GPUs to consecutive ranks; any order works for the
    other engines, which index CUDA_VISIBLE_DEVICES by rank)."""
    return [sorted(ords[d] for d in st.group) for st in view.stages]


def rank_devices(view: PlanView, ords: Mapping[str, int], stages: Sequence[int] | None = None) -> str:
    """CUDA_VISIBLE_DEVICES listing the GPUs of `stages` (default all) in global rank order
    pp_rank * tp + tp_rank: stage by stage, each group in TP rank order."""
    groups = group_ordinals(view, ords)
    idx = range(view.S) if stages is None else stages
    return ",".join(str(o) for s in idx for o in groups[s])


def single_node(view: PlanView) -> bool:
    return len(view.nodes) == 1


def interleaved_nodes(view: PlanView) -> list[str]:
    """Nodes whose stages are not consecutive (the pipeline leaves the node and comes back)."""
    seen: list[str] = []
    bad: list[str] = []
    for st in view.stages:
        if seen and seen[-1] == st.node:
            continue
        if st.node in seen and st.node not in bad:
            bad.append(st.node)
        seen.append(st.node)
    return bad


def visible_devices(view: PlanView, ords: Mapping[str, int], prefix: str = "") -> list[str]:
    """`CUDA_VISIBLE_DEVICES=...` for a one-host plan, else one commented line per run of ranks on a node;
    with `CUDA_DEVICE_ORDER=PCI_BUS_ID` (the ordinals are PCI bus order, not CUDA's fastest-first default)."""
    if single_node(view):
        return [prefix + "export CUDA_DEVICE_ORDER=PCI_BUS_ID", prefix + "export CUDA_VISIBLE_DEVICES=" + rank_devices(view, ords)]
    lines = []
    for node, idx in node_runs(view):
        devs = rank_devices(view, ords, idx)
        lines.append(comment(f"on node {node!r} (ranks {idx[0]}-{idx[-1]}): CUDA_DEVICE_ORDER=PCI_BUS_ID "
                             f"CUDA_VISIBLE_DEVICES={devs}"))
    return lines
