"""The headline a serving engineer reads first: the plan, its tokens/s, the gain over each engine
baseline (or why that baseline does not fit), the bottleneck stage, the links worth fixing and
the engine command that runs the plan.

Link fixes (Cor 4, docs/theory.md): a link binds when d_s > tau_max - tau_s; it stops binding once
d_s <= tau_max - tau_s, and the blocking period becomes max(tau_max, sigma_j for j != s) (Thm 3).
A link leaving the bottleneck stage has no slack: only asynchronous sends hide it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from partitioner.report.compare import PlanRow

__all__ = ["Gain", "LinkFix", "Command", "Headline", "Commands", "headline", "engine_command"]


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
    target: str
    text: str
    notes: tuple[str, ...] = ()


Commands = Callable[[Any], Command | None]  # base Plan -> its engine command


@dataclass(frozen=True)
class Headline:
    plan: str
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


def headline(rows: tuple[PlanRow, ...], base: str, M: int, regime: str, command: Command | None) -> Headline | None:
    """The headline of the base plan (None when it has no stages)."""
    row = next(r for r in rows if r.name == base)
    m = row.metrics
    if m is None:
        return None
    k = max(range(len(m.tau)), key=lambda s: m.tau[s])
    gains = tuple(_gain(row, r, regime, M) for r in rows if r.kind == "baseline")
    return Headline(
        plan=base, devices=m.devices, decoder_layers=m.decoder_layers, ends=m.ends,
        tokens_per_s=m.tokens_per_s, tokens_unit=m.tokens_unit, tpot_s=m.tpot_s, ttft_s=m.ttft_s,
        serving_source=m.serving_source, throughput=m.throughput, first_latency=m.first_latency,
        bottleneck_stage=k, bottleneck_device=m.devices[k], tau_max=m.tau_max,
        gains=gains, link_fixes=_fixes(row), command=command,
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
        return Command(target, e.text.rstrip("\n"), tuple(e.cannot_express))

    return run
