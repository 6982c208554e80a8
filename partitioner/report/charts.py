"""Matplotlib charts of the report as inline SVG strings (Agg-free `Figure`, imported lazily).

- `makespan_chart`: T(M)/M against M on log axes for every plan, plans that do not fit dashed and
  labelled, identical plans merged, the recommended plan drawn last (on top), with the base
  plan's GPipe estimate (Thm 2/3, Cor 1);
- `stage_chart`: tau_s with its slack up to tau_max, and d_s on its own axis (Cor 4);
- `gantt_chart`: the first micro-batches as scheduled by `partitioner.simulate` (recurrences 1/2);
- `pareto_chart`: the supported Pareto points in tokens/s against first-micro-batch latency, the
  compared plans and the engines' splits marked, the headline's plan starred.
Text stays text (`svg.fonttype = 'none'`: searchable, selectable, styled by the page's font);
the SVG has no width/height, only a viewBox, so the page scales it; no external references.
Figures are `WIDTH_IN` wide with `FONT_PT` text and the legend below the axes, so that on a
390 px phone (about 360 px for the chart) text is still about 10 px.
"""

from __future__ import annotations

import io
import re
from typing import Any

from partitioner.errors import InputError
from partitioner.report.compare import PlanMetrics, PlanRow, Report
from partitioner.report.units import time_unit

__all__ = ["svg", "makespan_chart", "stage_chart", "gantt_chart", "pareto_chart", "FONT_PT", "inline_svg"]

FONT_PT = 10  # SVG user units are pt: a WIDTH_IN figure is ~360 pt, so ~10 px at 360 px, ~15 px at 540 px
WIDTH_IN = 5.0
_HEAD = re.compile(r"^.*?(?=<svg)", re.S)
_META = re.compile(r"<metadata>.*?</metadata>\s*", re.S)
_SIZE = re.compile(r'<svg([^>]*?) width="[^"]*" height="[^"]*"')


def _figure(w: float = WIDTH_IN, h: float = 3.4) -> Any:
    import matplotlib

    matplotlib.rcParams["svg.hashsalt"] = "partitioner"  # deterministic ids
    matplotlib.rcParams["svg.fonttype"] = "none"  # text as <text>: searchable, no font files embedded
    matplotlib.rcParams["font.family"] = "sans-serif"
    matplotlib.rcParams["font.size"] = FONT_PT
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h), dpi=100, layout="constrained")
    return fig, fig.add_subplot(1, 1, 1)


def svg(fig: Any) -> str:
    """The figure as an inline, responsive `<svg>` element (XML header, doctype and size removed)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})  # constrained layout: one draw
    return inline_svg(buf.getvalue())


def inline_svg(document: str) -> str:
    """An SVG document as an inline, responsive `<svg>` element (header, metadata and size removed)."""
    out = _META.sub("", _HEAD.sub("", document, count=1)).strip()
    return _SIZE.sub(r'<svg\1 preserveAspectRatio="xMinYMin meet"', out, count=1)


def _metrics(row: PlanRow) -> PlanMetrics:
    if row.metrics is None:
        raise InputError(f"plan {row.name!r} has no stages to draw ({row.reason})")
    return row.metrics


def _T(row: PlanRow, regime: str) -> list[float]:
    return [x.T_async if regime == "async" else x.T_block for x in _metrics(row).by_M]


def _groups(rows: list[PlanRow], key: Any) -> list[list[PlanRow]]:
    """Rows with equal `key(row)` (rounded to 9 digits) in one group, in first-seen order."""
    out: dict[tuple[float, ...], list[PlanRow]] = {}
    for r in rows:
        out.setdefault(tuple(float(f"{x:.9g}") for x in key(r)), []).append(r)
    return list(out.values())


def _legend_below(fig: Any, ax: Any, handles: Any = None, labels: Any = None) -> None:
    """The legend under the axes (below the x label), two columns when its labels are short."""
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return
    ncol = 2 if max(len(str(t)) for t in labels) <= 26 else 1
    fig.legend(handles, labels, loc="outside lower left", ncol=ncol, frameon=False, fontsize=FONT_PT)


def makespan_chart(report: Report) -> str:
    """T(M)/M per plan against log M: it falls from the first latency (M = 1) to the period
    (large M), so plans that T(M) itself draws as one line separate. Plans that do not fit are
    dashed and labelled; plans with equal T(M) share one line and one legend entry."""
    fig, ax = _figure(h=3.4 + 0.2 * len(report.rows))
    drawn = [r for r in report.rows if r.metrics is not None]
    Ms = list(report.Ms)
    ref = min((T / M for r in drawn for T, M in zip(_T(r, report.regime), Ms, strict=True)), default=1.0)
    unit, scale = time_unit(ref)
    pick = recommended(report)
    for i, group in enumerate(_groups(drawn, lambda r: _T(r, report.regime))):
        r = group[0]
        fits = r.feasible
        top = any(g.name == pick for g in group)  # the recommended (or base) plan: thick, drawn last, on top
        tag = "" if not top else " (recommended)" if report.headline and report.headline.plan == pick else " (base)"
        ax.plot(Ms, [T / M * scale for T, M in zip(_T(r, report.regime), Ms, strict=True)], "o-" if fits else "x--",
                color=f"C{i % 10}", alpha=1.0 if fits else 0.75, lw=3.0 if top else 1.5, zorder=10 if top else 2,
                label=" = ".join(g.name for g in group) + ("" if fits else " (does not fit)") + tag)
    base = report.row(report.base)
    if base.metrics is not None:
        ax.plot(Ms, [x.T_gpipe / x.M * scale for x in base.metrics.by_M], ":", color="0.35",
                label=f"GPipe estimate of {base.name}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(Ms, [str(M) for M in Ms])
    ax.minorticks_off()
    from matplotlib.ticker import FuncFormatter

    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel("micro-batches M (log scale)")
    ax.set_ylabel(f"T(M)/M, {unit} (log scale)")
    ax.grid(alpha=0.3, which="both")
    _legend_below(fig, ax)
    return svg(fig)


def recommended(report: Report) -> str:
    """The row the charts draw on top: the headline's plan when it is a row, else the base plan."""
    h = report.headline
    names = {r.name for r in report.rows}
    return h.plan if h is not None and h.plan in names else report.base


