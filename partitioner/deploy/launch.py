"""Plans over TP groups restricted to the device orders an engine launches.

vLLM's Ray executor ranks GPUs node by node (driver's node first, then nodes with fewer workers,
then IP) and by ascending GPU id inside a node, and stage k holds global ranks k·t .. k·t + t − 1
(pp_rank·tp + tp_rank: vllm/distributed/parallel_state.py initialize_model_parallel); SGLang and
TensorRT-LLM need equal consecutive stages per node (partitioner/export/sglang.py, trtllm.py).
`partitioner.solvers.engine_order` solves a problem under those rules (`engine_sequences`); this wraps it for rows
that are TP groups of one degree, each ranked by its member GPUs. A group plan is launchable iff
its rows in stage order, each expanded into its GPUs, are in the engine's rank order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from partitioner.problem import Problem, Solution

__all__ = ["Launch", "RowsRule"]


@dataclass(frozen=True)
class Launch:
    """`engine`'s order rule, solved with `solver` (partitioner.solvers names)."""

    engine: str
    solver: str = "auto"
    address: Mapping[str, str] = field(default_factory=dict)

    @property
    def rule(self) -> str:
        from partitioner.solvers.engine_sequences import launch_rule

        return {"ray": "Ray ranks GPUs node by node: the driver's node, then nodes with fewer GPUs, then IP",
                "equal_per_node": "the same number of consecutive stages on every node"}.get(
                    launch_rule(self.engine), "any order")

    def solve(self, problem: Problem, members: Sequence[Sequence[int]]) -> Solution:
        """The best plan of `problem` the engine launches; row r runs on GPUs `members[r]`."""
        from partitioner.solvers import engine_order

        return engine_order.solve(problem, self.engine, self.solver, self.address, members=members)

    def realises(self, problem: Problem, devices: Sequence[int], members: Sequence[Sequence[int]]) -> bool:
        from partitioner.solvers import engine_sequences

        return engine_sequences.realisable(self.engine, problem.tables, devices, self.address, members)

    def on_rows(self, members: Sequence[Sequence[int]]) -> RowsRule:
        """The rule for problems whose row r runs on GPUs `members[r]` (serving.run's Rule)."""
        return RowsRule(self, tuple(tuple(m) for m in members))


@dataclass(frozen=True)
class RowsRule:
    """A `Launch` bound to the rows' GPUs: what `partitioner.serving.search` takes as its rule."""

    launch: Launch
    members: tuple[tuple[int, ...], ...]

    def solve(self, problem: Problem) -> Solution:
        return self.launch.solve(problem, self.members)

    def admits(self, problem: Problem, solution: Solution) -> bool:
        return self.launch.realises(problem, solution.devices, self.members)
