"""One fleet through the planner: the serving numbers of its best plan, as plain data.

`evaluate(job)` builds the fleet's cluster (partitioner.fleets.candidates.fleet_cluster) and calls
`partitioner.plan(..., objective="serve")`: over splits, batch and in-flight count under the TPOT
and TTFT limits, and over replicas and TP groups when the fleet has more than one machine. It is a
module-level function of picklable arguments, so a process pool or a Ray task can run it; the
answer depends only on the job (no time limit unless one is given), so a sweep is the same
whatever runs it. A fleet that cannot hold the model is a `Point` with `feasible=False`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from partitioner.fleets.candidates import Fleet, fleet_cluster
from partitioner.fleets.market import Offer

__all__ = ["Job", "Point", "evaluate"]


@dataclass(frozen=True)
class Job:
    """Everything one evaluation needs (picklable)."""

    model: Any
    own: Any
    offers: tuple[Offer, ...]
    fleet: Fleet
    intra: str
    inter: str
    engine: str | None = None
    tp: str | None = None
    tpot_ms: float | None = None
    ttft_ms: float | None = None
    max_batch: int | None = None
    time_limit_s: float | None = None


@dataclass(frozen=True)
class Point:
    """A planned fleet: its serving numbers (SI) and plan JSON, or why it cannot serve."""

    fleet: Fleet
    feasible: bool
    tokens_per_s: float = 0.0
    tpot_s: float | None = None
    ttft_s: float | None = None
    sequences: int = 0
    gpus: int = 0
    replicas: int = 0
    proven: bool = True
    reason: str = ""
    plan: dict[str, Any] = field(default_factory=dict, compare=False)


def _cluster(job: Job) -> Any:
    reserve = None if job.own is None else float(job.own.reserve_gb)
    return fleet_cluster(job.own, job.fleet, job.offers, intra=job.intra, inter=job.inter, reserve_gb=reserve)


def evaluate(job: Job) -> Point:
    """The best serve plan of `job.fleet` (module doc)."""
    import partitioner
    from partitioner.errors import InfeasibleError

    cluster = _cluster(job)
    nodes = {d.node for d in cluster.devices}
    try:
        result = partitioner.plan(job.model, cluster, objective="serve", replicas="auto" if len(nodes) > 1 else 1,
                                  tp=job.tp, engine=job.engine, tpot_ms=job.tpot_ms, ttft_ms=job.ttft_ms,
                                  max_batch=job.max_batch, time_limit_s=job.time_limit_s)
    except InfeasibleError as exc:
        return Point(job.fleet, False, gpus=len(cluster.devices), reason=str(exc))
    data = result.to_dict()
    if "replicas" in data:  # a Deployment
        totals = data["serving"]
        return Point(job.fleet, True, tokens_per_s=float(totals["tokens_per_s"]), tpot_s=totals["tpot_s"],
                     ttft_s=totals["ttft_s"], sequences=int(totals["sequences"]), gpus=int(totals["gpus"]),
                     replicas=int(totals["replicas"]), proven=bool(data["optimal"]), plan=data)
    sv = result.serving
    return Point(job.fleet, True, tokens_per_s=float(sv.tokens_per_s), tpot_s=float(sv.tpot_s), ttft_s=sv.ttft_s,
                 sequences=int(sv.sequences), gpus=sum(st.tp for st in result.stages), replicas=1,
                 proven=bool(result.optimal), plan=data)
