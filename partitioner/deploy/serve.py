"""Replicas under `--objective serve`: each replica picks its own batch B and in-flight count K.

A replica on devices D is planned exactly as `partition plan --objective serve` plans one pipeline
(partitioner.serving.search: the split, B and K with the most decode tokens/s under the KV cache,
the TPOT/TTFT limits and max_batch), over the units of D: its GPUs (tp "off"), its whole machines
as TP groups ("node"), or TP groups of one degree t, the best over t ("uniform"). For "auto" the
search runs over every candidate group of D (the relaxation of partitioner.deploy.groups: its
bound holds for every disjoint plan); when its best plan uses overlapping groups, the best
uniform-degree plan is taken instead and is not proven. Tables are built once per batch for the
whole cluster and restricted to each replica's rows.

The replica's value is its best tokens/s and its upper bound the search's (tokens/s no split at
any searched (B, K) beats; infinite when the search was cut short), which the replica search
(partitioner.deploy.replicas / columns) uses in its own bound.

`quick` (the first solve of a column, partitioner.deploy.columns): the same search over the
coarse batch grid (powers of two, the grid's largest batch and the previous replica's batch)
with every inner split solved by the exact DP where it applies and otherwise by the DP's seed
(`solvers.dp.hint`: the least-τ_max free-order plan and its lower bound), never by CP-SAT, so
that the answer does not depend on the machine's load. It bounds nothing (the batches it skips
may do better: its upper bound is infinite, the column keeps its cheap bound), and a column the
LP keeps using is solved fully later.
Each replica's search is limited in work as without a time limit (its inner solves: CP-SAT's
deterministic time, the DP's counts; the search's fixed solve counts), so every replica, the
whole-cluster one included, gets the budget a one-replica plan gets, and a user's `--time-limit`
only caps the wall clock (`left`: what is left of the whole command's). Each replica's search prunes
the batches that cannot beat its best so far and starts at the batch the previous replica chose
(partitioner.serving.run, "Pruning": the best plan and the bound are unchanged by it).

Late: once the command's time limit has run out, every search is cut short after its first batch
and bounds nothing, so a replica planned after it skips the `auto` relaxation and takes the first
uniform degree, lowest first, whose plan is disjoint (degree 1, single GPUs, always is), and one
whose limit ran out during its uniform degrees stops at the first disjoint plan found: one search
per replica instead of one per degree plus the relaxation's, so that the answer's remaining
layouts (planning.serving) are each still planned and the command answers soon after its limit.
Without a time limit nothing changes. The modes share the device tables at each batch.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

from partitioner.costs.groups import Group, candidate_groups, disjoint, group_tables
from partitioner.deploy.deployment import tp_notes
from partitioner.deploy.groups import GroupPlan, select_rows, to_plan
from partitioner.deploy.replica_result import ReplicaPlanner
from partitioner.errors import InfeasibleError, SolverError
from partitioner.problem import CostTables

__all__ = ["ServeUnits", "serve_planner", "SeedRule", "seconds_left"]


class SeedRule:
    """Inner solves without CP-SAT (module doc, `quick`): the exact DP where it applies, else the
    DP's seed plan and bound (partitioner.solvers._auto, before it hands over to CP-SAT)."""

    def solve(self, problem: Any) -> Any:
        from partitioner.solvers import dp
        from partitioner.solvers.budget import Budget, TimeUp

        budget = Budget(problem.time_limit_s)
        try:
            return dp.solve(problem, budget) if dp.applies(problem) else dp.hint(problem, budget)
        except TimeUp:
            found = budget.best_solution("TIME_LIMIT")
            if found is None:
                raise InfeasibleError("the time limit ran out before the DP found a split") from None
            return found

    def admits(self, problem: Any, solution: Any) -> bool:
        return True


