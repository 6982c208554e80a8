"""One pipeline over tensor-parallel groups, exactly: which groups, in what order, which layers.

The rows are groups (partitioner.costs.groups) and a plan must use pairwise disjoint groups.
The solvers (`partitioner.solvers.solve`) know nothing of groups, so exactness is kept above
them in two steps:

1. Relaxation. Solve once with every candidate group as a row, overlapping ones included. Its
   feasible set contains every disjoint plan, so its optimum bounds every disjoint plan's
   objective from below; if its own plan uses disjoint groups (any disjoint groups of allowed
   sizes on their nodes are a valid deployment) it is optimal.
2. Otherwise enumerate the per-node configurations (node_configurations): each sub-problem's
   rows are disjoint by construction, and every disjoint plan lives in some configuration, so
   the best sub-problem optimum is the optimum. Nodes of one kind (same GPUs, same allowed TP
   degrees, uniform links) are interchangeable: only multisets of configurations over them
   are solved. Stops early when a sub-problem reaches the relaxation's key. Beyond
   MAX_CONFIGS sub-problems every node of a kind takes the same configuration: the plan is
   then not proven and carries the relaxation's bound.

`uniform_tp` (vLLM, SGLang, TensorRT-LLM take one TP degree for every stage): the above for
each degree t alone, best over t.

`launch` (partitioner.deploy.launch): every solve on disjoint rows keeps to the device orders the
engine launches, and the relaxation's plan is accepted only if the engine launches it; its
optimum still bounds every launchable plan (the restricted set is a subset).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from partitioner.costs.groups import Group, candidate_groups, disjoint, group_tables, node_configurations
from partitioner.deploy.launch import Launch
from partitioner.errors import InfeasibleError
from partitioner.problem import CostTables, Problem, Solution, explain_infeasible, lex_compare, select_rows

__all__ = ["GroupPlan", "solve_groups", "select_rows", "MAX_CONFIGS", "groups_bound"]

MAX_CONFIGS = 400
Solve = Callable[[Problem], Solution]


@dataclass(frozen=True)
class GroupPlan:
    """The best plan over groups: the solver's Solution on `problem` (rows = `groups`)."""

    problem: Problem
    solution: Solution
    groups: tuple[Group, ...]  # row r of problem.tables is groups[r]
    proven: bool
    lower_bound: float
    subproblems: int


def _node_kind(cluster: Any, node: str, on: list[int]) -> tuple[Any, ...]:
    devs = sorted((cluster.devices[g].gpu_id, round(cluster.capacity_gb(cluster.devices[g]), 9)) for g in on)
    return (tuple(devs), cluster.tp_sizes(node))


def _configs(cluster: Any, devices: list[int], sizes: tuple[int, ...] | None) -> tuple[list[list[tuple[Group, ...]]], list[Any]]:
    """Per node its configurations (restricted to `sizes` if given), and the node kinds."""
    nodes = list(dict.fromkeys(cluster.devices[g].node for g in devices))
    per, kinds = [], []
    for node in nodes:
        on = [g for g in devices if cluster.devices[g].node == node]
        configs = node_configurations(cluster, node, on, sizes=sizes)
        if not configs:
            continue  # no group of an allowed size fits this node
        per.append(configs)
        kinds.append(_node_kind(cluster, node, on) if not cluster.pairs else node)
    return per, kinds


def _combos(per: list[list[tuple[Group, ...]]], kinds: list[Any], uniform: bool) -> tuple[int, Any]:
    """(count, iterator of per-node config choices), one per multiset over interchangeable nodes."""
    by_kind: dict[Any, list[int]] = {}
    for i, k in enumerate(kinds):
        by_kind.setdefault(k, []).append(i)
    groups = list(by_kind.values())
    if uniform:
        options = [[(c,) * len(ix) for c in range(len(per[ix[0]]))] for ix in groups]
    else:
        options = [list(itertools.combinations_with_replacement(range(len(per[ix[0]])), len(ix))) for ix in groups]
    count = math.prod(len(o) for o in options)

    def gen() -> Any:
        for pick in itertools.product(*options):
            choice = [0] * len(per)
            for ix, cs in zip(groups, pick, strict=True):
                for i, c in zip(ix, cs, strict=True):
                    choice[i] = c
            yield choice

    return count, gen()


