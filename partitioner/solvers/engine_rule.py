"""One engine's device-order rule as an object the outer searches take (serving.search, deploy).

`partitioner.solvers.engine_sequences` holds the rules and `engine_order` the exact restricted search; this binds
an engine, a solver, the nodes' addresses (vLLM breaks ties in its node order by IP) and the
GPUs the engine does not support, so a search can solve under the rule and check a candidate
split (an engine baseline's, say) against it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from partitioner.problem import CostTables, Problem, Solution

__all__ = ["OrderRule", "addresses", "order_rule"]


def addresses(cluster: Any) -> dict[str, str]:
    """cluster.yaml's `address:` per node, where given."""
    if cluster is None:
        return {}
    return {n: a for n in {d.node for d in cluster.devices} if (a := cluster.address_of(n))}


@dataclass(frozen=True)
class OrderRule:
    """Plans `engine` launches, found with `solver`, never on the rows of `exclude`."""

    engine: str
    solver: str = "auto"
    address: Mapping[str, str] = field(default_factory=dict)
    exclude: tuple[int, ...] = ()

    def solve(self, problem: Problem) -> Solution:
        from partitioner.solvers import engine_order

        return engine_order.solve(problem, self.engine, self.solver, self.address, self.exclude)

    def admits(self, problem: Problem, solution: Solution) -> bool:
        from partitioner.solvers import engine_sequences

        if set(solution.devices) & set(self.exclude):
            return False
        return engine_sequences.realisable(self.engine, problem.tables, solution.devices, self.address)


def order_rule(engine: str | None, solver: str, cluster: Any, tables: CostTables) -> OrderRule | None:
    """The rule of an explicitly chosen engine other than generic, for an exact solver; else None."""
    from partitioner.registry import EXACT_CHOICES
    from partitioner.solvers import engine_sequences

    if engine in (None, "generic") or solver not in EXACT_CHOICES:
        return None
    exclude = tuple(engine_sequences.unsupported_devices(tables, engine))
    return OrderRule(engine, solver, addresses(cluster), exclude)
