"""The default serving answer on a cluster of several machines, and what one machine's loss costs.

Candidates, each valued by the serve planner of partitioner.deploy.serve (a replica's split, batch
B and in-flight count K with the most tokens/s under the TPOT/TTFT limits; inside each (B, K) the
least τ_max first):

- one pipeline over every machine;
- Helix's "separate pipelines" (Helix-ASPLOS25, artifact_evaluation/*/layout_llama70b/separate):
  per machine kind, the best packing of its machines into homogeneous replicas
  (partitioner.deploy.seeds, a 1-D knapsack per kind), plus one pipeline over the machines left.

Pipelines of at most REFINE_GPUS GPUs are valued by the planner's full serve search, larger ones
by its `quick` search (coarse batch grid, exact DP or its seed, never CP-SAT: the answer does not
depend on the machine's load). Not proven optimal
over replica layouts: the full replica search (`--replicas auto`) explores every count vector.

`max_machines` (--max-machines-per-pipeline) drops every candidate pipeline over more machines.

Engines: with `--engine` (or the files' `engine:`) naming an engine that launches servers, every
candidate's plan is one that engine launches (partitioner.solvers.engine_sequences: vLLM 0.33.0
places a pipeline over 3 or more hosts only with equal GPU counts, over two with each host's GPUs
in ascending order). A plan the unrestricted search finds is kept when the engine's rule admits
it; otherwise the candidate is planned again by the serve search restricted to the orders the
engine launches (partitioner.deploy.launch), so the answer never needs a layout it cannot place.

Failure (`failure`): for each machine kind, the best candidate of the same family on the cluster
without one machine of that kind (machines of a kind are interchangeable,
partitioner.deploy.kinds); the worst case is the least of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from partitioner.deploy.kinds import NodeKinds
from partitioner.errors import InfeasibleError

__all__ = ["REFINE_GPUS", "Layout", "Loss", "Failure", "Ruled", "Values", "launchable", "best_layout", "layouts", "failure",
           "failure_of"]

REFINE_GPUS = 8  # replicas of at most this many GPUs get the full serve search after the quick one

Vector = tuple[int, ...]


@dataclass(frozen=True)
class Layout:
    """Replicas as node-count vectors (partitioner.deploy.kinds) and their total tokens/s."""

    vectors: tuple[Vector, ...]
    tokens_per_s: float
    family: str  # "one pipeline" or "separate pipelines"


@dataclass(frozen=True)
class Loss:
    """The best answer without one machine of a kind."""

    kind: str  # the machine kind's GPUs, e.g. "a100-40gb" or "2×l4"
    machines: tuple[str, ...]  # the nodes of that kind (any one of them lost)
    tokens_per_s: float  # 0.0: nothing serves the model without it


@dataclass(frozen=True)
class Failure:
    """What one machine's loss costs: tokens/s without a machine of each kind; the worst case."""

    tokens_per_s: float  # the answer's own tokens/s
    losses: tuple[Loss, ...]

    @property
    def worst(self) -> Loss:
        return min(self.losses, key=lambda loss: loss.tokens_per_s)

    def to_dict(self) -> dict[str, Any]:
        w = self.worst
        return {
            "tokens_per_s": self.tokens_per_s,
            "worst": {"kind": w.kind, "machines": list(w.machines), "tokens_per_s": w.tokens_per_s},
            "without": [{"kind": x.kind, "machines": list(x.machines), "tokens_per_s": x.tokens_per_s}
                        for x in self.losses],
        }


@dataclass(frozen=True)
class Ruled:
    """An engine's launch-order rule for the candidates (module doc, "Engines"): `admits(plan)`
    whether the engine launches a replica's plan, `planner()` the serve planner that searches
    only the orders it launches (built on first use)."""

    planner: Callable[[], Any]
    admits: Callable[[Any], bool]


def launchable(plan: Any, engine: str, tables: Any, cluster: Any) -> bool:
    """Whether `engine` launches `plan` (a Plan; stages of single GPUs or TP groups) as its stage
    order, by the engine record's launch-order rule (partitioner.solvers.engine_sequences.realisable,
    which the restricted searches use too); `tables` are the whole cluster's, rows = its devices."""
    from partitioner.solvers.engine_rule import addresses
    from partitioner.solvers.engine_sequences import realisable

    index = {d.name: g for g, d in enumerate(cluster.devices)}
    members: list[tuple[int, ...]] = [(g,) for g in range(len(cluster.devices))]
    rows = []
    for st in plan.stages:
        group = tuple(sorted(index[name] for name in (st.members or (st.device,))))
        members[group[0]] = group
        rows.append(group[0])
    return realisable(engine, tables, rows, addresses(cluster), members)


