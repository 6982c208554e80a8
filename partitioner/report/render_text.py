"""The report in the terminal: one rich table per section (`partition report`)."""

from __future__ import annotations

from typing import Any

from partitioner.report.compare import Report
from partitioner.report.tables import Table, report_tables

__all__ = ["rich_tables", "render_text"]


def _rich(table: Table) -> Any:
    from rich.table import Table as RichTable

    out = RichTable(title=table.title, caption=table.note or None, title_justify="left")
    for i, col in enumerate(table.columns):
        out.add_column(col, justify="left" if i == 0 or col in ("devices", "stages", "engine") else "right")
    for row in table.rows:
        out.add_row(*[c.text for c in row])
    return out


def rich_tables(report: Report) -> list[Any]:
    """rich `Table`s for every non-empty section."""
    return [_rich(t) for t in report_tables(report) if t.rows]


def render_text(report: Report, console: Any = None, width: int = 160) -> str:
    """Print to `console` (a rich Console) or, without one, return the plain text."""
    from rich.console import Console

    head = f"partition report: {report.model or 'model'} on {report.cluster or 'cluster'}"
    if console is not None:
        console.print(head)
        for t in rich_tables(report):
            console.print(t)
        return ""
    c = Console(width=width, record=True, file=_Null(), color_system=None)
    c.print(head)
    for t in rich_tables(report):
        c.print(t)
    return c.export_text()


class _Null:
    def write(self, _: str) -> int:
        return 0

    def flush(self) -> None:
        return None
