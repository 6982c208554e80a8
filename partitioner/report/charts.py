"""Matplotlib charts of the report as inline SVG strings (Agg-free `Figure`, imported lazily).

- `makespan_chart`: T(M) against M on log axes for every plan, plans that do not fit dashed and
  labelled, identical plans merged, with the base plan's GPipe estimate (Thm 2/3, Cor 1);
- `stage_chart`: tau_s with its slack up to tau_max, and d_s on its own axis (Cor 4);
- `gantt_chart`: the first micro-batches as scheduled by `partitioner.simulate` (recurrences 1/2);
- `pareto_chart`: the supported Pareto points, throughput against first-micro-batch latency.
Text stays text (`svg.fonttype = 'none'`: searchable, selectable, styled by the page's font);
the SVG has no width/height, only a viewBox, so the page scales it; no external references.
"""

from __future__ import annotations

import io
import re
from typing import Any

from partitioner.errors import InputError
from partitioner.report.compare import PlanMetrics, PlanRow, Report
from partitioner.report.units import fmt_time, time_unit

__all__ = ["svg", "makespan_chart", "stage_chart", "gantt_chart", "pareto_chart", "FONT_PT", "inline_svg"]

FONT_PT = 11  # SVG user units are pt: at 800 px (7.5 in + legend, ~700 pt) ~12 px, at 960 px ~15 px
_HEAD = re.compile(r"^.*?(?=<svg)", re.S)
_META = re.compile(r"<metadata>.*?</metadata>\s*", re.S)
_SIZE = re.compile(r'<svg([^>]*?) width="[^"]*" height="[^"]*"')


def _figure(w: float = 7.5, h: float = 4.0) -> Any:
    import matplotlib

    matplotlib.rcParams["svg.hashsalt"] = "partitioner"  # deterministic ids
    matplotlib.rcParams["svg.fonttype"] = "none"  # text as <text>: searchable, no font files embedded
    matplotlib.rcParams["font.family"] = "sans-serif"
    matplotlib.rcParams["font.size"] = FONT_PT
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h), dpi=100)
    return fig, fig.add_subplot(1, 1, 1)


def svg(fig: Any) -> str:
    """The figure as an inline, responsive `<svg>` element (XML header, doctype and size removed)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight")
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


def _legend_right(ax: Any) -> None:
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=FONT_PT - 1)


def makespan_chart(report: Report) -> str:
    """T(M)/M per plan against log M: it falls from the first latency (M = 1) to the period
    (large M), so plans that T(M) itself draws as one line separate. Plans that do not fit are
    dashed and labelled; plans with equal T(M) share one line and one legend entry."""
    fig, ax = _figure()
    drawn = [r for r in report.rows if r.metrics is not None]
    Ms = list(report.Ms)
    ref = min((T / M for r in drawn for T, M in zip(_T(r, report.regime), Ms, strict=True)), default=1.0)
    unit, scale = time_unit(ref)
    for i, group in enumerate(_groups(drawn, lambda r: _T(r, report.regime))):
        r = group[0]
        fits = r.feasible
        ax.plot(Ms, [T / M * scale for T, M in zip(_T(r, report.regime), Ms, strict=True)], "o-" if fits else "x--",
                color=f"C{i % 10}", alpha=1.0 if fits else 0.75,
                label=" = ".join(g.name for g in group) + ("" if fits else " (does not fit)"))
    base = report.row(report.base)
    if base.metrics is not None:
        ax.plot(Ms, [x.T_gpipe / x.M * scale for x in base.metrics.by_M], ":", color="0.35",
                label=f"GPipe estimate of {base.name}")
    ax.set_xscale("log", base=2)
    ax.set_xticks(Ms, [str(M) for M in Ms])
    ax.set_xlabel("micro-batches M (log scale)")
    ax.set_ylabel(f"T(M) / M, {unit} per micro-batch ({report.regime})")
    ax.grid(alpha=0.3, which="both")
    _legend_right(ax)
    return svg(fig)


def stage_chart(row: PlanRow) -> str:
    """Two panels on one stage axis: tau_s with its slack up to tau_max (top, headroom above
    tau_max), and each link's d_s beside its slack on its own scale (bottom; red: d_s > slack)."""
    import numpy as np

    m = _metrics(row)
    S = len(m.tau)
    fig, _ = _figure(7.5, 5.2 if S > 1 else 3.6)
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
    _legend_right(ax)
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
                ax2.annotate(f"slack {fmt_time(s_true / dscale)} (off scale)", (xi, y), textcoords="offset points",
                             xytext=(-14, -4), ha="right", fontsize=FONT_PT - 2)
        ax2.set_ylim(0, cap)
        ax2.set_ylabel(f"d_s, {dunit}")
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch

        ax2.legend([Patch(color="C2"), Patch(color="C3"), Line2D([], [], color="k", marker="_", ls="none", ms=14)],
                   ["d_s ≤ slack", "d_s > slack: binds", "slack of the stage before"], loc="upper left",
                   bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=FONT_PT - 1)
        ax2.set_xlabel("stage (top) and the link to the next stage (bottom)")
    axes[-1].set_xticks(x, [f"{s}: {dev}" for s, dev in enumerate(m.devices)], rotation=10 if S <= 6 else 90)
    return svg(fig)