class ServeUnits:
    """The cluster's units (rows) of one TP mode and their tables at each batch B, cached."""

    def __init__(self, model: Any, cluster: Any, tp: str, engine: str | None, sizes: tuple[int, ...] | None = None,
                 base: dict[int, CostTables] | None = None) -> None:
        from partitioner.costs import build_tables

        self.model, self.cluster, self.engine = model, cluster, engine
        self._build = build_tables
        self.base = {} if base is None else base  # device tables by batch, shared by the modes of one planner
        if tp == "off" or sizes == (1,):
            self.groups = [Group((g,), d.node) for g, d in enumerate(cluster.devices)]
        elif tp == "node":
            self.groups = candidate_groups(cluster, whole_nodes=True)
        else:
            self.groups = candidate_groups(cluster, sizes=sizes)
        self.single = all(gr.t == 1 for gr in self.groups)
        self.cache: dict[int, tuple[CostTables, CostTables]] = {}

    def tables(self, B: int) -> tuple[CostTables, CostTables]:
        """(device tables, unit tables) at batch B, in flight 1."""
        if B not in self.cache:
            m = self.model.with_batch(B, 1)
            if B not in self.base:
                self.base[B] = self._build(m, self.cluster, engine=self.engine)
            base = self.base[B]
            units = base if self.single else group_tables(m, self.cluster, self.groups, base, self.engine)
            self.cache[B] = (base, units)
        return self.cache[B]

    def rows(self, devices: list[int]) -> list[int]:
        on = set(devices)
        return [r for r, gr in enumerate(self.groups) if on.issuperset(gr.members)]


def serve_planner(model: Any, cluster: Any, *, tp: str, engine: str | None, regime: str, order: str, solver: str,
                  limits: Any, batches: list[int] | None, left: Callable[[], float | None],
                  launch: Any = None) -> ReplicaPlanner:
    """devices -> the replica's serve Plan (module doc); `.upper(plan)` its tokens/s upper bound,
    `.quick(devices)` the plan without CP-SAT, `.complete(plan)` False for a quick plan a full
    search may improve. `launch` (partitioner.deploy.launch): every solve keeps to the orders
    that engine launches (then, or with a solver other than auto, quick is the full search)."""
    from partitioner.serving.search import search

    shared: dict[int, CostTables] = {}  # the device tables at each batch, built once for every mode
    relaxation = ServeUnits(model, cluster, tp, engine, base=shared) if tp == "auto" else None
    if tp in ("auto", "uniform"):
        degrees = sorted({s for d in cluster.devices for s in cluster.tp_sizes(d.node)})
        modes = [ServeUnits(model, cluster, "uniform", engine, sizes=(t,), base=shared) for t in degrees]
    else:
        modes = [ServeUnits(model, cluster, tp, engine, base=shared)]
    seeded = launch is None and solver == "auto"
    last = [None]  # the batch of the last replica planned (the next search starts there)

    def coarse(start: int | None) -> list[int]:
        from partitioner.serving.search import MAX_BATCH, batch_grid

        full = batch_grid(min(limits.max_batch or MAX_BATCH, MAX_BATCH)) if batches is None else batches
        return sorted({b for b in full if b & (b - 1) == 0} | {full[-1]} | ({start} if start in full else set()))

    def run(units: ServeUnits, devices: list[int], quick: bool = False) -> tuple[Any, tuple[Group, ...], bool] | None:
        """The serve search over `units` inside `devices`: (result, rows' groups, plan disjoint)."""
        rows = units.rows(devices)
        if not rows:
            return None
        rest = left()
        rest = None if rest is None else max(0.1, rest)
        rule = None if launch is None else launch.on_rows([units.groups[r].members for r in rows])
        grid = batches
        if quick:
            rule, grid = SeedRule(), coarse(last[0])
        from partitioner import interrupts

        mark = interrupts.count()
        try:
            res = search(lambda B: select_rows(units.tables(B)[1], rows), grid, regime=regime, order=order,
                         solver=solver, limits=limits, time_limit_s=rest, rule=rule, prune=True, start=last[0])
        except (InfeasibleError, SolverError):  # nothing found within the limits on these rows
            return None
        if interrupts.since(mark):  # the serve search kept its best on Ctrl-C: the replica search stops too
            raise KeyboardInterrupt
        groups = tuple(units.groups[r] for r in rows)
        return res, groups, disjoint([groups[r] for r in res.best.solution.devices])

    def planner(devices: list[int], quick: bool) -> tuple[Any, float, bool]:
        quick = quick and seeded
        found: list[tuple[Any, tuple[Group, ...], bool]] = []
        upper, skipped = 0.0, False
        late = _spent(left) and len(modes) > 1  # module doc, "Late"
        if relaxation is not None and not late:  # tp auto: its bound holds for every disjoint plan of any degrees
            got = run(relaxation, devices, quick)
            if got is not None:
                upper = got[0].upper_bound
                if got[2]:
                    found.append(got)
        if not found:
            for units in modes:
                got = run(units, devices, quick)
                if got is None:
                    continue
                if relaxation is None or late:
                    upper = max(upper, got[0].upper_bound)
                if got[2]:
                    found.append(got)
                    if late or _spent(left):  # module doc, "Late"
                        skipped = units is not modes[-1]  # the degrees not searched bound nothing
                        break
        if not found:
            raise InfeasibleError("no batch, in-flight count and split of these devices serves the model")
        res, groups, _ = max(found, key=lambda f: f[0].best.serving.tokens_per_s)
        best = res.best
        last[0] = best.serving.batch
        tps = best.serving.tokens_per_s
        # late with tp auto: the uniform degrees' bounds say nothing of plans mixing degrees
        unproven = quick or (late and relaxation is not None) or (skipped and relaxation is None)
        upper = math.inf if unproven else max(upper, tps)
        gp = GroupPlan(best.problem, best.solution, groups, False, best.solution.lower_bound, res.solves)
        plan = to_plan(gp, cluster)
        optimal = bool(upper <= tps * (1 + 1e-9))
        # the serve objective's figures as planning.pipeline.serve_plan gives them: 1/tokens/s and
        # 1/(upper bound in tokens/s), 0.0 when no bound is known (a quick plan)
        plan = dataclasses.replace(plan, objective="serve", serving=best.serving, optimal=optimal,
                                   objective_value=(1.0 / tps,),
                                   lower_bound=1.0 / upper if math.isfinite(upper) and upper > 0 else 0.0,
                                   status="OPTIMAL" if optimal else ("TIME_LIMIT" if res.notes else "FEASIBLE"),
                                   frontier=tuple(p.to_dict() for p in res.frontier), notes=tuple(tp_notes(plan)))
        return plan, upper, not quick

    return ReplicaPlanner(planner)


