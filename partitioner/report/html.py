"""The report as ONE self-contained HTML file (`partition report --html FILE`).

No network access: CSS, SVG (matplotlib, `charts`) and JS (`assets.CALCULATOR_JS`) are inline;
no external fonts, scripts or images. Every number shown in a table carries
`data-key="plans.balanced.tau_max"` (its path in the JSON report) and `data-value` (the exact
float), so a browser test can compare the page with `render_json`. The calculator's outputs
carry `data-calc="KEY"` with `KEY` an `Analysis` field of `partitioner.analysis.analyze`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from html import escape
from typing import Any

from partitioner.report.assets import CALC_KEYS, CALC_UNITS, CALCULATOR_JS, CSS
from partitioner.report.compare import Report
from partitioner.report.headview import LEAD, headline_lines
from partitioner.report.render_json import REPORT_FORMAT, report_dict
from partitioner.report.tables import Cell, Table, report_tables

__all__ = ["GANTT_MAX_M", "CHARTS", "accessible", "render_html"]

GANTT_MAX_M = 8  # the Gantt chart shows at most this many micro-batches
COMMAND_OPEN_LINES = 16  # a longer engine command starts folded (click to open)


def _attrs(c: Cell) -> str:
    return (f'data-key="{escape(c.key or "")}" data-value="{c.value!r}" data-unit="{escape(c.unit)}" '
            f'data-scale="{c.scale!r}"')


def _cell(c: Cell) -> str:
    cls = f' class="{c.cls}"' if c.cls else ""
    if c.key is None:
        return f"<td{cls}>{escape(c.text)}</td>"
    classes = " ".join(x for x in ("num", c.cls) if x)
    return f'<td class="{classes}" {_attrs(c)}>{escape(c.text)}</td>'


def _span(part: str | Cell) -> str:
    if isinstance(part, str):  # `x` in a headline fragment is code (as the Markdown report shows it)
        return re.sub(r"`([^`]+)`", r"<code>\1</code>", escape(part))
    cls = f' class="{part.cls}"' if part.cls else ""
    if part.key is None:
        return f"<span{cls}>{escape(part.text)}</span>"
    return f"<span{cls} {_attrs(part)}>{escape(part.text)}</span>"


def _items(lines: Any, big: int = 0) -> str:
    items = []
    for i, line in enumerate(lines):
        body = "".join(_span(p) for p in line.parts)
        sub = "".join(f"<li>{''.join(_span(p) for p in s)}</li>" for s in line.sub)
        cls = ' class="big"' if i < big else ""
        items.append(f"<li><b>{escape(line.label)}:</b> <span{cls}>{body}</span>" + (f"<ul>{sub}</ul>" if sub else "")
                     + "</li>")
    return f"<ul>{''.join(items)}</ul>" if items else ""


def _command(report: Report) -> str:
    """"Run it": the command in a scrolling box (never wrapped: copied lines stay whole), the
    export's warnings above it."""
    h = report.headline
    if h is None or h.command is None:
        return ""
    c = h.command
    notes = "".join(f'<li class="note">{escape(n)}</li>' for n in c.notes)
    if not c.text:
        return f"<p><b>Run it</b> with {escape(c.target)}: </p><ul>{notes}</ul>"
    warnings = "".join(f'<li class="warning">{escape(w)}</li>' for w in c.warnings)
    n = len(c.text.splitlines())
    return ((f'<ul class="warnings">{warnings}</ul>' if warnings else "")  # visible even with the command folded
            + f'<details{" open" if n <= COMMAND_OPEN_LINES else ""}><summary><b>Run it</b> with '
            f"{escape(c.target)} (<code>partition export {escape(c.target)}</code>, {n} lines"
            + (f"; read the {len(c.warnings)} warning(s) above first" if c.warnings else "") + ")</summary>\n"
            + f'<pre class="command">{escape(c.text)}</pre>' + (f"<ul>{notes}</ul>" if notes else "") + "</details>")


def _headline(report: Report) -> str:
    lines = headline_lines(report)
    if not lines:
        return ""
    title = "The plan in brief" if report.headline is not None else "The model does not fit"
    return (f'<section id="headline"><h2>{title}</h2>\n{_items(lines[:LEAD], big=1)}\n{_command(report)}\n'
            f"{_items(lines[LEAD:])}</section>")