def solve_groups(model: Any, cluster: Any, make_problem: Callable[[CostTables], Problem], solve: Solve, *,
                 devices: list[int] | None = None, uniform_tp: bool = False, base: CostTables | None = None,
                 sizes: tuple[int, ...] | None = None, max_configs: int = MAX_CONFIGS,
                 whole_nodes: bool = False, engine: Any = None, launch: Launch | None = None) -> GroupPlan:
    """The best plan over disjoint TP groups of `devices` (default all), of the cluster's TP
    degrees (or only `sizes`: (1,) plans single GPUs as before); module doc. `engine` costs the
    groups as `base` was built (build_tables(model, cluster, engine))."""
    devices = list(range(len(cluster.devices))) if devices is None else devices
    if whole_nodes:  # one row per node, disjoint by construction: one exact solve
        base = _base(model, cluster, base, engine)
        cands = candidate_groups(cluster, devices, whole_nodes=True)
        problem = make_problem(group_tables(model, cluster, cands, base, engine))
        sol = _disjoint_solve(problem, cands, solve, launch)
        return GroupPlan(problem, sol, tuple(cands), sol.optimal, sol.lower_bound, 1)
    if uniform_tp:
        degrees = sorted({s for g in devices for s in cluster.tp_sizes(cluster.devices[g].node)})
        if sizes is not None:
            degrees = [s for s in degrees if s in sizes]
        found: list[GroupPlan] = []
        for t in degrees:
            try:
                found.append(_solve_sizes(model, cluster, make_problem, solve, devices=devices, sizes=(t,), base=base,
                                          max_configs=max_configs, engine=engine, launch=launch))
            except InfeasibleError:
                continue  # no plan with every stage at degree t
        best: GroupPlan | None = None
        for gp in found:
            if best is None or lex_compare(gp.solution.objective, best.solution.objective) < 0:
                best = gp
        if best is not None:  # proven only if every degree's optimum is; the bound is the least one
            best = dataclasses.replace(best, proven=all(gp.proven for gp in found),
                                       lower_bound=min(gp.lower_bound for gp in found),
                                       subproblems=sum(gp.subproblems for gp in found))
        if best is None:
            raise InfeasibleError(_why(_base(model, cluster, base, engine), launch))
        return best
    return _solve_sizes(model, cluster, make_problem, solve, devices=devices, sizes=sizes, base=base,
                        max_configs=max_configs, engine=engine, launch=launch)


#: Time limit a sub-solve gets once the command's limit is spent (partitioner.deploy.plan); a
#: problem made with no more than this stops the configuration loop with the best so far.
MIN_SOLVE_S = 0.05


def _why(base: CostTables, launch: Launch | None) -> str:
    """Why no plan was found: memory alone, or the engine's launch rule on top of it."""
    if launch is None:
        return explain_infeasible(base)
    return (f"no plan that {launch.engine} can launch fits the devices ({launch.rule}); without that rule: "
            f"{explain_infeasible(base)}")


def _disjoint_solve(problem: Problem, groups: Sequence[Group], solve: Solve, launch: Launch | None) -> Solution:
    """Solve a problem whose rows are the disjoint `groups` (under the engine's rule if given)."""
    return solve(problem) if launch is None else launch.solve(problem, [g.members for g in groups])


def _base(model: Any, cluster: Any, base: CostTables | None, engine: Any = None) -> CostTables:
    from partitioner.costs import build_tables

    return build_tables(model, cluster, engine) if base is None else base