def seconds_left(deadline: float | None) -> Callable[[], float | None]:
    """`left` for serve_planner from a deadline on time.monotonic (None: no cap)."""
    import time

    return (lambda: None) if deadline is None else (lambda: max(0.0, deadline - time.monotonic()))


def serve_inputs(model: Any, cluster: Any, *, tp: str, engine: str | None, regime: str, order: str, solver: str,
                 tpot_ms: float | None, ttft_ms: float | None, max_batch: int | None,
                 left: Callable[[], float | None] | None = None, launch: Any = None,
                 deadline: float | None = None) -> tuple[ReplicaPlanner, Any]:
    """(replica planner, replica bound) for the serve objective, with the limits of `serve_plan`;
    `left()` the seconds left of the command's wall-clock cap, or a `deadline` on time.monotonic."""
    if left is None:
        left = seconds_left(deadline)
    from partitioner.costs import build_tables
    from partitioner.deploy.bound_inputs import for_serve
    from partitioner.planning.serve_limits import serve_limits
    from partitioner.serving.search import serve_grid

    limits, batches = serve_limits(model, tpot_ms, ttft_ms, max_batch)
    planner = serve_planner(model, cluster, tp=tp, engine=engine, regime=regime, order=order, solver=solver,
                            limits=limits, batches=batches, left=left, launch=launch)
    grid = serve_grid(batches, max_batch)
    bound = for_serve(model, cluster, lambda B: build_tables(model.with_batch(B, 1), cluster, engine=engine), grid,
                      tp, engine, monotone=batches is None)
    return planner, bound


def _spent(left: Callable[[], float | None]) -> bool:
    """Whether the command's wall-clock cap has run out (`left()`: seconds left, None: no cap)."""
    rest = left()
    return rest is not None and rest <= 0.0