def gantt_chart(row: PlanRow, regime: str, M: int) -> str:
    """The schedule of the first M micro-batches from `partitioner.simulate.simulate`."""
    from partitioner.simulate import simulate

    m = _metrics(row)
    sched = simulate(list(m.tau), list(m.d), M, regime)
    S = len(m.tau)
    unit, scale = time_unit(float(sched.makespan))
    fig, ax = _figure(7.5, 0.8 + (0.5 if S <= 12 else 0.28) * S + 1.0)
    colors = [f"C{mb % 10}" for mb in range(M)]
    label_rows = set(range(S)) if S <= 12 else {0, S - 1}  # numbers on every row would be unreadable
    for s in range(S):  # one collection per stage row (hundreds of single bars are slow to draw)
        start, finish = sched.start[:M, s] * scale, sched.finish[:M, s] * scale
        ax.broken_barh(list(zip(start, finish - start, strict=True)), (s - 0.35, 0.7), facecolors=colors, alpha=0.85)
        if s in label_rows:
            for mb in range(M):
                ax.text((start[mb] + finish[mb]) / 2, s, str(mb), ha="center", va="center", fontsize=FONT_PT - 1)
        if s < S - 1:
            c, e = sched.send_start[:M, s] * scale, sched.send_finish[:M, s] * scale
            ax.broken_barh(list(zip(c, e - c, strict=True)), (s + 0.38, 0.1), facecolors=colors, alpha=0.5)
    ax.set_yticks(range(S), [f"{s}: {dev}" for s, dev in enumerate(m.devices)])
    ax.invert_yaxis()
    ax.set_xlabel(f"time, {unit} (makespan {float(sched.makespan) * scale:.4g} {unit}); "
                  f"numbers: micro-batch; thin bars: sends ({regime})")
    ax.grid(alpha=0.3, axis="x")
    return svg(fig)


_OFFSETS = ((6, 6), (6, -14), (-60, 6), (-60, -14), (6, 18), (6, -26), (-60, 18), (-60, -26))


def _place(ax: Any, xy: tuple[float, float], label: str, taken: list[tuple[float, ...]]) -> None:
    """Annotate xy at the first offset whose (estimated) text box overlaps no placed label."""
    px, py = ax.transData.transform(xy)
    w, h = 0.62 * FONT_PT * len(label) * 100 / 72 * 0.9, FONT_PT * 1.4
    for dx, dy in _OFFSETS:
        box = (px + dx, py + dy, px + dx + w, py + dy + h)
        if not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in taken):
            taken.append(box)
            ax.annotate(label, xy, textcoords="offset points", xytext=(dx * 0.72, dy * 0.72),
                        fontsize=FONT_PT - 1)
            return


def pareto_chart(report: Report) -> str:
    """Supported Pareto points (line, labelled by M without overlaps) and the compared plans."""
    fig, ax = _figure()
    pts = report.pareto
    rows = [r for r in report.rows if r.metrics is not None]
    lat = [p.first_latency for p in pts] + [r.metrics.first_latency for r in rows]  # type: ignore[union-attr]
    unit, scale = time_unit(max(lat) if lat else 1.0)
    if pts:
        ax.plot([p.first_latency * scale for p in pts], [p.throughput for p in pts], "o-", color="k",
                label="Pareto frontier (supported points)")
    for i, group in enumerate(_groups(rows, lambda r: (r.metrics.first_latency, r.metrics.throughput))):
        r = group[0]
        m = _metrics(r)
        marker = "s" if r.kind == "optimal" else ("^" if r.feasible else "x")
        ax.plot([m.first_latency * scale], [m.throughput], marker, color=f"C{i % 10}", ls="none", ms=8,
                label=" = ".join(g.name for g in group) + ("" if r.feasible else " (does not fit)"), alpha=0.85)
    ax.set_xlabel(f"first-micro-batch latency Στ + Σd, {unit}")
    ax.set_ylabel("throughput 1/period, micro-batches/s")
    ax.grid(alpha=0.3)
    _legend_right(ax)
    ax.autoscale_view()
    taken: list[tuple[float, ...]] = []
    for p in pts:
        _place(ax, (p.first_latency * scale, p.throughput), f"M={p.M}", taken)
    return svg(fig)