def _table(t: Table) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in t.columns)
    body = "\n".join("<tr>" + "".join(_cell(c) for c in row) + "</tr>" for row in t.rows)
    note = f'<p class="note">{escape(t.note)}</p>' if t.note else ""
    inner = (f'<div class="scroll" tabindex="0" role="region" aria-label="{escape(t.title)}"><table><thead><tr>{head}'
             f"</tr></thead><tbody>\n{body}\n</tbody></table></div>" if t.rows else "<p>(none)</p>")
    return f'<section id="table-{t.name}"><h2>{escape(t.title)}</h2>\n{inner}\n{note}</section>'


def _stages(report: Report) -> str | None:
    from partitioner.report import charts

    base = report.row(report.base)
    return charts.stage_chart(base) if base.metrics is not None else None


def _gantt(report: Report) -> str | None:
    from partitioner.report import charts

    base = report.row(report.base)
    if base.metrics is None:
        return None
    return charts.gantt_chart(base, report.regime, min(report.plan_M, GANTT_MAX_M))


def _makespan(report: Report) -> str | None:
    from partitioner.report import charts

    return charts.makespan_chart(report)


def _serving(report: Report) -> str | None:
    from partitioner.report.charts import inline_svg
    from partitioner.report.serving_chart import serving_chart_svg

    if not report.serve_frontier:
        return None
    from partitioner.report.charts import FONT_PT, WIDTH_IN

    marks: dict[str, tuple[float, float]] = {}
    dec = report.decode
    for r in dec.rows if dec is not None else ():
        m = r.metrics
        if m is None or not r.feasible or not m.tpot_s:
            continue
        name = (f"serve plan, batch {dec.batch} × {dec.in_flight}" if r.name == "serve"  # type: ignore[union-attr]
                else f"{r.label} ({r.name}) at that batch")
        marks[name] = (1.0 / m.tpot_s, m.tokens_per_s / len(m.devices))
    svg = serving_chart_svg({"serve frontier (best split per batch and in-flight count)": report.serve_frontier},
                            title="", label_points=False, marks=marks, font_pt=FONT_PT, size_in=(WIDTH_IN, 4.4))
    return inline_svg(svg)


def _pareto(report: Report) -> str | None:
    from partitioner.report import charts

    return charts.pareto_chart(report)


# (section id, title, caption, chart function): one more chart is one more entry here
CHARTS: list[tuple[str, str, str, Callable[[Report], str | None]]] = [
    ("chart-stages", "Stages of the base plan",
     "Top: τ_s and its slack up to τ_max. Bottom, on its own scale: each link's d_s beside the slack of the "
     "stage it leaves; a red link has d_s > τ_max − τ_s and sets the blocking period (Cor 4).", _stages),
    ("chart-makespan", "T(M) against M",
     "T(M)/M for every compared plan against M on a log axis: it starts at the first latency (M = 1) and falls to "
     "the period 1/throughput; plans that do not fit are dashed; plans with equal T(M) share one line.",
     _makespan),
    ("chart-pareto", "Pareto frontier in tokens/s",
     "Supported points minimise T(M) = latency + (M − 1)·period for some M (the table below lists each M); squares "
     "are the optimal plans, triangles the engines' splits, the star the recommended plan.", _pareto),
    ("chart-serving", "Serving: decode tokens/s per GPU against tokens/s per user",
     "The serve objective's Pareto frontier (closed-loop decode, KV capacity min over stages): each point is a "
     "batch B and in-flight count K with its best split; further right is faster per user (1/TPOT), higher is "
     "more throughput per GPU. The star is the serve plan, triangles the engines' splits at its batch.", _serving),
    ("chart-gantt", "Schedule of the first micro-batches (simulator)",
     "Recurrences (1)/(2) simulated for the base plan.", _gantt),
]


def accessible(svg: str, title: str, caption: str) -> str:
    """The inline SVG with role="img", an aria-label and a <title> (read by screen readers,
    shown as a tooltip)."""
    label = escape(f"{title}. {caption}", quote=True)
    head, sep, rest = svg.partition(">")
    return f'{head} role="img" aria-label="{label}"{sep}<title>{escape(title)}</title>{rest}'


