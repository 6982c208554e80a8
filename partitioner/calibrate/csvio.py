"""Measurement CSVs at the edge: read with located one-line errors, write without clobbering.

Every error names the file, the line, the column and the value, e.g.
``stats.csv:7: column 'dur_min': must be >= 0 (got '-1.2')``. Blank lines and lines starting with
``#`` are skipped; cells are stripped; extra columns are allowed (and ignored by the readers that
do not know them). Numbers are bounded as in partitioner.limits: finite and at most 1e18 in size
(so sums of them cannot overflow); integers at most 2**53.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from partitioner.errors import ConfigError
from partitioner.limits import magnitude_problem
from partitioner.userfiles import read_user_text

#: Largest integer cell (2**53: exact as a float, far beyond any batch, token or sample count).
MAX_INTEGER = 2**53

__all__ = ["Row", "Table", "read_csv", "parse_csv", "number", "integer", "text", "to_csv"]


@dataclass(frozen=True)
class Row:
    """One data row: its 1-based line in the file and its cells by column name."""

    line: int
    cells: Mapping[str, str]


@dataclass(frozen=True)
class Table:
    """A parsed CSV: display name, header, data rows."""

    file: str
    columns: tuple[str, ...]
    rows: tuple[Row, ...]

    def error(self, message: str, row: Row | None = None, column: str | None = None) -> ConfigError:
        """A ConfigError located at `row` (its line) and `column`."""
        return ConfigError(
            message, file=self.file, location=None if column is None else f"column {column!r}",
            line=None if row is None else row.line,
        )


def read_csv(path: str | Path, required: Sequence[str], *, what: str = "CSV") -> Table:
    """Read `path`; ConfigError if unreadable, empty, ragged, or missing a `required` column."""
    content = read_user_text(path, encoding="utf-8-sig")
    return parse_csv(content, str(path), required, what=what)


def _lines(content: str) -> list[tuple[int, list[str]]]:
    """(line number, cells) of every non-blank, non-comment record."""
    out = []
    reader = csv.reader(io.StringIO(content))
    for cells in reader:
        line = reader.line_num
        if not cells or all(not c.strip() for c in cells) or cells[0].lstrip().startswith("#"):
            continue
        out.append((line, [c.strip() for c in cells]))
    return out


def parse_csv(content: str, name: str, required: Sequence[str], *, what: str = "CSV") -> Table:
    """Parse CSV text (see `read_csv`); `name` is used in error messages."""
    try:
        records = _lines(content)
    except csv.Error as exc:
        raise ConfigError(f"malformed CSV: {exc}", file=name) from None
    if not records:
        raise ConfigError(f"empty {what}: expected a header row with the columns {', '.join(required)}", file=name)
    header_line, header = records[0]
    seen: set[str] = set()
    for col in header:
        if not col:
            raise ConfigError("empty column name in the header", file=name, line=header_line)
        if col in seen:
            raise ConfigError(f"duplicate column {col!r} in the header", file=name, line=header_line)
        seen.add(col)
    missing = [c for c in required if c not in seen]
    if missing:
        raise ConfigError(
            f"missing column {missing[0]!r} in the {what} header (has: {', '.join(header)}; "
            f"needs: {', '.join(required)})",
            file=name, line=header_line,
        )
    rows = []
    for line, cells in records[1:]:
        if len(cells) != len(header):
            raise ConfigError(
                f"expected {len(header)} cells as in the header, got {len(cells)}", file=name, line=line
            )
        rows.append(Row(line, dict(zip(header, cells, strict=False))))
    if not rows:
        raise ConfigError(f"no data rows in the {what} (only a header)", file=name, line=header_line)
    return Table(name, tuple(header), tuple(rows))


def text(table: Table, row: Row, column: str) -> str:
    """A non-empty text cell."""
    value = row.cells[column]
    if not value:
        raise table.error("empty cell", row, column)
    return value


def number(table: Table, row: Row, column: str, *, positive: bool = False) -> float:
    """A finite number >= 0 (> 0 if `positive`)."""
    raw = text(table, row, column)
    try:
        value = float(raw)
    except ValueError:
        raise table.error(f"not a number (got {raw!r})", row, column) from None
    if not math.isfinite(value):
        raise table.error(f"must be a finite number (got {raw!r})", row, column)
    if value < 0 or (positive and value == 0):
        raise table.error(f"must be {'> 0' if positive else '>= 0'} (got {raw!r})", row, column)
    problem = magnitude_problem(value, subnormal=False)
    if problem:
        raise table.error(f"{problem} (got {raw!r})", row, column)
    return value


def integer(table: Table, row: Row, column: str, *, minimum: int = 0) -> int:
    """An integer >= `minimum` (``8`` or ``8.0``; not ``8.5``)."""
    raw = text(table, row, column)
    try:
        value = float(raw)
    except ValueError:
        raise table.error(f"not an integer (got {raw!r})", row, column) from None
    if not math.isfinite(value) or value != int(value):
        raise table.error(f"not an integer (got {raw!r})", row, column)
    if value < minimum:
        raise table.error(f"must be >= {minimum} (got {raw!r})", row, column)
    if value > MAX_INTEGER:
        raise table.error(f"must be <= {MAX_INTEGER} (got {raw!r})", row, column)
    return int(value)


def to_csv(columns: Sequence[str], rows: Iterable[Sequence[object]], comments: Sequence[str] = ()) -> str:
    """CSV text: `#` comment lines, the header, then the rows (floats with repr precision)."""
    buf = io.StringIO()
    for comment in comments:
        buf.write(f"# {comment}\n")
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([repr(v) if isinstance(v, float) else v for v in row])
    return buf.getvalue()
