"""Floors of a deployment request: answers it must never fall below, solved before its own search.

`--replicas auto` searches every partition of the devices into replicas, so its space holds the
whole cluster as one replica: that answer (`--replicas 1`, planned by the same route with the
same budget it would get alone) is solved first and is a floor. `--tp auto` chooses each stage's
TP group among all of a node's candidate groups, so its space holds every plan of `--tp node`
(whole machines) and of `--tp off` (single GPUs): both are floors. The per-kind and per-node
seed deployments are floors inside the replica search (partitioner.deploy.seeds). The result is
the best of the search's answer and its floors; the search's upper bound still holds (its space
contains every floor), so the gap is measured against it.

Budget: the floors and then the search share the request's one budget in this order: the whole
cluster as one replica first, with exactly the budget `--replicas 1` gets alone (it starts the
run, on the same clock and deadline), then `--tp node` (one exact row per machine, cheap) and
`--tp off`. Every solve is limited in work (CP-SAT's deterministic time, the DP's state and cell
counts, the serve search's fixed solve counts), with `--time-limit` only a wall-clock cap on top,
so a floor whose work fits in the time it is given is the answer its own request gives under the
same limit, on an idle or a loaded machine. The replica search then reuses the whole-cluster
floor as its whole-cluster replica (partitioner.deploy.plan `known`) instead of solving it again
with what is left. On machines of one GPU each `--tp auto` is `--tp off` (TP groups stay inside
a machine, partitioner.costs.groups), so routing plans it as that, once. The limit stays a cap:
once earlier floors have spent it no later floor starts (so a floor after the first holds only
where the limit leaves it its work), and a limit that expires after a floor answers the best
floor, not proven, with the search's finite bound (partitioner.planning.routing).

Deployments and serve plans are compared by decode tokens/s; plans of the lexicographic
objectives (balanced, throughput, makespan) by their objective key (less is better).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

from partitioner.deploy.deployment import Deployment
from partitioner.planning.request import PlanRequest
from partitioner.problem import lex_compare
from partitioner.result import Plan

__all__ = ["floor_requests", "best_of", "as_deployment"]

Result = Plan | Deployment


def floor_requests(request: PlanRequest, tp: str) -> list[tuple[str, PlanRequest]]:
    """(label, request) of each floor of a deployment request whose TP mode resolved to `tp`."""
    out: list[tuple[str, PlanRequest]] = []
    if request.replicas is None:  # the whole cluster as one replica, with the budget it gets alone: first
        out.append(("--replicas 1", dataclasses.replace(request, replicas=1, tp=tp)))
    if tp == "auto":
        from partitioner.costs.tables import select_engine

        nodes = [d.node for d in request.cluster.devices]
        sizes = {nodes.count(n) for n in set(nodes)}
        uniform = select_engine(request.model, request.cluster, request.engine).tensor_parallel == "uniform"
        # whole machines as TP groups: in the search space when some machine has several GPUs, and
        # for an engine of one TP degree (which plans "auto" as "uniform") only when all have as many
        if max(sizes) > 1 and (not uniform or len(sizes) == 1):  # one exact row per machine, cheap
            out.append(("--tp node", dataclasses.replace(request, tp="node")))
        out.append(("--tp off", dataclasses.replace(request, tp="off")))
    return out


def _tokens(result: Result) -> float:
    if isinstance(result, Deployment):
        return result.tokens_per_s
    return float(result.serving.tokens_per_s) if result.feasible and result.serving is not None else 0.0


def better(a: Result, b: Result, serve: bool) -> bool:
    """Whether `a` is strictly better than `b` (module doc)."""
    if isinstance(a, Plan) and isinstance(b, Plan) and not serve:
        if a.feasible != b.feasible:
            return a.feasible
        return lex_compare(a.objective_value, b.objective_value) < 0
    return _tokens(a) > _tokens(b) * (1 + 1e-12)


def as_deployment(result: Result, like: Result, cluster: object) -> Result:
    """`result` in the form of `like`: a one-replica Deployment where `like` is a Deployment."""
    if not isinstance(like, Deployment) or isinstance(result, Deployment):
        return result
    used = {name for st in result.stages for name in (st.members or (st.device,))}
    unused = tuple(d.name for d in getattr(cluster, "devices", ()) if d.name not in used)
    return Deployment(replicas=(result,), unused=unused, optimal=result.optimal,
                      upper_bound_tokens_per_s=_tokens(result) if result.optimal else math.inf,
                      wall_time_s=result.wall_time_s, subproblems=1, notes=result.notes)


def best_of(found: Result, floors: list[tuple[str, Result]], serve: bool, cluster: object,
            note: Callable[[str], None] | None = None) -> Result:
    """The search's answer, or the best floor where one beats it (said in the result's notes);
    the search's upper bound is kept, and the answer is proven when the floor meets it."""
    best: tuple[str, Result] | None = None
    for label, r in floors:
        if better(r, found, serve) and (best is None or better(r, best[1], serve)):
            best = (label, r)
    if best is None:
        return found
    label, r = best
    r = as_deployment(r, found, cluster)
    line = f"the {label} plan is better than what the search found within its budget: kept as the floor"
    if note is not None:
        note(line)
    if isinstance(found, Deployment) and isinstance(r, Deployment):
        ub = max(found.upper_bound_tokens_per_s, r.tokens_per_s)
        proven = math.isfinite(ub) and r.tokens_per_s >= ub * (1 - 1e-9) and all(p.optimal for p in r.replicas)
        return dataclasses.replace(r, upper_bound_tokens_per_s=ub, optimal=proven, notes=(*r.notes, line),
                                   stopped=found.stopped, subproblems=found.subproblems + r.subproblems)
    if isinstance(r, Plan) and isinstance(found, Plan) and not serve:
        # the floor's own bound holds only in its smaller space (e.g. --tp off): the search's bound
        # holds for all, and a plan the search could not prove is not proven by a floor either
        lb = min(found.lower_bound, r.objective_value[0]) if r.objective_value else found.lower_bound
        return dataclasses.replace(r, notes=(*r.notes, line), lower_bound=lb, optimal=False)
    if isinstance(r, Plan):
        return dataclasses.replace(r, notes=(*r.notes, line))
    return r