def _solve_sizes(model: Any, cluster: Any, make_problem: Callable[[CostTables], Problem], solve: Solve, *,
                 devices: list[int], sizes: tuple[int, ...] | None, base: CostTables | None,
                 max_configs: int, engine: Any = None, launch: Launch | None = None) -> GroupPlan:
    base = _base(model, cluster, base, engine)
    cands = candidate_groups(cluster, devices, sizes=sizes)
    if not cands:
        raise InfeasibleError(f"no group of size {sizes} fits these devices")
    if all(g.t == 1 for g in cands):
        rows = [g.members[0] for g in cands]
        problem = make_problem(select_rows(base, rows))
        sol = _disjoint_solve(problem, cands, solve, launch)
        return GroupPlan(problem, sol, tuple(cands), sol.optimal, sol.lower_bound, 1)
    full = group_tables(model, cluster, cands, base, engine)
    index = {g: r for r, g in enumerate(cands)}
    relaxed = make_problem(full)
    rsol = solve(relaxed)
    used = [cands[r] for r in rsol.devices]
    if disjoint(used) and (launch is None or launch.realises(relaxed, rsol.devices, [g.members for g in cands])):
        return GroupPlan(relaxed, rsol, tuple(cands), rsol.optimal, rsol.lower_bound, 1)
    bound = _bound(relaxed, rsol, cands)
    per, kinds = _configs(cluster, devices, sizes)
    count, combos = _combos(per, kinds, uniform=False)
    uniform = count > max_configs
    if uniform:
        count, combos = _combos(per, kinds, uniform=True)
    best: GroupPlan | None = None
    solved = 0
    all_optimal = True
    for choice in combos:
        groups = [g for i, c in enumerate(choice) for g in per[i][c]]
        groups.sort(key=lambda g: (g.members[0], g.t))
        problem = make_problem(select_rows(full, [index[g] for g in groups]))
        if best is not None and problem.time_limit_s is not None and problem.time_limit_s <= MIN_SOLVE_S:
            all_optimal = False  # the command's limit is spent: keep the best configuration so far
            break
        try:
            sol = _disjoint_solve(problem, groups, solve, launch)
        except InfeasibleError:
            continue
        solved += 1
        all_optimal = all_optimal and sol.optimal
        if best is None or lex_compare(sol.objective, best.solution.objective) < 0:
            best = GroupPlan(problem, sol, tuple(groups), False, bound, solved)
            if rsol.optimal and sol.optimal and lex_compare(sol.objective, rsol.objective) <= 0:
                break  # reaches the relaxation's optimum: optimal
    if best is None:
        raise InfeasibleError(_why(base, launch))
    reached = rsol.optimal and lex_compare(best.solution.objective, rsol.objective) <= 0
    proven = best.solution.optimal and (reached or (not uniform and all_optimal))
    lb = best.solution.objective[0] if proven else min(bound, best.solution.objective[0])
    return dataclasses.replace(best, proven=proven, lower_bound=lb, subproblems=solved + 1)


def _bound(relaxed: Problem, rsol: Solution, cands: Sequence[Group]) -> float:
    """The relaxation's bound, raised by the fluid bound in which a GPU's time is shared by its
    groups (partitioner.solvers.shared_bound): a relaxation solve stopped by the time limit may
    bound nothing (0), this one is finite in milliseconds. The fluid bound is on tau_max, so on
    the first key of balanced and throughput only."""
    if relaxed.objective == "makespan":
        return rsol.lower_bound
    from partitioner.solvers.shared_bound import shared_fluid_bound

    fluid = shared_fluid_bound(relaxed.tables, [g.members for g in cands])
    return max(rsol.lower_bound, fluid) if math.isfinite(fluid) else rsol.lower_bound


def groups_bound(model: Any, cluster: Any, engine: Any = None) -> float:
    """A lower bound on tau_max of every plan over disjoint TP groups of the cluster's degrees (single
    GPUs and whole machines included), without solving: the shared fluid bound over every candidate
    group (`_bound`). For an answer cut short before the group search bounded anything."""
    from partitioner.solvers.shared_bound import shared_fluid_bound

    base = _base(model, cluster, None, engine)
    cands = candidate_groups(cluster)
    fluid = shared_fluid_bound(group_tables(model, cluster, cands, base, engine), [g.members for g in cands])
    return fluid if math.isfinite(fluid) else 0.0


def to_plan(gp: GroupPlan, cluster: Any) -> Any:
    """The scored `Plan` of a GroupPlan: each stage names its group's devices and TP degree."""
    from partitioner.result import Plan

    plan = Plan.from_solution(gp.problem, gp.solution)
    devs = cluster.devices
    stages = []
    for st, r in zip(plan.stages, gp.solution.devices, strict=True):
        gr = gp.groups[r]
        first = gr.members[0]
        ordinal = sum(1 for g in range(first) if devs[g].node == devs[first].node)
        stages.append(dataclasses.replace(st, members=tuple(devs[g].name for g in gr.members), tp=gr.t, ordinal=ordinal))
    return dataclasses.replace(plan, stages=tuple(stages), optimal=gp.proven, lower_bound=gp.lower_bound)
