"""The headline a serving engineer reads first: the plan, its tokens/s, the gain over each engine
baseline (or why that baseline does not fit), the bottleneck stage, the links worth fixing and
the engine command that runs the plan.

The headline is the best plan by the number it prints (`choose`): the most tokens/s of every
plan the report shows (the objectives' plans, the engines' splits, the Pareto sweep's plans and
the serve search's plan), ties broken by the lower TPOT, so no row of the report beats it on
both tokens/s and TPOT. Plans over a `--tpot-ms`/`--ttft-ms` limit are passed over while any
plan meets the limits.

Link fixes (Cor 4, docs/theory.md): a link binds when d_s > tau_max - tau_s; it stops binding once
d_s <= tau_max - tau_s, and the blocking period becomes max(tau_max, sigma_j for j != s) (Thm 3).
A link leaving the bottleneck stage has no slack: only asynchronous sends hide it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from partitioner.report.compare import PlanRow

__all__ = ["Gain", "LinkFix", "Command", "Headline", "Commands", "Candidate", "choose", "meets_limits", "headline", "engine_command"]


@dataclass(frozen=True)
class Gain:
    """The base plan against one engine baseline (ratios > 1: the base plan is better)."""

    name: str
    label: str
    fits: bool
    reason: str
    tokens_per_s: float | None
    throughput_ratio: float | None  # base tokens/s / baseline tokens/s
    T_ratio: float | None  # baseline T(plan_M) / base T(plan_M)


@dataclass(frozen=True)
class LinkFix:
    """A binding link and the latency that would make it stop binding."""

    link: int
    source: str
    target: str
    d: float
    max_d: float  # tau_max - tau_s: bring d_s under this
    sigma_max: float  # the blocking period now
    sigma_max_fixed: float  # ... and once this link no longer binds


@dataclass(frozen=True)
class Command:
    """An engine command (`partition export`), with the export's warnings and what it cannot express."""

    target: str
    text: str
    notes: tuple[str, ...] = ()  # what the target cannot express (or why it cannot export)
    warnings: tuple[str, ...] = ()  # the export's warnings: read them before running `text`


@dataclass(frozen=True)
class Candidate:
    """A plan the report shows, as the headline would present it."""

    name: str  # "balanced", "serve", "makespan@M=64", "even", ...
    source: str  # how it was found: "the balanced objective at M = 8", "`--objective serve` at batch 9 x 14"
    row: PlanRow
    plan: Any  # the Plan (its engine command)
    peers: tuple[PlanRow, ...]  # the engines' splits compared in the same setting


def meets_limits(m: Any, tpot_s: float | None, ttft_s: float | None) -> bool:
    return not ((tpot_s is not None and (m.tpot_s is None or m.tpot_s > tpot_s * (1 + 1e-9)))
                or (ttft_s is not None and (m.ttft_s is None or m.ttft_s > ttft_s * (1 + 1e-9))))


def choose(cands: list[Candidate], tpot_s: float | None = None, ttft_s: float | None = None) -> Candidate | None:
    """The candidate with the most tokens/s (within 1e-9), then the lowest TPOT, then the first
    listed; among those meeting the TPOT/TTFT limits when any does. None: nothing fits."""
    fit = [c for c in cands if c.row.feasible and c.row.metrics is not None and c.row.metrics.tokens_per_s > 0]
    within = [c for c in fit if meets_limits(c.row.metrics, tpot_s, ttft_s)]
    pool = within or fit
    if not pool:
        return None
    top = max(c.row.metrics.tokens_per_s for c in pool)  # type: ignore[union-attr]
    best = [c for c in pool if c.row.metrics.tokens_per_s >= top * (1 - 1e-9)]  # type: ignore[union-attr]
    inf = float("inf")
    return min(best, key=lambda c: c.row.metrics.tpot_s if c.row.metrics.tpot_s is not None else inf)  # type: ignore[union-attr]


Commands = Callable[[Any], Command | None]  # base Plan -> its engine command


