"""The report's data: one typed row per plan, scored with the closed forms of docs/theory.md.

Every number comes from `Plan` (Thm 2, Thm 3, Cor 1, Cor 4) or from
`partitioner.analysis.analyze` (the quantities of `partition analyze`); this module only
collects them into frozen dataclasses. Renderers (`render_*`, `html`) never compute.

GPipe error split (Cor 3, docs/theory.md): T_gpipe - T_async = sum(tau_max - tau_j) - sum(d), i.e.
the homogeneity overestimate sum(tau_max - tau_j) (Cor 1) minus the communication
underestimate sum(d); both terms are constant in M.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from partitioner.registry import BASELINE_ENGINES, PLAN_OBJECTIVES
from partitioner.report.serving import Workload, serving_numbers
from partitioner.result import Plan

if TYPE_CHECKING:
    from partitioner.report.decode import Decode
    from partitioner.report.headline import Headline
    from partitioner.report.nofit import NoFit

__all__ = [
    "DEFAULT_MS",
    "OPTIMAL",
    "BASELINE_LABELS",
    "MakespanAt",
    "LinkViolation",
    "DeviceMemory",
    "PlanMetrics",
    "PlanRow",
    "ParetoPoint",
    "WhatIf",
    "Report",
    "plan_metrics",
    "plan_row",
    "infeasible_row",
]

DEFAULT_MS: tuple[int, ...] = (1, 8, 32, 100)
OPTIMAL: tuple[str, ...] = PLAN_OBJECTIVES  # the report's optimal rows: every plan objective
BASELINE_LABELS: dict[str, str] = BASELINE_ENGINES


@dataclass(frozen=True)
class MakespanAt:
    """T(M) of one plan at one M: Thm 2, Thm 3 and the GPipe estimate (Cor 1)."""

    M: int
    T_async: float
    T_block: float
    T_gpipe: float
    gpipe_error: float  # (T_gpipe - T_async) / T_async


@dataclass(frozen=True)
class LinkViolation:
    """A link with d_s > tau_max - tau_s (Cor 4): it raises the blocking period."""

    link: int
    source: str
    target: str
    d: float
    slack: float
    excess: float


@dataclass(frozen=True)
class DeviceMemory:
    device: str
    used_gb: float
    capacity_gb: float


@dataclass(frozen=True)
class PlanMetrics:
    """Every per-plan quantity of the report (docs/theory.md; M-independent unless in `by_M`)."""

    devices: tuple[str, ...]
    layers: tuple[tuple[int, int], ...]  # half-open [start, end) per stage
    tau: tuple[float, ...]
    d: tuple[float, ...]
    tau_max: float
    sigma_max: float
    period: float
    throughput: float  # 1 / period (Prop 1)
    first_latency: float  # sum tau + sum d (Thm 2 at M = 1)
    homogeneity_bias: float  # sum(tau_max - tau_j) (Cor 1): GPipe's overestimate
    comm_underestimate: float  # sum d (Cor 3): what GPipe leaves out
    crossover_batches: float  # M* = 1 + (sum tau + sum d) / tau_max
    first_binding_link: int | None
    violations: tuple[LinkViolation, ...]
    memory: tuple[DeviceMemory, ...]
    by_M: tuple[MakespanAt, ...]
    decoder_layers: tuple[int, ...] = ()  # per stage, as engines count them
    ends: tuple[str, ...] = ()  # per stage: "embed", "head", "embed+head" or ""
    tokens_per_s: float = 0.0  # `serving.serving_numbers`
    tpot_s: float | None = None
    ttft_s: float | None = None
    tokens_unit: str = "tokens/s"
    serving_source: str = ""
    binding: str = ""  # what limits tokens/s (partitioner.serving: bottleneck, round_trip, kv_capacity, ...)
    max_sequences: int | None = None  # KV capacity in sequences, the least over stages (serving model)
    gpus: int = 0  # GPUs the plan uses (a TP group counts each member)
    replica_layouts: tuple[str, ...] = ()  # a deployment of several pipelines: each one's layout


@dataclass(frozen=True)
class PlanRow:
    """One compared plan: an optimal plan (per objective) or an engine baseline."""

    name: str
    kind: str  # "optimal" or "baseline"
    label: str
    feasible: bool
    reason: str
    solver: str
    optimal: bool
    metrics: PlanMetrics | None  # None when the solver produced no plan at all
    lower_bound: float = 0.0  # on the first objective component (== it when optimal)
    objective_value: float = 0.0  # that first component (tau_max, the period or T(M))

    @property
    def gap(self) -> float:
        """(value - lower bound) / value: 0 when proven optimal."""
        v = self.objective_value
        return max(0.0, (v - self.lower_bound) / v) if v > 0 and not self.optimal else 0.0


@dataclass(frozen=True)
class ParetoPoint:
    """A supported point of the throughput / first-latency frontier: argmin T(M) at this M."""

    M: int
    throughput: float
    first_latency: float
    tau_max: float
    devices: tuple[str, ...]
    layers: tuple[tuple[int, int], ...]
    optimal: bool = True  # False: the best plan found within the budget (see its lower bound)
    tokens_per_s: float = 0.0  # `serving.serving_numbers` at the report's workload
    tpot_s: float | None = None


@dataclass(frozen=True)
class WhatIf:
    """One variation re-planned and compared with the base plan (positive = increase)."""

    name: str
    kind: str
    value: str
    feasible: bool
    reason: str
    throughput: float | None
    first_latency: float | None
    d_throughput: float | None  # relative change of tokens/s, (new - base) / base
    d_first_latency: float | None
    T: tuple[tuple[int, float, float], ...]  # (M, T_new, relative change) in the variation's regime
    devices: tuple[str, ...]
    tokens_per_s: float | None = None
    tokens_unit: str = "tokens/s"
    comparable: bool = True  # False: another phase; shown as its own plan, no relative changes


@dataclass(frozen=True)
class Report:
    """Everything `partition report` shows; renderers read it and never compute."""

    model: str
    cluster: str
    regime: str
    plan_M: int
    Ms: tuple[int, ...]
    base: str
    rows: tuple[PlanRow, ...]
    pareto: tuple[ParetoPoint, ...]
    whatifs: tuple[WhatIf, ...]
    headline: Headline | None = None
    solves: int = 0  # distinct solver runs behind this report
    serve_frontier: tuple[dict[str, Any], ...] = ()  # serve objective's tokens/s-vs-TPOT points (serving.search)
    decode: Decode | None = None  # the serve plan beside each baseline at its batch and in-flight count
    decode_note: str = ""  # why there is no decode comparison (prefill workload, time limit, no fit)
    nofit: NoFit | None = None  # the model does not fit: shortfall per device, the smallest additions
    replicas_note: str = ""  # why --replicas/--tp gave no plan
    cut: tuple[str, ...] = ()  # the parts the report's budget cut short (solving.Budget.cut), in order

    def row(self, name: str) -> PlanRow:
        for r in self.rows:
            if r.name == name:
                return r
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        from partitioner.report.render_json import report_dict

        return report_dict(self)


def _by_M(plan: Plan, Ms: Sequence[int]) -> tuple[MakespanAt, ...]:
    out = []
    for M in Ms:
        a = plan.analysis(M=M)
        out.append(MakespanAt(M, float(a.T_async), float(a.T_block), float(a.T_gpipe), float(a.gpipe_error)))
    return tuple(out)


def _violations(plan: Plan) -> tuple[LinkViolation, ...]:
    return tuple(
        LinkViolation(v["link"], v["from"], v["to"], v["d"], v["slack"], v["excess"])
        for v in plan.violating_links()
    )


def _ends(st: Any) -> str:
    return "+".join(k for k, on in (("embed", st.embed), ("head", st.head)) if on)


def plan_metrics(plan: Plan, Ms: Sequence[int], workload: Workload | None = None) -> PlanMetrics:
    """Collect a plan's numbers: Plan's closed forms, `analyze` at each M, tokens/s (`serving`)."""
    a = plan.analysis(M=plan.M)
    fbl = a.first_binding_link
    sv = serving_numbers(plan, workload or Workload())
    return PlanMetrics(
        devices=tuple(st.device for st in plan.stages),
        layers=tuple((st.start, st.end) for st in plan.stages),
        tau=tuple(float(x) for x in plan.tau),
        d=tuple(float(x) for x in plan.d),
        tau_max=plan.tau_max,
        sigma_max=plan.sigma_max,
        period=plan.period,
        throughput=plan.throughput,
        first_latency=plan.first_latency,
        homogeneity_bias=float(a.homogeneity_bias),
        comm_underestimate=float(sum(plan.d)),
        crossover_batches=float(a.crossover_batches),
        first_binding_link=None if fbl is None else int(fbl),
        violations=_violations(plan),
        memory=tuple(DeviceMemory(st.device, st.memory_gb, st.capacity_gb) for st in plan.stages),
        by_M=_by_M(plan, Ms),
        decoder_layers=tuple(st.decoder_layers for st in plan.stages),
        ends=tuple(_ends(st) for st in plan.stages),
        tokens_per_s=sv.tokens_per_s,
        tpot_s=sv.tpot_s,
        ttft_s=sv.ttft_s,
        tokens_unit=sv.unit,
        serving_source=sv.source,
        binding=sv.binding,
        max_sequences=getattr(plan.serving, "max_sequences", None),
        gpus=sum(int(getattr(st, "tp", 1) or 1) for st in plan.stages),
    )


def plan_row(name: str, kind: str, plan: Plan, Ms: Sequence[int], workload: Workload | None = None) -> PlanRow:
    """A row for a plan the solver returned (a baseline may be infeasible: never repaired)."""
    reason = plan.reason
    if not plan.feasible and not reason:
        over = [f"{st.device} {st.memory_gb:.2f} GB > {st.capacity_gb:.2f} GB" for st in plan.stages
                if st.memory_gb > st.capacity_gb]
        reason = "memory limit broken: " + "; ".join(over)
    return PlanRow(
        name=name,
        kind=kind,
        label=BASELINE_LABELS.get(name, f"optimal ({name})"),
        feasible=plan.feasible,
        reason=reason,
        solver=plan.solver,
        optimal=plan.optimal,
        metrics=plan_metrics(plan, Ms, workload),
        lower_bound=plan.lower_bound,
        objective_value=plan.objective_value[0] if plan.objective_value else 0.0,
    )


def infeasible_row(name: str, kind: str, reason: str) -> PlanRow:
    """A row for a solver that produced no plan (it raised); shown, never hidden."""
    return PlanRow(name, kind, BASELINE_LABELS.get(name, f"optimal ({name})"), False, reason, name, False, None)
