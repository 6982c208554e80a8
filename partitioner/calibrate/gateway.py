"""Gateway service-time statistics -> stage times tau, the GPipe bias, queueing (docs/theory.md §7.2).

Pure core of `partition calibrate gateway` (the paper's §7.2, docs/theory.md). Input: per-(model, node) statistics of a
serving gateway's request service times (`GatewayStats`; `aggregate_requests` builds one from
per-request logs). For a chosen model and pipeline of nodes, `calibrate_gateway` reports:

    tau_j       the chosen statistic of node j's service time; `min` by default, as §7.2 does
                ("tau_j = min duration_s per (model, host)"): a lower bound
    bias        sum_j (tau_max - tau_j) = T_gpipe - T_free, constant in M (Cor 1); minus sum d
                with link latencies (Cor 3)
    g(M)        (T_gpipe - T_async)/T_async at each M (Table 1, Thm 2), via partitioner.analysis
    inflation   tot_p50 / dur_min: median end-to-end time over the service floor (§7.2, Cor 5:
                5090 legalone:8b 8.59 s / 1.13 s = 7.6x)

Caveat (docs/theory.md Errors 4): the taus are service times of whole-model replicas on separate
hosts, not stages of a measured pipeline; every figure is what a pipeline with those stage times
would show. No figure depends on the node order (Thm 2 and Cor 1/3 use only sums and the max;
Prop 2), which is kept only as the pipeline order of the output and of written files.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from partitioner import analysis
from partitioner.analysis.inputs import as_d
from partitioner.errors import InputError

__all__ = [
    "STATISTICS",
    "SMALL_SAMPLE",
    "ERRORS4_NOTE",
    "GatewayStats",
    "aggregate_requests",
    "select_stats",
    "NodeEstimate",
    "GpipePoint",
    "GatewayCalibration",
    "calibrate_gateway",
]

#: --stat name -> GatewayStats field used as tau.
STATISTICS: dict[str, str] = {"min": "dur_min", "p5": "dur_p5", "p50": "dur_p50", "mean": "dur_mean"}
#: Below this many requests a node's tau gets a small-sample warning.
SMALL_SAMPLE = 10
ERRORS4_NOTE = (
    "these taus are service times of whole-model replicas on separate hosts, not a measured "
    "pipeline: the figures are what a pipeline with these stage times would show (docs/theory.md, paper Errors 4)"
)


@dataclass(frozen=True)
class GatewayStats:
    """Service-time statistics of one (model, node) pair, seconds (gateway README columns)."""

    model: str
    node: str
    n: int  # requests
    dur_min: float  # service time (duration_s): min, 5th and 50th and 95th percentile, mean
    dur_p5: float
    dur_p50: float
    dur_p95: float
    dur_mean: float
    tot_p50: float  # median end-to-end time (total_s = duration + queue wait)
    q_p50: float  # median queue wait
    q_frac: float  # share of requests with queue wait > 0

    def statistic(self, stat: str) -> float:
        """The service-time statistic `stat` (a key of STATISTICS)."""
        return float(getattr(self, STATISTICS[_check_stat(stat)]))


def _check_stat(stat: str) -> str:
    if stat not in STATISTICS:
        raise InputError(f"stat must be one of {', '.join(STATISTICS)} (got {stat!r})")
    return stat


def aggregate_requests(
    model: str, node: str, duration_s: Sequence[float], total_s: Sequence[float], queue_wait_s: Sequence[float]
) -> GatewayStats:
    """One node's statistics from its per-request log, as the published CSV computes them.

    Percentiles use numpy's default linear interpolation (method "linear", Hyndman-Fan type 7):
    it alone reproduces the published rows, e.g. Qwen3.8-27B on node-01 (n=4: dur_p5 0.53825,
    p95 0.57025) and all-minilm:l6v2 (n=2: p5 0.11395 from min 0.111, max 0.170). q_frac is the
    share of requests with queue_wait_s > 0 (qwen2.5:7b on node-05: waits 0 and 0.001 give
    q_p50 0.0005, q_frac 0.5). The published dur_mean and q_frac are rounded to 6 decimals.
    """
    dur, tot, queue = (np.asarray(v, dtype=float) for v in (duration_s, total_s, queue_wait_s))
    if not dur.size or not (dur.size == tot.size == queue.size):
        raise InputError(
            f"{model!r} on {node!r}: need equally many (>= 1) durations, totals and queue waits "
            f"(got {dur.size}, {tot.size}, {queue.size})"
        )
    p5, p50, p95 = (float(x) for x in np.percentile(dur, [5, 50, 95]))
    return GatewayStats(
        model=model, node=node, n=int(dur.size), dur_min=float(dur.min()), dur_p5=p5, dur_p50=p50,
        dur_p95=p95, dur_mean=float(dur.mean()), tot_p50=float(np.percentile(tot, 50)),
        q_p50=float(np.percentile(queue, 50)), q_frac=float(np.mean(queue > 0)),
    )


def select_stats(
    stats: Sequence[GatewayStats], model: str, nodes: Sequence[str] | None = None, *, source: str = ""
) -> tuple[GatewayStats, ...]:
    """The rows of `model` on `nodes` in that order (default: every node that served it, in order).

    InputError for an unknown model (lists the file's models), an unknown or repeated node (lists
    the nodes that served the model), or an empty node list. `source` prefixes messages.
    """
    from partitioner.models.catalog import unknown_message  # here: importing partitioner.models loads pydantic

    where = f"{source}: " if source else ""
    models = list(dict.fromkeys(s.model for s in stats))
    if model not in models:
        raise InputError(where + unknown_message("model", model, models))
    rows = {s.node: s for s in stats if s.model == model}
    if nodes is None:
        return tuple(rows.values())
    if not nodes:
        raise InputError(f"nodes: need at least one node (got none); {model!r} was served by {', '.join(rows)}")
    for i, node in enumerate(nodes):
        if node not in rows:
            served = f" (the nodes that served {model!r})"
            raise InputError(where + unknown_message("node", node, list(rows)) + served)
        if node in nodes[:i]:
            raise InputError(f"nodes: node {node!r} is listed twice (got {','.join(nodes)})")
    return tuple(rows[n] for n in nodes)


@dataclass(frozen=True)
class NodeEstimate:
    """One pipeline stage's figures from its node's statistics (docs/theory.md §7.2)."""

    node: str
    n: int
    tau: float  # the chosen statistic, s
    dur_min: float
    dur_p50: float
    tot_p50: float
    q_p50: float
    q_frac: float
    spread: float | None  # dur_p50 / dur_min: service-time spread (None if dur_min = 0)
    inflation: float | None  # tot_p50 / dur_min: queueing inflation (§7.2 Cor 5; None if dur_min = 0)
    small_sample: bool  # n < SMALL_SAMPLE

    @classmethod
    def of(cls, s: GatewayStats, stat: str) -> NodeEstimate:
        """The figures of `s` with tau = its `stat` service time."""
        return cls(
            node=s.node, n=s.n, tau=s.statistic(stat), dur_min=s.dur_min, dur_p50=s.dur_p50,
            tot_p50=s.tot_p50, q_p50=s.q_p50, q_frac=s.q_frac, spread=_over(s.dur_p50, s.dur_min),
            inflation=_over(s.tot_p50, s.dur_min), small_sample=s.n < SMALL_SAMPLE,
        )


def _over(x: float, floor: float) -> float | None:
    """x / floor, None when the floor is 0 (a ratio to the service floor is then undefined)."""
    return x / floor if floor > 0 else None


@dataclass(frozen=True)
class GpipePoint:
    """The GPipe estimate against Thm 2 at one M (Cor 1/3, Table 1)."""

    M: int
    T_async: float  # sum tau + sum d + (M-1) tau_max, Thm 2
    T_gpipe: float  # (S+M-1) tau_max, Cor 1
    abs_error: float  # T_gpipe - T_async = bias (Cor 3), constant in M
    rel_error: float  # (T_gpipe - T_async)/T_async, Table 1's g


@dataclass(frozen=True)
class GatewayCalibration:
    """Everything `partition calibrate gateway` reports; `to_dict()` is its --json object."""

    model: str
    stat: str
    nodes: tuple[NodeEstimate, ...]  # in pipeline order
    tau: tuple[float, ...]
    tau_max: float
    bottleneck: str  # node of the first largest tau
    bottleneck_index: int
    homogeneity_bias: float  # sum (tau_max - tau_j), Cor 1
    d: tuple[float, ...] | None  # link latencies if given (S-1 values)
    full_bias: float | None  # homogeneity_bias - sum d, Cor 3 (None without d)
    points: tuple[GpipePoint, ...]
    warnings: tuple[str, ...]
    note: str = ERRORS4_NOTE

    @property
    def S(self) -> int:
        return len(self.nodes)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready plain values (tuples become lists)."""
        out = asdict(self)
        out["S"] = self.S
        out["nodes"] = [asdict(n) for n in self.nodes]
        out["points"] = [asdict(p) for p in self.points]
        return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}


