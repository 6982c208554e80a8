"""The device sequences an engine launches that keep the cluster file's order (`order: fixed`).

Under `--order fixed` a plan's stages take devices in the listed order, so the plans an engine
can launch are those on an ascending sequence of rows that the engine's rule
(`engine_sequences.realisable`) accepts. `listed_sequences` enumerates them: for every set of
nodes, a non-empty subset of each node's devices, merged in listed order; under the
equal-per-node rule (SGLang, TensorRT-LLM; presets/engines.yaml `launch_order`) only subsets of
one size c on every node. `listed_count` counts the candidates in closed form, so the search can
refuse before it starts when there are too many.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping

from partitioner.problem import CostTables
from partitioner.solvers.engine_sequences import Members, by_node, launch_rule, realisable

__all__ = ["listed_sequences", "listed_count"]


def listed_count(engine: str, t: CostTables) -> int:
    """How many candidate sequences `listed_sequences` tests (before the L cap)."""
    sizes = [len(v) for v in by_node(t).values()]
    one_node = sum(2 ** n - 1 for n in sizes)
    if launch_rule(engine) != "equal_per_node":
        return math.prod(2 ** n for n in sizes) - 1
    many = 0
    for c in range(1, max(sizes) + 1):
        e = [1] + [0] * len(sizes)  # elementary symmetric sums of C(n_i, c)
        for w in (math.comb(n, c) for n in sizes):
            for k in range(len(sizes), 0, -1):
                e[k] += e[k - 1] * w
        many += sum(e[2:])
    return one_node + many


def listed_sequences(engine: str, t: CostTables, address: Mapping[str, str] | None = None,
                     members: Members | None = None) -> Iterator[tuple[int, ...]]:
    """Every ascending sequence of at most L rows that `engine` launches (module doc)."""
    groups = by_node(t)
    names = list(groups)
    equal = launch_rule(engine) == "equal_per_node"
    for k in range(1, len(names) + 1):
        for used in itertools.combinations(names, k):
            if equal and k > 1:
                parts = (itertools.product(*(itertools.combinations(groups[n], c) for n in used))
                         for c in range(1, min(len(groups[n]) for n in used) + 1))
                choices: Iterator[tuple[tuple[int, ...], ...]] = itertools.chain.from_iterable(parts)
            else:
                choices = itertools.product(*([c for r in range(1, len(groups[n]) + 1)
                                               for c in itertools.combinations(groups[n], r)] for n in used))
            for choice in choices:
                seq = tuple(sorted(g for part in choice for g in part))
                if len(seq) <= t.L and realisable(engine, t, seq, address, members):
                    yield seq