def _charts(report: Report, stop: Callable[[], str] = lambda: "") -> str:
    """The charts, each drawn until `stop()` names what cut the report short (the time limit,
    Ctrl-C); a chart left out says so, and Ctrl-C while one is drawn leaves it out too."""
    out, left_out, why = [], [], ""
    for ident, title, caption, draw in CHARTS:
        why = why or stop()
        if why:
            left_out.append(title)
            continue
        try:
            chart = draw(report)
        except KeyboardInterrupt:
            why = "Ctrl-C"
            left_out.append(title)
            continue
        if chart is not None:
            out.append(f'<section id="{ident}" class="chart"><h2>{escape(title)}</h2>\n'
                       f'<p class="note">{escape(caption)}</p>\n{accessible(chart, title, caption)}\n</section>')
    if left_out:
        out.append(f'<p class="note" id="charts-left-out">Left out, cut short by {escape(why)}: '
                   f"{escape(', '.join(left_out))}.</p>")
    return f'<div class="charts">{"".join(out)}</div>' if out else ""


def _calculator(report: Report) -> str:
    base = report.row(report.base).metrics
    tau = ", ".join(_ms(x) for x in base.tau) if base else "1"
    d = ", ".join(_ms(x) for x in base.d) if base else ""
    rows = "\n".join(f'<tr><th>{k}</th><td class="num" data-calc="{k}" data-unit="{CALC_UNITS.get(k, "")}"></td></tr>'
                     for k in CALC_KEYS)
    return f"""<section id="calc"><h2>Calculator: every quantity of <code>partition analyze</code></h2>
<p class="note">Edit the stage times τ and link times d (milliseconds, comma-separated), M and ρ; the table
recomputes in the page with the closed forms of docs/theory.md (Thms 1-3, Cors 1-5, Prop 1, §9). As in
<code>partition analyze</code>: empty d means zeros, empty M means 1, empty ρ means 1.</p>
<div><label for="calc-tau">τ (ms)</label> <input id="calc-tau" value="{escape(tau)}"></div>
<div><label for="calc-d">d (ms)</label> <input id="calc-d" value="{escape(d)}"></div>
<div><label for="calc-M">M</label> <input id="calc-M" value="{report.plan_M}" inputmode="numeric"></div>
<div><label for="calc-rho">ρ (0 to 1)</label> <input id="calc-rho" value="1"></div>
<p id="calc-error"></p>
<table id="calc-out"><tbody>
{rows}
</tbody></table></section>"""


def _ms(seconds: float) -> str:
    """Seconds as milliseconds rounded to 4 significant digits (the calculator's input unit)."""
    return f"{seconds * 1e3:.4g}"


def _json_script(report: Report) -> str:
    text = json.dumps(report_dict(report), indent=None, sort_keys=False).replace("</", "<\\/")
    return f'<script type="application/json" id="report-json">{text}</script>'


def _charts_and_tables(report: Report, tables: dict[str, str], stop: Callable[[], str]) -> str:
    """The plan table first, then the charts, then the detail tables (memory last)."""
    first = [k for k in ("shortfall", "additions", "plans", "layouts") if k in tables]
    return "\n".join([*(tables[k] for k in first), _charts(report, stop),
                      *(v for k, v in tables.items() if k not in first)])


def render_html(report: Report, stop: Callable[[], str] = lambda: "") -> str:
    """The whole page as one string (deterministic for a given report while `stop()` is "": a
    chart starts only then)."""
    title = f"Partition report: {report.model or 'model'} on {report.cluster or 'cluster'}"
    tables = {t.name: _table(t) for t in report_tables(report)}
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="generator" content="{REPORT_FORMAT}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title>
<style>{CSS}</style></head>
<body>
<h1>{escape(title)}</h1>
<p>Regime <b>{escape(report.regime)}</b>; plans optimised at M = {report.plan_M}; base plan
<b>{escape(report.base)}</b>. Times per micro-batch; the JSON report (embedded below) has every number in SI units.</p>
{_headline(report)}
{_charts_and_tables(report, tables, stop)}
{_calculator(report)}
{_json_script(report)}
<script>{CALCULATOR_JS}</script>
</body></html>
"""
