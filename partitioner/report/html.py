"""The report as ONE self-contained HTML file (`partition report --html FILE`).

No network access: CSS, SVG (matplotlib, `charts`) and JS (`assets.CALCULATOR_JS`) are inline;
no external fonts, scripts or images. Every number shown in a table carries
`data-key="plans.balanced.tau_max"` (its path in the JSON report) and `data-value` (the exact
float), so a browser test can compare the page with `render_json`. The calculator's outputs
carry `data-calc="KEY"` with `KEY` an `Analysis` field of `partitioner.analysis.analyze`.
"""

from __future__ import annotations

import json
from html import escape

from partitioner.report.assets import CALC_KEYS, CALCULATOR_JS, CSS
from partitioner.report.compare import Report
from partitioner.report.render_json import REPORT_FORMAT, report_dict
from partitioner.report.tables import Cell, Table, report_tables

__all__ = ["GANTT_MAX_M", "render_html"]

GANTT_MAX_M = 8  # the Gantt chart shows at most this many micro-batches


def _cell(c: Cell) -> str:
    if c.key is None:
        return f"<td>{escape(c.text)}</td>"
    return (f'<td class="num" data-key="{escape(c.key)}" data-value="{c.value!r}" '
            f'data-unit="{escape(c.unit)}">{escape(c.text)}</td>')


def _table(t: Table) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in t.columns)
    body = "\n".join("<tr>" + "".join(_cell(c) for c in row) + "</tr>" for row in t.rows)
    note = f'<p class="note">{escape(t.note)}</p>' if t.note else ""
    inner = f"<table><thead><tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table>" if t.rows else "<p>(none)</p>"
    return f'<section id="table-{t.name}"><h2>{escape(t.title)}</h2>\n{inner}\n{note}</section>'


def _charts(report: Report) -> str:
    from partitioner.report import charts

    base = report.row(report.base)
    parts = [("chart-makespan", "T(M) against M", charts.makespan_chart(report))]
    if base.metrics is not None:
        parts.append(("chart-stages", f"Stages of the base plan ({report.base})", charts.stage_chart(base)))
        M = min(report.plan_M, GANTT_MAX_M)
        parts.append(("chart-gantt", "Schedule of the first micro-batches (simulator)",
                      charts.gantt_chart(base, report.regime, M)))
    parts.append(("chart-pareto", "Pareto frontier", charts.pareto_chart(report)))
    return "\n".join(f'<section id="{i}" class="chart"><h2>{escape(t)}</h2>\n{s}\n</section>'
                     for i, t, s in parts)


def _calculator(report: Report) -> str:
    base = report.row(report.base).metrics
    tau = ", ".join(repr(x) for x in base.tau) if base else "1"
    d = ", ".join(repr(x) for x in base.d) if base else ""
    rows = "\n".join(f'<tr><th>{k}</th><td class="num" data-calc="{k}"></td></tr>' for k in CALC_KEYS)
    return f"""<section id="calc"><h2>Calculator: every quantity of <code>partition analyze</code></h2>
<p class="note">Edit the stage times tau and link latencies d (seconds, comma-separated), M and rho;
the table recomputes in the page with the closed forms of theory.md (Thms 1-3, Cors 1-5, Prop 1, §9).</p>
<div><label for="calc-tau">tau</label> <input id="calc-tau" value="{escape(tau)}"></div>
<div><label for="calc-d">d</label> <input id="calc-d" value="{escape(d)}"></div>
<div><label for="calc-M">M</label> <input id="calc-M" value="{report.plan_M}"></div>
<div><label for="calc-rho">rho</label> <input id="calc-rho" value="1"></div>
<p id="calc-error"></p>
<table id="calc-out"><tbody>
{rows}
</tbody></table></section>"""


def _json_script(report: Report) -> str:
    text = json.dumps(report_dict(report), indent=None, sort_keys=False).replace("</", "<\\/")
    return f'<script type="application/json" id="report-json">{text}</script>'


def render_html(report: Report) -> str:
    """The whole page as one string (deterministic for a given report)."""
    title = f"Partition report: {report.model or 'model'} on {report.cluster or 'cluster'}"
    tables = "\n".join(_table(t) for t in report_tables(report))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="generator" content="{REPORT_FORMAT}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title>
<style>{CSS}</style></head>
<body>
<h1>{escape(title)}</h1>
<p>Regime <b>{escape(report.regime)}</b>; plans optimised at M = {report.plan_M}; base plan
<b>{escape(report.base)}</b>. Times in seconds per micro-batch.</p>
{tables}
{_charts(report)}
{_calculator(report)}
{_json_script(report)}
<script>{CALCULATOR_JS}</script>
</body></html>
"""
