"""The report's `--replicas`/`--tp` plan (partitioner.deploy.plan) as one headline candidate.

A deployment of R disjoint pipelines serves R times the requests of one: its tokens/s is the sum
over its replicas (`Deployment.tokens_per_s`, each replica's closed-loop decode number) and a
user sees the slowest replica's TPOT and TTFT (the router sends requests to every replica). A
single pipeline (`--replicas 1 --tp ...`) is a Plan and is scored like every other row.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from partitioner.report.compare import PlanRow, plan_row
from partitioner.report.headline import Candidate
from partitioner.report.serving import Workload
from partitioner.report.tables import layout

__all__ = ["deployment_candidate"]


def _worst(values: Sequence[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return max(got) if got and len(got) == len(values) else None


def deployment_candidate(result: Any, source: str, Ms: Sequence[int], workload: Workload,
                         peers: tuple[PlanRow, ...]) -> Candidate | None:
    """The deployment (or TP-group plan) as a Candidate named "replicas"; None when it has no plan."""
    replicas = tuple(getattr(result, "replicas", (result,)))
    if not replicas or any(not getattr(p, "stages", ()) for p in replicas):
        return None
    rows = [plan_row("replicas", "optimal", p, Ms, workload) for p in replicas]
    ms = [r.metrics for r in rows if r.metrics is not None]
    if len(ms) != len(rows):
        return None
    first = ms[0]
    metrics = dataclasses.replace(
        first,
        devices=tuple(d for m in ms for d in m.devices),
        decoder_layers=tuple(x for m in ms for x in m.decoder_layers),
        ends=tuple(e for m in ms for e in m.ends),
        gpus=sum(m.gpus or len(m.devices) for m in ms),
        tokens_per_s=float(sum(m.tokens_per_s for m in ms)),
        tpot_s=_worst([m.tpot_s for m in ms]),
        ttft_s=_worst([m.ttft_s for m in ms]),
        replica_layouts=tuple(layout(m.devices, m.decoder_layers, m.ends, compact=True) for m in ms)
        if len(ms) > 1 else (),
    )
    optimal = bool(getattr(result, "optimal", rows[0].optimal))
    row = dataclasses.replace(rows[0], metrics=metrics, optimal=optimal,
                              feasible=all(r.feasible for r in rows), label="replicas")
    n = len(ms)
    what = f"`{source}`: {n} pipeline{'s' if n > 1 else ''}"
    return Candidate("replicas", what, row, result, peers)