class Values:
    """tokens/s of a count vector by the quick serve planner, memoised (0.0: nothing fits); with
    `ruled`, a plan the engine does not launch is replaced by the rule-bound planner's."""

    def __init__(self, nk: NodeKinds, planner: Any, fits: Callable[[list[int]], bool],
                 node_of: Callable[[int], str], ruled: Ruled | None = None, deadline: float | None = None) -> None:
        self.nk, self.planner, self.fits, self.node_of, self.ruled = nk, planner, fits, node_of, ruled
        self.memo: dict[Vector, tuple[float, Any]] = {}
        self._bound: Any = None  # the rule-bound planner, once built
        self.deadline = deadline  # time.monotonic() of the command's time limit (None: none)
        self.skipped = 0  # vectors left unplanned (valued 0) because the time limit had run out

    def __call__(self, x: Vector) -> float:
        if x not in self.memo and self._out_of_time():
            self.skipped += 1
            return 0.0  # not planned, not remembered: the first vector (one pipeline) always is
        if x not in self.memo:
            devices = self.nk.devices(x)
            plan = None
            if devices and self.fits(devices):
                try:
                    plan = self.planner(devices) if len(devices) <= REFINE_GPUS else self.planner.quick(devices)
                    if self.ruled is not None and not self.ruled.admits(plan):
                        plan = None
                        if self._bound is None:
                            self._bound = self.ruled.planner()
                        plan = self._bound(devices)
                except InfeasibleError:
                    plan = None
            self.memo[x] = (0.0 if plan is None else float(plan.serving.tokens_per_s), plan)
        return self.memo[x][0]


    def _out_of_time(self) -> bool:
        import time

        return self.deadline is not None and bool(self.memo) and time.monotonic() > self.deadline


def best_layout(counts: Vector, values: Values, max_machines: int | None) -> Layout:
    """The best candidate (module doc) on `counts` machines of each kind; InfeasibleError if none."""
    return max(layouts(counts, values, max_machines), key=lambda c: (c.tokens_per_s, -len(c.vectors)))


def layouts(counts: Vector, values: Values, max_machines: int | None) -> list[Layout]:
    """Every candidate (module doc) on `counts` machines of each kind; InfeasibleError if none."""
    from partitioner.deploy.seeds import kind_seeds, seed_deployment

    def allowed(x: Vector) -> bool:
        return sum(x) > 0 and (max_machines is None or sum(x) <= max_machines)

    cands: list[Layout] = []
    if allowed(counts) and values(counts) > 0:
        cands.append(Layout((counts,), values(counts), "one pipeline"))
    seeds = [x for x in kind_seeds(counts, lambda x: values.fits(values.nk.devices(x))) if allowed(x)]
    total, chosen = seed_deployment(counts, seeds, values)
    left = tuple(n - sum(x[k] for x in chosen) for k, n in enumerate(counts))
    if chosen and allowed(left) and values(left) > 0:
        chosen, total = [*chosen, left], total + values(left)
    if chosen:
        cands.append(Layout(tuple(chosen), total, "separate pipelines"))
    if not cands:
        limit = "" if max_machines is None else f" of at most {max_machines} machines"
        raise InfeasibleError(f"no pipeline{limit} of these machines serves the model")
    return cands


def failure(counts: Vector, layout: Layout, values: Values, max_machines: int | None) -> Failure:
    """tokens/s of the best candidate without one machine of each kind (module doc)."""

    def without(fewer: Vector) -> float:
        try:
            return best_layout(fewer, values, max_machines).tokens_per_s
        except InfeasibleError:
            return 0.0

    return failure_of(values.nk, layout.tokens_per_s, values.node_of, without)


def failure_of(nk: NodeKinds, tokens_per_s: float, node_of: Callable[[int], str],
               without: Callable[[Vector], float]) -> Failure:
    """The failure block of an answer of `tokens_per_s` on machines of kinds `nk`: for each kind,
    `without(counts with one machine of that kind fewer)` (tokens/s of the best answer there,
    0.0 when nothing serves); `node_of(device)` names a machine. Every failure block is built here
    (the default answer's and partitioner.planning.failure's for explicit requests)."""
    losses = []
    for k, n in enumerate(nk.counts):
        if n == 0:
            continue
        fewer = tuple(c - (i == k) for i, c in enumerate(nk.counts))
        names = tuple(node_of(node[0]) for node in nk.kinds[k])
        losses.append(Loss(nk.labels[k], names, without(fewer)))
    return Failure(tokens_per_s, tuple(losses))
