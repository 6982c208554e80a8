"""What-if variations: parse them, apply them to the model/cluster, re-plan, diff with the base.

Syntax:
    --without DEVICE                     drop a device from the cluster
    --with GPU_ID@NODE                   add a GPU of preset GPU_ID on node NODE
    --link A:B=latency_ms,bandwidth_gb_s set the link between devices (or nodes) A and B
    --regime async|blocking              re-plan in another regime (Thm 2 vs Thm 3)
    --phase decode|prefill               re-plan the model in another phase
Each variation is re-planned with the base objective at the base M and reported as the
relative change of throughput (1 / period, Prop 1) and first-micro-batch latency
(sum tau + sum d, Thm 2 at M = 1), and of T(M) at every M of the report. A phase change is
other work per micro-batch, so it is reported as its own plan (tokens/s, latency), not as a
change.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from partitioner.errors import InfeasibleError, InputError
from partitioner.problem import REGIMES
from partitioner.report.compare import PlanRow, WhatIf
from partitioner.report.serving import Workload, serving_numbers, workload_of
from partitioner.result import Plan

__all__ = ["PHASES", "Variation", "parse_variation", "parse_variations", "apply", "prepare", "diff", "run"]

PHASES: tuple[str, ...] = ("decode", "prefill")
_LINK = re.compile(r"^\s*([^:=\s]+)\s*:\s*([^:=\s]+)\s*=\s*([^,\s]+)\s*,\s*([^,\s]+)\s*$")


@dataclass(frozen=True)
class Variation:
    """One parsed what-if. `args` holds the parsed values of its kind, in syntax order."""

    kind: str  # without | with | link | regime | phase
    text: str
    args: tuple[Any, ...]

    @property
    def name(self) -> str:
        return f"--{self.kind} {self.text}"


def _number(text: str, what: str, spec: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise InputError(f"--link {spec!r}: {what} {text!r} is not a number") from None
    if not math.isfinite(x) or x < 0 or (what == "bandwidth_gb_s" and x == 0):
        raise InputError(f"--link {spec!r}: {what} must be a finite number > 0 (got {text!r})")
    return x


def parse_variation(kind: str, text: str) -> Variation:
    """Parse one variation; bad syntax raises InputError quoting the value."""
    raw = text.strip()
    if kind == "without":
        if not raw:
            raise InputError(f"--without needs a device name (got {text!r})")
        return Variation(kind, raw, (raw,))
    if kind == "with":
        gpu, at, node = raw.partition("@")
        if not at or not gpu.strip() or not node.strip() or "@" in node:
            raise InputError(f"--with expects GPU_ID@NODE (got {text!r})")
        return Variation(kind, raw, (gpu.strip(), node.strip()))
    if kind == "link":
        m = _LINK.match(raw)
        if not m:
            raise InputError(f"--link expects A:B=latency_ms,bandwidth_gb_s (got {text!r})")
        a, b = m.group(1), m.group(2)
        if a == b:
            raise InputError(f"--link {text!r}: the two ends must differ")
        lat = _number(m.group(3), "latency_ms", text)
        bw = _number(m.group(4), "bandwidth_gb_s", text)
        return Variation(kind, raw, (a, b, lat, bw))
    if kind in ("regime", "phase"):
        allowed = REGIMES if kind == "regime" else PHASES
        if raw not in allowed:
            raise InputError(f"--{kind} must be one of {', '.join(allowed)} (got {text!r})")
        return Variation(kind, raw, (raw,))
    raise InputError(f"unknown variation kind {kind!r}")


def parse_variations(**by_kind: Sequence[str]) -> tuple[Variation, ...]:
    """`parse_variations(without=[...], with_=[...], link=[...], regime=[...], phase=[...])`."""
    out = []
    for key, texts in by_kind.items():
        for text in texts:
            out.append(parse_variation(key.rstrip("_"), text))
    return tuple(out)


def apply(model: Any, cluster: Any, v: Variation, regime: str) -> tuple[Any, Any, str]:
    """(model, cluster, regime) with `v` applied; unknown devices raise the helpers' errors."""
    from partitioner.models import whatif as w

    try:
        if v.kind == "without":
            return model, w.without_device(cluster, v.args[0]), regime
        if v.kind == "with":
            return model, w.with_device(cluster, v.args[0], v.args[1]), regime
        if v.kind == "link":
            a, b, lat, bw = v.args
            return model, w.with_link(cluster, a, b, latency_ms=lat, bandwidth_gb_s=bw), regime
        if v.kind == "phase":
            return w.with_phase(model, v.args[0]), cluster, regime
    except KeyError as exc:  # a helper that does not raise our own errors
        raise InputError(f"{v.name}: unknown name {exc.args[0]!r}") from None
    return model, cluster, v.args[0]


