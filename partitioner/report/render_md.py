"""The report as Markdown (`partition report --md FILE`): a heading and one table per section."""

from __future__ import annotations

from typing import Any

from partitioner.report.compare import Report
from partitioner.report.headview import LEAD, headline_lines, plain
from partitioner.report.render_json import REPORT_FORMAT
from partitioner.report.sections import Sections
from partitioner.report.tables import Table, report_tables

__all__ = ["render_md"]


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(t: Table) -> list[str]:
    lines = [f"## {t.title}", ""]
    if not t.rows:
        return [*lines, "(none)", ""]
    lines.append("| " + " | ".join(_escape(c) for c in t.columns) + " |")
    lines.append("|" + "|".join("---" for _ in t.columns) + "|")
    lines += ["| " + " | ".join(_escape(c.text) for c in row) + " |" for row in t.rows]
    if t.note:
        lines += ["", f"_{t.note}_"]
    return [*lines, ""]


def _items(lines: Any) -> list[str]:
    out = []
    for line in lines:
        out.append(f"- **{line.label}:** {_escape(plain(line.parts))}".rstrip())
        out += [f"  - {_escape(plain(sub))}" for sub in line.sub]
    return out


def _command(report: Report) -> list[str]:
    h = report.headline
    if h is None or h.command is None:
        return []
    c = h.command
    if not c.text:
        return ["", *[f"- Run it ({c.target}): {_escape(n)}" for n in c.notes], ""]
    out = ["", f"Run it with {c.target} (`partition export {c.target}`):", ""]
    out += [f"> **Warning:** {_escape(w)}" for w in c.warnings] + ([""] if c.warnings else [])
    out += ["```sh", *c.text.splitlines(), "```"]
    out += [f"- note: {_escape(n)}" for n in c.notes]
    return [*out, ""]


def _headline(report: Report) -> list[str]:
    lines = headline_lines(report)
    out = [*_items(lines[:LEAD]), *_command(report), *_items(lines[LEAD:])]
    return [*out, ""] if out else []


def render_md(report: Report, sections: Sections | None = None) -> str:
    """Deterministic Markdown: same report, same text. `sections` (partitioner.report.sections)
    checks the budget before the headline and each table: what it cut is left out and named in a
    last "Cut short" section."""
    parts = sections or Sections()
    lines = [
        f"<!-- {REPORT_FORMAT} -->",
        f"# Partition report: {report.model or 'model'} on {report.cluster or 'cluster'}",
        "",
        f"Regime `{report.regime}`; plans optimised at M = {report.plan_M}; base plan `{report.base}`; "
        f"T(M) shown for M = {', '.join(str(M) for M in report.Ms)}.",
        "",
    ]
    lines += parts.part("the headline", lambda: _headline(report), [], answer=True)
    none: tuple[Table, ...] = ()
    tables = parts.part("the tables", lambda: report_tables(report), none)
    for t in tables:
        lines += parts.part(f"the {t.title} table", lambda t=t: _table(t), [])  # type: ignore[misc]
    if parts.note():
        lines += ["## Cut short", "", f"- {_escape(parts.note())}", ""]
    return "\n".join(lines).rstrip() + "\n"
