"""The report in the terminal: the headline, then one rich table per section (`partition report`)."""

from __future__ import annotations

import io
from typing import Any

from partitioner.report.compare import Report
from partitioner.report.headview import LEAD, headline_lines, plain
from partitioner.report.sections import Sections
from partitioner.report.tables import Table, report_tables

__all__ = ["rich_tables", "render_text", "headline_text"]


def _rich(table: Table) -> Any:
    from rich import box
    from rich.table import Table as RichTable

    out = RichTable(title=table.title, caption=table.note or None, title_justify="left", caption_justify="left",
                    box=box.SIMPLE_HEAD, pad_edge=False)
    for i, col in enumerate(table.columns):
        numeric = bool(table.rows) and table.rows[0][i].key is not None
        out.add_column(col, justify="right" if numeric else "left", no_wrap=numeric or i == 0,
                       min_width=min(12, max(len(str(r[0].text)) for r in table.rows)) if i == 0 and table.rows else None,
                       overflow="fold")
    for row in table.rows:
        out.add_row(*[f"[bold red]{c.text}[/]" if c.cls == "bad" else c.text for c in row])
    return out


def rich_tables(report: Report) -> list[Any]:
    """rich `Table`s for every non-empty section."""
    return [_rich(t) for t in report_tables(report) if t.rows]


def _lines(lines: Any) -> list[str]:
    out = []
    for line in lines:
        out.append(f"{line.label}: {plain(line.parts)}".rstrip())
        out += [f"  - {plain(sub)}" for sub in line.sub]
    return out


def command_text(report: Report) -> list[str]:
    """"Run it": the engine command, each line whole, with the export's warnings beside it."""
    h = report.headline
    if h is None or h.command is None:
        return []
    c = h.command
    if not c.text:
        return [f"Run it ({c.target}): {n}" for n in c.notes]
    out = [f"Run it ({c.target}, `partition export {c.target}`" + (f"; {len(c.warnings)} warning(s) first" if c.warnings
                                                                    else "") + "):"]
    out += [f"  warning: {w}" for w in c.warnings]
    out += [f"    {x}" for x in c.text.splitlines()]
    out += [f"  note: {n}" for n in c.notes]
    return out


def headline_text(report: Report) -> list[str]:
    """The headline block as plain lines: the lead lines, the engine command, the details."""
    lines = headline_lines(report)
    return [*_lines(lines[:LEAD]), *command_text(report), *_lines(lines[LEAD:])]


def _headline(c: Any, report: Report) -> None:
    from rich.markup import escape

    command = {x for x in command_text(report) if x.startswith("    ")}
    for line in headline_text(report):
        if line in command:  # a command line is never wrapped: it must stay copyable
            c.print(escape(line), soft_wrap=True)
        else:
            c.print(escape(line), overflow="fold")


def _print(c: Any, report: Report, parts: Sections) -> None:
    from rich.markup import escape

    c.print(f"[bold]partition report: {escape(report.model or 'model')} on {escape(report.cluster or 'cluster')}[/]")
    parts.part("the headline", lambda: _headline(c, report), None, answer=True)
    none: tuple[Table, ...] = ()
    tables = parts.part("the tables", lambda: report_tables(report), none)
    for t in tables:
        if t.rows:
            parts.part(f"the {t.title} table", lambda t=t: c.print(_rich(t)), None)  # type: ignore[misc]
    if parts.note():
        c.print(f"Cut short: {escape(parts.note())}", overflow="fold")


def render_text(report: Report, console: Any = None, width: int = 160, sections: Sections | None = None) -> str:
    """Print to `console` (a rich Console) or, without one, return the plain text. `sections`
    (partitioner.report.sections) checks the budget before the headline and each table: what it
    cut is left out, named on a last "Cut short" line (what was printed stays printed)."""
    from rich.console import Console

    parts = sections or Sections()
    if console is not None:
        _print(console, report, parts)
        return ""
    c = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    _print(c, report, parts)
    return c.export_text()
