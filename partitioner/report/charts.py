"""Matplotlib charts of the report as inline SVG strings (Agg-free `Figure`, imported lazily).

- `makespan_chart`: T(M) against M for every plan beside its GPipe estimate (Thm 2/3, Cor 1);
- `stage_chart`: tau_s of each stage with its slack tau_max - tau_s and link time d_s (Cor 4);
- `gantt_chart`: the first micro-batches as scheduled by `partitioner.simulate` (recurrences 1/2);
- `pareto_chart`: the supported Pareto points, throughput against first-micro-batch latency.
The SVG embeds glyphs as paths (no fonts) and has no external references.
"""

from __future__ import annotations

import io
import re
from typing import Any

from partitioner.errors import InputError
from partitioner.report.compare import PlanMetrics, PlanRow, Report

__all__ = ["svg", "makespan_chart", "stage_chart", "gantt_chart", "pareto_chart"]

_HEAD = re.compile(r"^.*?(?=<svg)", re.S)
_META = re.compile(r"<metadata>.*?</metadata>\s*", re.S)


def _figure(w: float = 7.0, h: float = 3.6) -> Any:
    import matplotlib

    matplotlib.rcParams["svg.hashsalt"] = "partitioner"  # deterministic ids
    matplotlib.rcParams["svg.fonttype"] = "path"  # glyphs as paths: no font files needed
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h), dpi=100)
    return fig, fig.add_subplot(1, 1, 1)


def svg(fig: Any) -> str:
    """The figure as an inline `<svg>` element (XML header and doctype removed)."""
    buf = io.StringIO()
    fig.tight_layout()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    return _META.sub("", _HEAD.sub("", buf.getvalue(), count=1)).strip()


def _metrics(row: PlanRow) -> PlanMetrics:
    if row.metrics is None:
        raise InputError(f"plan {row.name!r} has no stages to draw ({row.reason})")
    return row.metrics


def _T(row: PlanRow, regime: str) -> list[float]:
    return [x.T_async if regime == "async" else x.T_block for x in _metrics(row).by_M]


def makespan_chart(report: Report) -> str:
    """T(M) (solid) and the GPipe estimate (S+M-1) tau_max (dashed) per feasible plan."""
    fig, ax = _figure()
    for i, r in enumerate(report.rows):  # colour by row index, as in `pareto_chart`
        if r.metrics is None or not r.feasible:
            continue
        color = f"C{i % 10}"
        Ms = [x.M for x in _metrics(r).by_M]
        ax.plot(Ms, _T(r, report.regime), "o-", color=color, label=f"{r.name}: T(M)")
        ax.plot(Ms, [x.T_gpipe for x in _metrics(r).by_M], "x--", color=color, alpha=0.6,
                label=f"{r.name}: GPipe")
    ax.set_xlabel("micro-batches M")
    ax.set_ylabel(f"makespan T(M), s ({report.regime})")
    ax.set_title("T(M) per plan (solid) and its GPipe estimate (dashed)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    return svg(fig)


def stage_chart(row: PlanRow) -> str:
    """Per-stage bars: tau_s, the slack up to tau_max stacked on top, and d_s beside (red if > slack)."""
    import numpy as np

    m = _metrics(row)
    fig, ax = _figure()
    S = len(m.tau)
    x = np.arange(S)
    tau = np.array(m.tau)
    slack = m.tau_max - tau
    d = np.array([*m.d, 0.0])
    ax.bar(x - 0.2, tau, 0.4, color="C0", label="tau_s")
    ax.bar(x - 0.2, slack, 0.4, bottom=tau, color="C0", alpha=0.25, hatch="//", label="slack tau_max - tau_s")
    colors = ["C3" if s < S - 1 and d[s] > slack[s] else "C2" for s in range(S)]
    ax.bar(x[:-1] + 0.2, d[:-1], 0.4, color=colors[:-1], label="d_s (red: > slack)")
    ax.axhline(m.tau_max, color="k", lw=0.8, ls=":", label="tau_max")
    ax.set_xticks(x, [f"{s}: {dev}" for s, dev in enumerate(m.devices)], fontsize=7, rotation=20)
    ax.set_ylabel("seconds per micro-batch")
    ax.set_title(f"Stages of plan '{row.name}'")
    ax.legend(fontsize=7)
    return svg(fig)


def gantt_chart(row: PlanRow, regime: str, M: int) -> str:
    """The schedule of the first M micro-batches from `partitioner.simulate.simulate`."""
    from partitioner.simulate import simulate

    m = _metrics(row)
    sched = simulate(list(m.tau), list(m.d), M, regime)
    S = len(m.tau)
    fig, ax = _figure(7.0, 0.6 + 0.45 * S + 1.2)
    for mb in range(M):
        color = f"C{mb % 10}"
        for s in range(S):
            a, b = float(sched.start[mb, s]), float(sched.finish[mb, s])
            ax.broken_barh([(a, b - a)], (s - 0.35, 0.7), color=color, alpha=0.85)
            ax.text((a + b) / 2, s, str(mb), ha="center", va="center", fontsize=6)
            if s < S - 1:
                c, e = float(sched.send_start[mb, s]), float(sched.send_finish[mb, s])
                ax.broken_barh([(c, e - c)], (s + 0.38, 0.1), color=color, alpha=0.5)
    ax.set_yticks(range(S), [f"{s}: {dev}" for s, dev in enumerate(m.devices)], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel(f"time, s (makespan {float(sched.makespan):.4g})")
    ax.set_title(f"Simulated schedule of the first {M} micro-batches ({regime}); thin bars: sends")
    ax.grid(alpha=0.3, axis="x")
    return svg(fig)


def pareto_chart(report: Report) -> str:
    """Supported Pareto points (line) and the compared plans (markers) in (latency, throughput)."""
    fig, ax = _figure()
    pts = report.pareto
    if pts:
        ax.plot([p.first_latency for p in pts], [p.throughput for p in pts], "o-", color="k",
                label="Pareto frontier (supported points)")
        for p in pts:
            ax.annotate(f"M={p.M}", (p.first_latency, p.throughput), fontsize=6,
                        textcoords="offset points", xytext=(3, 3))
    for i, r in enumerate(report.rows):
        if r.metrics is None:
            continue
        marker = "s" if r.kind == "optimal" else ("^" if r.feasible else "x")
        ax.plot([_metrics(r).first_latency], [_metrics(r).throughput], marker, color=f"C{i % 10}",
                ls="none", label=r.name + ("" if r.feasible else " (infeasible)"), alpha=0.8)
    ax.set_xlabel("first-micro-batch latency sum tau + sum d, s")
    ax.set_ylabel("throughput 1/period, micro-batches/s")
    ax.set_title("Throughput against first-micro-batch latency")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return svg(fig)