@dataclass(frozen=True)
class Headline:
    plan: str  # the chosen candidate's name
    devices: tuple[str, ...]
    decoder_layers: tuple[int, ...]
    ends: tuple[str, ...]
    tokens_per_s: float
    tokens_unit: str
    tpot_s: float | None
    ttft_s: float | None
    serving_source: str
    throughput: float  # micro-batches/s
    first_latency: float
    bottleneck_stage: int
    bottleneck_device: str
    tau_max: float
    gains: tuple[Gain, ...]
    link_fixes: tuple[LinkFix, ...]
    command: Command | None
    source: str = ""  # how the plan was found (`Candidate.source`)
    gpus: int = 0
    tokens_per_gpu: float = 0.0
    tokens_per_user: float | None = None  # 1 / TPOT
    vs_even: float | None = None  # tokens/s over vLLM's even split in the same setting (None: it does not fit)
    compared: int = 0  # plans the choice was made among
    optimal: bool = False  # the chosen plan is proven optimal for its objective
    gap: float = 0.0  # else how far from its bound (PlanRow.gap)
    within_limits: bool = True  # False: no plan meets --tpot-ms/--ttft-ms; the fastest is shown
    replica_layouts: tuple[str, ...] = ()  # several pipelines (--replicas): each one's layout


def _T(row: PlanRow, regime: str, M: int) -> float | None:
    if row.metrics is None:
        return None
    for x in row.metrics.by_M:
        if x.M == M:
            return x.T_async if regime == "async" else x.T_block
    return None


def _gain(base: PlanRow, row: PlanRow, regime: str, M: int) -> Gain:
    b, m = base.metrics, row.metrics
    if not row.feasible or m is None or b is None:
        return Gain(row.name, row.label, False, row.reason or "no plan", None, None, None)
    thr = b.tokens_per_s / m.tokens_per_s if m.tokens_per_s > 0 else None
    Tb, Tr = _T(base, regime, M), _T(row, regime, M)
    return Gain(row.name, row.label, True, "", m.tokens_per_s, thr, Tr / Tb if Tb and Tr else None)


def _fixes(row: PlanRow) -> tuple[LinkFix, ...]:
    m = row.metrics
    if m is None:
        return ()
    sigma = [t + (m.d[s] if s < len(m.d) else 0.0) for s, t in enumerate(m.tau)]
    out = []
    for v in m.violations:
        others = [x for j, x in enumerate(sigma) if j != v.link]
        out.append(LinkFix(v.link, v.source, v.target, v.d, v.slack, m.sigma_max, max([m.tau_max, *others])))
    return tuple(sorted(out, key=lambda f: f.sigma_max_fixed))


def headline(chosen: Candidate, M: int, regime: str, command: Command | None, *, compared: int = 0,
             within_limits: bool = True) -> Headline | None:
    """The headline of the chosen plan (None when it has no stages)."""
    row = chosen.row
    m = row.metrics
    if m is None:
        return None
    k = max(range(len(m.tau)), key=lambda s: m.tau[s])
    gains = tuple(_gain(row, r, regime, M) for r in chosen.peers if r.kind == "baseline")
    even = next((g for g in gains if g.name == "even"), None)
    return Headline(
        plan=chosen.name, devices=m.devices, decoder_layers=m.decoder_layers, ends=m.ends,
        tokens_per_s=m.tokens_per_s, tokens_unit=m.tokens_unit, tpot_s=m.tpot_s, ttft_s=m.ttft_s,
        serving_source=m.serving_source, throughput=m.throughput, first_latency=m.first_latency,
        bottleneck_stage=k, bottleneck_device=m.devices[k], tau_max=m.tau_max,
        gains=gains, link_fixes=_fixes(row), command=command, source=chosen.source,
        gpus=m.gpus or len(m.devices), tokens_per_gpu=m.tokens_per_s / max(1, m.gpus or len(m.devices)),
        replica_layouts=m.replica_layouts,
        tokens_per_user=1.0 / m.tpot_s if m.tpot_s else None,
        vs_even=even.throughput_ratio if even is not None and even.fits else None,
        compared=compared, optimal=row.optimal, gap=row.gap, within_limits=within_limits,
    )


def engine_command(target: str) -> Commands:
    """`plan -> Command` from `partitioner.export.render(plan, target)` (None if it cannot render)."""

    def run(plan: Any) -> Command | None:
        from partitioner.errors import PartitionerError
        from partitioner.export import render

        try:
            e = render(plan, target)
        except PartitionerError as exc:
            return Command(target, "", (f"cannot export: {exc}",))
        return Command(target, e.text.rstrip("\n"), tuple(e.cannot_express), tuple(e.warnings))

    return run
