"""The device sequences an engine launches as its stage order (the rules of the export modules).

An engine does not run every device order: SGLang and TensorRT-LLM need the same number of
consecutive stages on every node; vLLM 0.33.0 runs those too (its multiprocessing multi-node
launch) and, on two hosts with unequal counts, Ray's order (the driver's node first, ascending
GPU id within a node; with three or more such hosts Ray orders them by random node ids, so
none is launched); llama.cpp and one host run any order (rules and sources: partitioner/export/vllm.py,
sglang.py, trtllm.py). `realisable` tests one plan, `realisable_sequences` enumerates every
launchable sequence (`sequence_count` of them, in closed form), `candidate_orders` lists orders
that cover them all as subsequences, and `unsupported_devices` the GPUs below an engine's
minimum compute capability. A device's ordinal is its position among its node's devices in the
cluster file (the export default).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence

from partitioner.problem import CostTables
from partitioner.registry import LAUNCH_TARGETS

__all__ = [
    "Members", "realisable", "realisable_sequences", "candidate_orders", "unsupported_devices", "unsupported_notes",
    "by_node", "count", "sequence_count", "launch_rule", "ray_order",
]


def launch_rule(engine: str | None) -> str:
    """The engine record's launch-order rule (presets/engines.yaml `launch_order`: any, ray,
    equal_per_node); an id with no record (None, "generic") launches any order."""
    from partitioner.models.engines import resolve_engine

    return resolve_engine(engine).launch_order


def ray_order(engine: str | None) -> bool:
    return launch_rule(engine) == "ray"


def _ordinal(t: CostTables, g: int) -> int:
    return t.node_names[:g].count(t.node_names[g])


def _contiguous(nodes: Sequence[str]) -> bool:
    runs = [n for k, n in enumerate(nodes) if k == 0 or nodes[k - 1] != n]
    return len(runs) == len(set(runs))


Members = Sequence[Sequence[int]]  # per row of the tables: its GPUs (a TP group's), in ascending ordinal order


def _gpus(t: CostTables, devices: Sequence[int], members: Members | None) -> list[tuple[str, int]]:
    """(node, ordinal) of every GPU of the plan in rank order (global rank = pp_rank·tp + tp_rank)."""
    if members is None:
        return [(t.node_names[g], _ordinal(t, g)) for g in devices]
    return [(t.node_names[g], int(o)) for g in devices for o in members[g]]


def realisable(engine: str, t: CostTables, devices: Sequence[int], address: Mapping[str, str] | None = None,
               members: Members | None = None) -> bool:
    """Whether `engine` runs stage s on row devices[s] (a GPU, ordinals as listed in the cluster,
    or with `members` a TP group of those GPUs: any numbers ordered as the GPU ids are)."""
    nodes = [t.node_names[g] for g in devices]
    if launch_rule(engine) == "any" or len(set(nodes)) == 1:
        return True
    if not _contiguous(nodes):
        return False
    if ray_order(engine):
        from partitioner.solvers.engine_ray import ray_realises

        return ray_realises(_gpus(t, devices, members), dict(address or {}))
    counts = {n: nodes.count(n) for n in nodes}
    return len(set(counts.values())) == 1


def unsupported_devices(t: CostTables, engine: str) -> list[int]:
    """Devices whose catalogue GPU is below `engine`'s minimum compute capability (its record's
    `min_compute_capability`, presets/engines.yaml)."""
    from partitioner.models.capability import compute_capability
    from partitioner.models.engines import resolve_engine

    if engine not in LAUNCH_TARGETS:
        return []
    minimum = resolve_engine(engine).min_cc
    if minimum is None:
        return []
    return [g for g, gpu in enumerate(t.gpu_names) if (cc := compute_capability(gpu)) is not None and cc < minimum]


def unsupported_notes(t: CostTables, engine: str, devices: Sequence[int]) -> list[str]:
    """One line per GPU type saying which of `devices` the engine leaves out, and why."""
    by_gpu: dict[str, list[str]] = {}
    for g in devices:
        by_gpu.setdefault(t.gpu_names[g], []).append(repr(t.device_names[g]))
    return [f"{engine} leaves out {', '.join(names)} ({gpu}): below the engine's minimum compute capability"
            for gpu, names in by_gpu.items()]


def by_node(t: CostTables) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for g, n in enumerate(t.node_names):
        out.setdefault(n, []).append(g)
    return out


def count(engine: str, groups: Mapping[str, list[int]]) -> int:
    N = len(groups)
    one_host = sum(math.factorial(len(v)) for v in groups.values())
    return math.factorial(N) * math.prod(math.factorial(len(v)) for v in groups.values()) + one_host


def candidate_orders(engine: str, t: CostTables) -> Iterator[list[int]]:
    """Device orders whose subsequences include every plan `engine` realises."""
    groups = by_node(t)
    names = list(groups)
    for n in names:  # one host: every engine runs any order (CUDA_VISIBLE_DEVICES)
        if len(groups[n]) > 1 or len(names) == 1:
            yield from (list(p) for p in itertools.permutations(groups[n]))
    for perm in itertools.permutations(names):  # vLLM's two-host Ray sequences are subsequences of these too
        for inner in itertools.product(*(itertools.permutations(groups[n]) for n in perm)):
            yield [g for block in inner for g in block]


def _subsets(devices: Sequence[int]) -> list[tuple[int, ...]]:
    return [c for r in range(1, len(devices) + 1) for c in itertools.combinations(devices, r)]


def _elementary(weights: Sequence[int]) -> list[int]:
    """e_0..e_N: sums over k-subsets of the product of their weights."""
    e = [1] + [0] * len(weights)
    for w in weights:
        for k in range(len(weights), 0, -1):
            e[k] += e[k - 1] * w
    return e


def sequence_count(engine: str, groups: Mapping[str, list[int]], L: int) -> int:
    """How many sequences `realisable_sequences` yields (before the L cap), in closed form."""
    sizes = [len(v) for v in groups.values()]
    total = sum(math.perm(n, j) for n in sizes for j in range(1, min(n, L) + 1))
    if ray_order(engine):  # two hosts over Ray: ascending subsets of unequal sizes, either host driving
        total += sum(2 * math.comb(a, i) * math.comb(b, j) for a, b in itertools.combinations(sizes, 2)
                     for i in range(1, a + 1) for j in range(1, b + 1) if i != j)
    for c in range(1, max(sizes) + 1):
        e = _elementary([math.perm(n, c) for n in sizes])
        total += sum(math.factorial(k) * e[k] for k in range(2, len(sizes) + 1))
    return total


def realisable_sequences(engine: str, t: CostTables, address: Mapping[str, str] | None = None) -> Iterator[tuple[int, ...]]:
    """Every device sequence of at most L devices that `engine` launches as stage order."""
    groups, L = by_node(t), t.L  # `address` no longer decides vLLM's order (0.33.0: Ray node ids)
    for devs in groups.values():  # one host: any order
        for j in range(1, min(len(devs), L) + 1):
            yield from itertools.permutations(devs, j)
    names = list(groups)
    for k in range(2, len(names) + 1):
        for used in itertools.combinations(names, k):
            if ray_order(engine) and k == 2:  # Ray on two hosts, unequal counts: each host's GPUs ascending
                for choice in itertools.product(*(_subsets(groups[n]) for n in used)):
                    if len(choice[0]) != len(choice[1]) and sum(map(len, choice)) <= L:
                        yield tuple(choice[0]) + tuple(choice[1])
                        yield tuple(choice[1]) + tuple(choice[0])
            top = min(len(groups[n]) for n in used)
            for c in range(1, min(top, L // k) + 1):
                for perm in itertools.permutations(used):
                    for inner in itertools.product(*(itertools.permutations(groups[n], c) for n in perm)):
                        yield tuple(g for block in inner for g in block)