def _warnings(nodes: Sequence[NodeEstimate], stat: str) -> tuple[str, ...]:
    out = []
    for e in nodes:
        if e.small_sample:
            plural = "" if e.n == 1 else "s"
            out.append(f"{e.node}: small sample: tau from n={e.n} request{plural} (< {SMALL_SAMPLE})")
        if e.tau == 0:
            out.append(f"{e.node}: tau = 0 ({stat} service time); the stage counts as free")
    return tuple(out)


def _points(tau: np.ndarray, d: np.ndarray | None, Ms: Sequence[int]) -> tuple[GpipePoint, ...]:
    """T_async (Thm 2), T_gpipe (Cor 1) and their difference at each M, from partitioner.analysis."""
    if not Ms:
        raise InputError("M: need at least one number of micro-batches (got none)")
    out = []
    for M in Ms:
        T = analysis.makespan_async(tau, d, M)
        Tc = analysis.makespan_gpipe(tau, M)
        out.append(GpipePoint(int(M), T, Tc, Tc - T, analysis.gpipe_relative_error(tau, d, M)))
    return tuple(out)


def calibrate_gateway(
    stats: Sequence[GatewayStats],
    model: str,
    nodes: Sequence[str] | None = None,
    stat: str = "min",
    *,
    Ms: Sequence[int] = (1, 8, 100),
    d: Sequence[float] | None = None,
    source: str = "",
) -> GatewayCalibration:
    """Stage times, bias and GPipe error of a pipeline over `nodes` serving `model` (§7.2).

    Golden (docs/theory.md §7.2): legalone:8b on node-01..03, stat min -> tau (1.13, 2.901, 2.621),
    bias 2.051 s, +30.8 % at M=1, +7.6 % at M=8, +0.7 % at M=100.
    """
    _check_stat(stat)
    rows = select_stats(stats, model, nodes, source=source)
    est = tuple(NodeEstimate.of(s, stat) for s in rows)
    tau = np.array([e.tau for e in est])
    if not tau.max() > 0:
        raise InputError(f"every chosen node has tau = 0 ({stat} service time of {model!r}); nothing to pipeline")
    dd = None if d is None else as_d(d, tau.size)
    j = int(np.argmax(tau))
    return GatewayCalibration(
        model=model, stat=stat, nodes=est, tau=tuple(float(t) for t in tau), tau_max=analysis.tau_max(tau),
        bottleneck=est[j].node, bottleneck_index=j, homogeneity_bias=analysis.homogeneity_bias(tau),
        d=None if dd is None else tuple(float(x) for x in dd),
        full_bias=None if dd is None else analysis.full_bias(tau, dd),
        points=_points(tau, dd, Ms), warnings=_warnings(est, stat),
    )
