"""Score a given multi-replica layout with the planner's own model, so that it can be compared.

A layout is what a user (or another planner) runs today:

    {"replicas": [{"stages": [{"devices": ["gpu-a", "gpu-b"], "layers": [0, 40]}, ...]}, ...]}

each stage a group of one node's devices (a TP group when there are several) holding layers
[start, end) of the model's layer list (`partition costs` prints it), stages of a replica in
pipeline order covering [0, L). Every replica is scored exactly as a planned one: the same
cost tables (partitioner.costs.groups), Thm 2/3 closed forms and closed-loop serving numbers
(partitioner.serving), so a layout and a plan differ only in their choices.
"""

from __future__ import annotations

import math
from typing import Any

from partitioner.costs.groups import Group, group_tables
from partitioner.deploy.deployment import Deployment, tp_notes
from partitioner.deploy.groups import GroupPlan, to_plan
from partitioner.errors import InputError
from partitioner.problem import Problem, Solution, evaluate, objective_key

__all__ = ["score_layout"]


def _groups(cluster: Any, replica: Any, r: int, seen: set[str]) -> tuple[list[Group], tuple[int, ...]]:
    index = {d.name: g for g, d in enumerate(cluster.devices)}
    stages = replica.get("stages") if isinstance(replica, dict) else replica
    if not stages:
        raise InputError(f"layout replicas[{r}]: needs a non-empty list of stages")
    groups, cuts = [], [0]
    for s, st in enumerate(stages):
        where = f"layout replicas[{r}].stages[{s}]"
        names = st.get("devices") or ([st["device"]] if "device" in st else None)
        if not names:
            raise InputError(f"{where}: needs devices (a list of device names)")
        for n in names:
            if n not in index:
                raise InputError(f"{where}.devices: unknown device {n!r}")
            if n in seen:
                raise InputError(f"{where}.devices: device {n!r} is used twice in the layout")
            seen.add(n)
        nodes = {cluster.devices[index[n]].node for n in names}
        if len(nodes) != 1:
            raise InputError(f"{where}.devices: a TP group must be on one node (got nodes {sorted(nodes)})")
        start, end = (int(x) for x in st["layers"])
        if start != cuts[-1] or end <= start:
            raise InputError(f"{where}.layers: expected [{cuts[-1]}, end > {cuts[-1]}) (got [{start}, {end}))")
        cuts.append(end)
        groups.append(Group(tuple(index[n] for n in names), nodes.pop()))
    return groups, tuple(cuts)


def score_layout(model: Any, cluster: Any, layout: Any, *, M: int = 8, regime: str = "async") -> Deployment:
    """Every replica of `layout` scored as a plan (module doc); devices not in it are unused."""
    from partitioner.costs import build_tables

    base = build_tables(model, cluster)
    replicas = layout.get("replicas") if isinstance(layout, dict) else layout
    if not replicas:
        raise InputError("layout: needs a non-empty list of replicas")
    seen: set[str] = set()
    plans = []
    for r, replica in enumerate(replicas):
        groups, cuts = _groups(cluster, replica, r, seen)
        if cuts[-1] != base.L:
            raise InputError(f"layout replicas[{r}]: stages end at layer {cuts[-1]}, the model has {base.L}")
        problem = Problem(group_tables(model, cluster, groups, base), M=M, regime=regime,  # type: ignore[arg-type]
                          objective="throughput", order="free")
        devices = tuple(range(len(groups)))
        m = evaluate(problem, devices, cuts)
        key = objective_key(problem, m)
        over = [s for s in range(len(groups)) if m.memory_gb[s] > m.capacity_gb[s] * (1 + 1e-9)]
        reason = "; ".join(f"stage {s} needs {m.memory_gb[s]:.2f} GB of {m.capacity_gb[s]:.2f} GB" for s in over)
        sol = Solution(devices=devices, cuts=cuts, solver="layout", optimal=False, objective=key,
                       lower_bound=key[0], status="SCORED", feasible=not over, reason=reason)
        plan = to_plan(GroupPlan(problem, sol, tuple(groups), False, key[0], 0), cluster)
        plans.append(plan.__class__(**{**plan.__dict__, "notes": tuple(tp_notes(plan))}))
    unused = tuple(d.name for d in cluster.devices if d.name not in seen)
    return Deployment(replicas=tuple(plans), unused=unused, optimal=False,
                      upper_bound_tokens_per_s=math.nan, solver="layout")