def stage_chart(row: PlanRow) -> str:
    """Two panels on one stage axis: tau_s with its slack up to tau_max (top, headroom above
    tau_max), and each link's d_s beside its slack on its own scale (bottom; red: d_s > slack)."""
    import numpy as np

    m = _metrics(row)
    S = len(m.tau)
    fig, _ = _figure(h=5.6 if S > 1 else 3.8)
    fig.clear()
    axes = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 2]}) if S > 1 else [fig.add_subplot()]
    ax = axes[0]
    x = np.arange(S)
    unit, scale = time_unit(m.tau_max)
    tau = np.array(m.tau) * scale
    slack = m.tau_max * scale - tau
    ax.bar(x, tau, 0.55, color="C0", label="τ_s")
    ax.bar(x, slack, 0.55, bottom=tau, color="C0", alpha=0.2, hatch="//", label="slack τ_max − τ_s")
    ax.axhline(m.tau_max * scale, color="k", lw=0.8, ls=":", label=f"τ_max {m.tau_max * scale:.4g} {unit}")
    ax.set_ylim(0, m.tau_max * scale * 1.2)
    ax.set_ylabel(f"τ_s, {unit}")
    ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=2, frameon=False, fontsize=FONT_PT)
    if S > 1:
        lx = ax2_x = x[:-1] + 0.5  # a link sits between the stages it joins
        d = np.array(m.d)
        sl = np.array([m.tau_max - t for t in m.tau[:-1]])
        top = float(d.max()) if d.max() > 0 else float(max(sl.max(), 1e-6))
        dunit, dscale = time_unit(top)
        ax2 = axes[1]
        binding = {v.link for v in m.violations}
        colors = ["C3" if s in binding else "C2" for s in range(S - 1)]
        ax2.bar(lx, d * dscale, 0.3, color=colors)
        cap = top * dscale * 1.25
        shown = np.minimum(sl * dscale, cap * 0.98)
        ax2.scatter(ax2_x, shown, marker="_", s=900 * min(1.0, 5 / S), color="k", zorder=3)
        for xi, s_true, y in zip(ax2_x, sl * dscale, shown, strict=True):
            if s_true > cap:
                ax2.annotate("↑", (xi, y), textcoords="offset points", xytext=(0, -4), ha="center",
                             fontsize=FONT_PT)  # the slack is off scale (the table has its value)
        ax2.set_ylim(0, cap)
        ax2.set_ylabel(f"d_s, {dunit}")
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch

        ax2.legend([Patch(color="C2"), Patch(color="C3"), Line2D([], [], color="k", marker="_", ls="none", ms=14)],
                   ["d_s ≤ slack", "d_s > slack: binds", "slack of the stage before"], loc="lower left",
                   bbox_to_anchor=(0.0, 1.0), ncol=2, frameon=False, fontsize=FONT_PT)
        ax2.set_xlabel("stage (top) and the link to the next stage (bottom)")
    axes[-1].set_xticks(x, [f"{s}: {dev}" for s, dev in enumerate(m.devices)], rotation=30 if S <= 4 else 90,
                        ha="right" if S <= 4 else "center", fontsize=FONT_PT if S <= 16 else FONT_PT - 1)
    return svg(fig)


