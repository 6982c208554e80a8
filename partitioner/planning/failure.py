"""What one machine's loss costs, for every answer on more than one machine.

For each machine kind (partitioner.deploy.kinds: machines of a kind are interchangeable), the
same request is planned again on the cluster without one machine of that kind, through the same
`route` (partitioner.planning.routing) that planned the answer: the same objective, limits,
`--tp`, engine and order, and `--replicas N` (where the machines left cannot hold N replicas, the
most they hold: the replicas that survive the loss). Its tokens/s (0.0 when nothing serves the
model there) is the loss's; the worst case is the least. The block is built by `partitioner.planning.serving.failure_of`,
as the default serving answer's is.

Under `--time-limit` the smaller requests share what is left of it equally (each a fresh budget);
when nothing is left, or on Ctrl-C, there is no block rather than part of one. Without a limit
each is planned in full, as the answer was.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from partitioner.planning.request import PlanRequest
from partitioner.planning.serving import Failure, failure_of

__all__ = ["tokens_of", "without_node", "request_failure"]


def tokens_of(result: Any) -> float:
    """Decode tokens/s of a Plan or a Deployment (0.0: none scored)."""
    if hasattr(result, "replicas"):
        return float(result.tokens_per_s)
    s = getattr(result, "serving", None)
    return 0.0 if s is None or not getattr(result, "feasible", True) else float(s.tokens_per_s)


def without_node(cluster: Any, node: str) -> Any:
    """The cluster without machine `node`: its devices, the pairs naming them and its `nodes:` and
    per-node `tp:` entries (an edited copy, not re-validated: what is left was valid)."""
    gone = {d.name for d in cluster.devices if d.node == node}
    update: dict[str, Any] = {
        "devices": tuple(d for d in cluster.devices if d.node != node),
        "pairs": tuple(p for p in cluster.pairs if p.from_ not in gone and p.to not in gone),
        "nodes": {n: spec for n, spec in cluster.nodes.items() if n != node},
    }
    if isinstance(cluster.tp, dict):
        update["tp"] = {k: v for k, v in cluster.tp.items() if k != node}
    return cluster.model_copy(update=update)


def request_failure(request: PlanRequest, result: Any, since: int | None = None) -> Failure | None:
    """The failure block of `result`, the answer to `request` (module doc); None on one machine,
    for an answer without tokens/s, or after Ctrl-C (pressed since `since`, a
    partitioner.interrupts count taken before the answer was planned, or during the block)."""
    from partitioner import interrupts
    from partitioner.deploy.kinds import node_kinds
    from partitioner.errors import PartitionerError
    from partitioner.planning.routing import route
    from partitioner.solvers.budget import Budget

    cluster = request.cluster
    tps = tokens_of(result)
    if len({d.node for d in cluster.devices}) < 2 or tps <= 0 or (since is not None and interrupts.since(since)):
        return None
    nk = node_kinds(cluster)
    mark = interrupts.count()
    kinds_left = [sum(1 for n in nk.counts if n > 0)]

    def without(fewer: tuple[int, ...]) -> float:
        k = next(i for i, (a, b) in enumerate(zip(fewer, nk.counts, strict=True)) if a < b)
        node = str(cluster.devices[nk.kinds[k][-1][0]].node)  # the kind's last machine (nk.devices keeps the first)
        smaller = without_node(cluster, node)
        counts = [None] if request.replicas is None else range(request.replicas, 0, -1)
        for n in counts:  # --replicas N: N replicas, else as many as the machines left hold
            sub = dataclasses.replace(request, cluster=smaller, replicas=n, budget=Budget(_share(request, kinds_left[0])))
            try:
                found = tokens_of(route(sub))
                break
            except PartitionerError:
                continue
        else:
            found = 0.0
        kinds_left[0] -= 1
        return found

    try:
        block = failure_of(nk, tps, lambda g: str(cluster.devices[g].node), without)
    except (KeyboardInterrupt, _NoTime):
        return None
    return None if interrupts.since(mark) else block


class _NoTime(Exception):
    """The request's wall-clock limit is spent: no block (a partial one would mislead)."""


def _share(request: PlanRequest, kinds_left: int) -> float | None:
    """The wall-clock seconds one smaller request gets: an equal share of what is left of the
    request's limit (None: no limit); _NoTime once nothing is left."""
    if request.budget.deadline is None:
        return None
    left = request.budget.left(0.0)
    if left <= 0:
        raise _NoTime
    return left / max(1, kinds_left)