def _T(plan: Plan, M: int) -> float:
    a = plan.analysis(M=M)
    return float(a.T_async if plan.regime == "async" else a.T_block)


def _rel(new: float, old: float) -> float:
    return (new - old) / old if old else 0.0


def diff(v: Variation, base: PlanRow, base_regime: str, plan: Plan | None, *, reason: str = "",
         workload: Workload | None = None) -> WhatIf:
    """Compare a re-planned variation with the base row (relative changes; positive = increase).

    A phase change is not compared: a prefill micro-batch and a decode micro-batch are different
    work, so its row shows the new plan's own numbers and no relative change."""
    bm = base.metrics
    if plan is None or not plan.feasible or bm is None:
        why = reason or (plan.reason if plan is not None else "") or "no feasible plan"
        return WhatIf(v.name, v.kind, v.text, False, why, None, None, None, None, (), ())
    sv = serving_numbers(plan, workload or Workload())
    base_T = {x.M: (x.T_async if base_regime == "async" else x.T_block) for x in bm.by_M}
    if v.kind == "phase":
        return WhatIf(v.name, v.kind, v.text, True, "", plan.throughput, plan.first_latency, None, None,
                      tuple((M, _T(plan, M), 0.0) for M in base_T), tuple(st.device for st in plan.stages),
                      sv.tokens_per_s, sv.unit, comparable=False)
    T = tuple((M, _T(plan, M), _rel(_T(plan, M), old)) for M, old in base_T.items())
    return WhatIf(
        name=v.name,
        kind=v.kind,
        value=v.text,
        feasible=True,
        reason="",
        throughput=plan.throughput,
        first_latency=plan.first_latency,
        d_throughput=_rel(sv.tokens_per_s, bm.tokens_per_s) if bm.tokens_per_s > 0 else None,
        d_first_latency=_rel(plan.first_latency, bm.first_latency),
        T=T,
        devices=tuple(st.device for st in plan.stages),
        tokens_per_s=sv.tokens_per_s,
        tokens_unit=sv.unit,
    )


Planner = Callable[[Any, Any, str], Plan]  # (model, cluster, regime) -> Plan


Prepared = tuple[Variation, Any, Any, str]  # (variation, model, cluster, regime)


def prepare(model: Any, cluster: Any, variations: Sequence[Variation], regime: str) -> tuple[Prepared, ...]:
    """Apply every variation up front, so a bad name fails before any solving."""
    return tuple((v, *apply(model, cluster, v, regime)) for v in variations)


def run(prepared: Sequence[Prepared], base: PlanRow, base_regime: str, planner: Planner,
        stop: Callable[[], str] = lambda: "") -> tuple[WhatIf, ...]:
    """Re-plan each prepared variation and diff it with the base row (infeasible: shown, not hidden).
    Once `stop()` names what spent the report's budget, the variations left are shown unplanned."""
    out = []
    for v, m, c, regime in prepared:
        why = stop()
        if why:
            out.append(diff(v, base, base_regime, None, reason=f"not planned: {why} cut the report short",
                            workload=workload_of(m) if m is not None else None))
            continue
        try:
            plan: Plan | None = planner(m, c, regime)
            reason = ""
        except InfeasibleError as exc:
            plan, reason = None, str(exc)
        except KeyboardInterrupt:
            plan, reason = None, "not planned: Ctrl-C cut the report short"
        out.append(diff(v, base, base_regime, plan, reason=reason, workload=workload_of(m) if m is not None else None))
    return tuple(out)