def gantt_chart(row: PlanRow, regime: str, M: int) -> str:
    """The schedule of the first M micro-batches from `partitioner.simulate.simulate`."""
    from partitioner.simulate import simulate

    m = _metrics(row)
    sched = simulate(list(m.tau), list(m.d), M, regime)
    S = len(m.tau)
    unit, scale = time_unit(float(sched.makespan))
    fig, ax = _figure(h=0.8 + (0.45 if S <= 12 else 0.3) * S + 1.2)
    colors = [f"C{mb % 10}" for mb in range(M)]
    label_rows = set(range(S)) if S <= 6 else {0, S - 1}  # numbers on every row would be unreadable
    for s in range(S):  # one collection per stage row (hundreds of single bars are slow to draw)
        start, finish = sched.start[:M, s] * scale, sched.finish[:M, s] * scale
        ax.broken_barh(list(zip(start, finish - start, strict=True)), (s - 0.35, 0.7), facecolors=colors, alpha=0.85)
        if s in label_rows:
            pt_per_x = (WIDTH_IN - 1.6) * 72 / (float(sched.makespan) * scale or 1.0)  # axes ~WIDTH_IN - labels
            for mb in range(M):
                if (finish[mb] - start[mb]) * pt_per_x >= 0.7 * FONT_PT * len(str(mb)) + 3:  # else it spills over
                    ax.text((start[mb] + finish[mb]) / 2, s, str(mb), ha="center", va="center", fontsize=FONT_PT)
        if s < S - 1:
            c, e = sched.send_start[:M, s] * scale, sched.send_finish[:M, s] * scale
            ax.broken_barh(list(zip(c, e - c, strict=True)), (s + 0.38, 0.1), facecolors=colors, alpha=0.5)
    ax.set_yticks(range(S), [f"{s}: {dev}" for s, dev in enumerate(m.devices)])
    ax.invert_yaxis()
    ax.set_xlabel(f"time, {unit} (makespan {float(sched.makespan) * scale:.4g} {unit})\n"
                  f"numbers: micro-batch; thin bars: sends ({regime})")
    ax.grid(alpha=0.3, axis="x")
    return svg(fig)


def pareto_chart(report: Report) -> str:
    """Tokens/s against first-micro-batch latency: the supported Pareto points (line), the compared
    plans and the engines' splits (markers), the headline's plan starred. No point labels (they
    collide): the Pareto table lists every point's M and devices."""
    fig, ax = _figure(h=3.4 + 0.2 * len(report.rows))
    pts = report.pareto
    rows = [r for r in report.rows if r.metrics is not None]
    h = report.headline
    lat = [p.first_latency for p in pts] + [r.metrics.first_latency for r in rows]  # type: ignore[union-attr]
    lat += [h.first_latency] if h is not None else []
    unit, scale = time_unit(max(lat) if lat else 1.0)
    if pts:
        ax.plot([p.first_latency * scale for p in pts], [p.tokens_per_s for p in pts], "o-", color="k", ms=4,
                label=f"Pareto frontier, M = {pts[0].M} … {pts[-1].M}" if len(pts) > 1 else f"Pareto point, M = {pts[0].M}")
    for i, group in enumerate(_groups(rows, lambda r: (r.metrics.first_latency, r.metrics.tokens_per_s))):
        r = group[0]
        m = _metrics(r)
        marker = "s" if r.kind == "optimal" else ("^" if r.feasible else "x")
        ax.plot([m.first_latency * scale], [m.tokens_per_s], marker, color=f"C{i % 10}", ls="none", ms=8,
                label=" = ".join(g.name if g.kind == "optimal" else f"{g.name} ({g.label})" for g in group)
                + ("" if r.feasible else " (does not fit)"), alpha=0.85, zorder=4)
    if h is not None:
        ax.plot([h.first_latency * scale], [h.tokens_per_s], "*", color="gold", mec="k", ms=16, ls="none", zorder=6,
                label=f"recommended: {h.plan}")
    ax.set_xlabel(f"first-micro-batch latency Στ + Σd, {unit}")
    ax.set_ylabel(f"{rows[0].metrics.tokens_unit if rows else 'tokens/s'}")  # type: ignore[union-attr]
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    _legend_below(fig, ax)
    return svg(fig)
