"""The units the replica search counts in: GPU sets on small clusters, else whole nodes.

Over whole nodes (partitioner.deploy.kinds) a lone multi-GPU node is widened to its best packing
into several replicas (partitioner.deploy.split): such a packing is one vector of the recursion
however many replicas it holds, which is right when the count is free but not when it is fixed,
and a replica never takes part of one machine with parts of others. Over GPU units (`gpu_kinds`)
each vector is exactly one replica, any set of GPUs (part of a machine, or parts of several), so
the recursion of partitioner.deploy.replicas is exact over every partition of the GPUs into
replicas (exactly N of them for `--replicas N`) with some GPUs unused. That space has
prod_k (n_k + 1) vectors over the GPU kinds; up to MAX_UNIT_VECTORS both `auto` and a fixed
count search it. Above, `auto` searches whole nodes with the node packing. Where every
machine has one GPU the two spaces are the same.

A fixed count above MAX_UNIT_VECTORS searches a bounded family instead (`Units.splits`, searched by
`search_family`): whole machines, and for each part size p (a divisor of the size of a machine's
group of interchangeable cards, one GPU kind of `gpu_kinds`, or the fewest of its cards that hold
the model) the machines cut into parts of p of those cards (what is left of a group, one part),
each family member a search over its parts as GPU
units (exact over the partitions of those parts into N replicas) with at most MAX_SPLIT_VECTORS
vectors, coarsest first. So `--replicas 16` on 4 machines of 8 GPUs is 16 parts of 2. The best of
the family is an answer with exactly N replicas. Parts of one GPU are every partition of the GPUs,
so where that member is searched (at most MAX_SPLIT_VECTORS GPU sets) to the end the answer is
proven as the GPU-unit search proves it; otherwise its upper bound is the fluid bound of every
usable GPU (partitioner.deploy.bounds: additive over GPUs, so no deployment of disjoint replicas
exceeds it), and it is proven only where it meets that bound (other partitions are not searched).

Under `--tp node` (a machine is one TP group) a replica holds, per machine, the whole machine
or a TP degree the machine allows (as the node packing, partitioner.deploy.split, allows).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from partitioner.deploy.kinds import NodeKinds, gpu_kinds, node_kinds
from partitioner.errors import InfeasibleError, SolverError

__all__ = ["Units", "search_units", "search_family", "split_kinds", "MAX_UNIT_VECTORS"]

#: GPU sets searched at most: mixed-8gpu's 192 take 89 replica solves (2 s); a100-l4-t4's 1,024 (its
#: `pairs:` make every GPU a kind) took 377 (20 s) where whole machines take 8.
MAX_UNIT_VECTORS = 512
#: Vectors of one split of a fixed count's family (module doc): 4 machines of 8 GPUs in parts of 2 are 625.
MAX_SPLIT_VECTORS = 1024


@dataclass(frozen=True)
class Units:
    """What the replica search runs on: its kinds, the (possibly node-split) value and bound, the
    feasibility test, and whether it relabels memoised plans (whole nodes) or plans again (GPUs)."""

    kinds: NodeKinds
    gpus: bool  # True: GPU units, False: whole nodes
    fits: Callable[[list[int]], bool]
    note: str = ""
    splits: tuple[tuple[int, NodeKinds], ...] = ()  # a fixed count above the limit: (part size, parts)
    family: bool = False  # a fixed count above the limit: whole machines and `splits` (search_family)


def search_units(cluster: Any, count: int | None, tp: str, fits: Callable[[list[int]], bool]) -> Units:
    """The units for a replica count (`None`: auto); module doc."""
    nodes = node_kinds(cluster)
    if count == 1 or all(len(node) == 1 for kind in nodes.kinds for node in kind):
        return Units(nodes, False, fits)  # one-GPU machines: whole nodes are GPU units already
    fine = gpu_kinds(cluster)
    fits_units = fits if tp != "node" else _whole_groups(cluster, fits)
    if math.prod(n + 1 for n in fine.counts) <= MAX_UNIT_VECTORS:
        return Units(fine, True, fits_units)
    if count is None:  # auto: whole nodes, a lone machine packed into several (deploy.split)
        return Units(nodes, False, fits)
    parts = ((p, split_kinds(cluster, fine, p)) for p in _part_sizes(cluster, fine, fits_units))
    splits = tuple((p, kinds) for p, kinds in parts if math.prod(n + 1 for n in kinds.counts) <= MAX_SPLIT_VECTORS)
    sizes = ", ".join(str(p) for p, _ in splits)
    return Units(nodes, False, fits_units, splits=splits, family=True, note=(
        f"--replicas {count}: more than {MAX_UNIT_VECTORS} GPU sets; searched whole machines"
        + (f", then machines cut into parts of {sizes} GPU{'' if sizes == '1' else 's'}" if splits else "")
        + ("" if any(p == 1 for p, _ in splits) else
           " (not every split of the GPUs: proven only where the answer meets the upper bound)")))


def split_kinds(cluster: Any, fine: NodeKinds, p: int) -> NodeKinds:
    """`fine` (gpu_kinds) with every kind of n > p cards on one machine cut into n // p parts of p
    cards (one kind: interchangeable, as its cards are) and the n % p cards left as one part (a kind
    of its own); a kind of at most p cards is one part, machines of one GPU are whole already."""
    kinds: list[tuple[tuple[int, ...], ...]] = []
    labels: list[str] = []
    for units, label in zip(fine.kinds, fine.labels, strict=True):
        cards = [g for unit in units for g in unit]
        if len({cluster.devices[g].node for g in cards}) > 1:
            kinds.append(tuple(units))
            labels.append(label)
            continue
        q = len(cards) // p if len(cards) > p else 0
        if q:
            kinds.append(tuple(tuple(cards[i * p:(i + 1) * p]) for i in range(q)))
            labels.append(f"{p}×{label}")
        if len(cards) > q * p:
            kinds.append((tuple(cards[q * p:]),))
            labels.append(f"{len(cards) - q * p}×{label}")
    return NodeKinds(tuple(kinds), tuple(labels))


def _part_sizes(cluster: Any, fine: NodeKinds, fits: Callable[[list[int]], bool]) -> list[int]:
    """Part sizes of `split_kinds`, coarsest first: the proper divisors of each one-machine kind's
    size, and the fewest of its cards that hold the model (`fits`)."""
    groups = [[g for u in units for g in u] for units in fine.kinds
              if len({cluster.devices[u[0]].node for u in units}) == 1]
    sizes = {p for cards in groups for p in range(1, len(cards)) if len(cards) % p == 0}
    sizes |= {next((m for m in range(1, len(cards)) if fits(cards[:m])), 0) for cards in groups}
    return sorted(sizes - {0}, reverse=True)


def _whole_groups(cluster: Any, fits: Callable[[list[int]], bool]) -> Callable[[list[int]], bool]:
    """`fits` and, per machine, the whole machine or a TP degree it allows (`--tp node`)."""
    size = {n: sum(1 for d in cluster.devices if d.node == n) for n in {d.node for d in cluster.devices}}

    def whole_groups(devices: list[int]) -> bool:
        on: dict[str, int] = {}
        for g in devices:
            on[cluster.devices[g].node] = on.get(cluster.devices[g].node, 0) + 1
        return all(k == size[n] or k in cluster.tp_sizes(n) for n, k in on.items()) and fits(devices)

    return whole_groups


def search_family(units: Units, run: Callable[[NodeKinds, bool], Any], replicas: int,
                  room: tuple[int, float, float] = (0, math.inf, 0.0)) -> tuple[Any, str]:
    """The best ReplicaSearch of whole machines (`run(units.kinds, False)`) and of each split of
    `units.splits` (`run(parts, True)`: GPU units, each replica planned on its own parts), and
    which one it is. Parts of one GPU are every partition of the GPUs: when that member runs to
    the end its proof and upper bound stand for the answer; otherwise the answer is not proven
    and its upper bound is left to the caller (inf here). InfeasibleError when no member holds
    `replicas` replicas and that is proven: parts of one GPU searched, or `room` = (usable GPUs,
    their memory, the memory a replica needs) short of `replicas` replicas; else SolverError (not
    proven: other splits of the GPUs may hold them). A search stopped by the time limit or Ctrl-C
    ends the family with the best so far."""
    import dataclasses

    best: Any = None
    where, proof, solved, stopped = "", None, 0, ""
    for p, kinds in ((0, units.kinds), *units.splits):
        try:
            found = run(kinds, p > 0)
            solved += found.solved
        except InfeasibleError:
            if p == 1:  # every partition of the GPUs searched: none holds `replicas` replicas
                break
            continue
        except SolverError:  # stopped before it found `replicas` replicas
            if best is None:
                raise
            stopped = best.stopped or "time_limit"
            break
        if best is None or found.total > best.total * (1 + 1e-12):
            best, where = found, "whole machines" if p == 0 else f"machines in parts of {p} GPU{'s' if p > 1 else ''}"
        if found.stopped:  # the time limit or Ctrl-C: the family ends with the best so far
            stopped = found.stopped
            break
        if p == 1:
            proof = found
    if best is None:
        gpus, have, need = room
        if any(p == 1 for p, _ in units.splits) or replicas > gpus or have * (1 + 1e-9) < replicas * need:
            raise InfeasibleError(f"the cluster cannot hold {replicas} replicas of the model")
        sizes = ", ".join(str(p) for p, _ in units.splits)
        raise SolverError(f"not proven: no {replicas} replicas among whole machines"
                          + (f" or machines cut into parts of {sizes} GPUs" if sizes else "")
                          + f"; other splits of the GPUs may hold {replicas} (more than {MAX_UNIT_VECTORS} GPU sets, "
                          "not all searched)")
    best = dataclasses.replace(best, stopped=stopped or best.stopped)
    if proof is not None and math.isfinite(proof.upper_bound):
        optimal = proof.optimal and best.total <= proof.total * (1 + 1e-9)
        return dataclasses.replace(best, optimal=optimal, upper_bound=max(proof.upper_bound, best.total),
                                   solved=solved), where
    return dataclasses.replace(best, optimal=False, upper_bound=math.inf, solved=solved), where
