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
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
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
    """A parsed CSV: display name, header, and its data rows, parsed as they are read (`stream`),
    so a reader that stops at a bad row (line 3 of a 100 MB file) stops parsing there too."""

    file: str
    columns: tuple[str, ...]
    content: str = field(repr=False)
    header_line: int = 0

    def error(self, message: str, row: Row | None = None, column: str | None = None) -> ConfigError:
        """A ConfigError located at `row` (its line) and `column`."""
        return ConfigError(
            message, file=self.file, location=None if column is None else f"column {column!r}",
            line=None if row is None else row.line,
        )

    def stream(self) -> Iterator[Row]:
        """The data rows in file order; ConfigError at the first ragged or malformed one."""
        records = _records(self.content, self.file)
        for line, _ in records:  # skip up to and including the header
            if line >= self.header_line:
                break
        width = len(self.columns)
        for line, cells in records:
            if len(cells) != width:
                raise ConfigError(f"expected {width} cells as in the header, got {len(cells)}", file=self.file, line=line)
            yield Row(line, dict(zip(self.columns, cells, strict=False)))

    @property
    def rows(self) -> tuple[Row, ...]:
        """Every data row (all of `stream`)."""
        return tuple(self.stream())


def read_csv(path: str | Path, required: Sequence[str], *, what: str = "CSV") -> Table:
    """Read `path`; ConfigError if unreadable, empty, missing a `required` column or without data
    rows. Its size is checked against MAX_INPUT_BYTES before it is read (partitioner.userfiles);
    the rows are parsed as the caller streams them (`Table.stream`)."""
    content = read_user_text(path, encoding="utf-8-sig")
    return parse_csv(content, str(path), required, what=what)


def _records(content: str, name: str) -> Iterator[tuple[int, list[str]]]:
    """(line number, stripped cells) of every non-blank, non-comment record, parsed lazily."""
    reader = csv.reader(io.StringIO(content))
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise ConfigError(f"malformed CSV: {exc}", file=name, line=reader.line_num) from None
        if not cells or all(not c.strip() for c in cells) or cells[0].lstrip().startswith("#"):
            continue
        yield reader.line_num, [c.strip() for c in cells]


def parse_csv(content: str, name: str, required: Sequence[str], *, what: str = "CSV") -> Table:
    """Parse CSV text (see `read_csv`); `name` is used in error messages. Reads the header and
    the first data row; the rest is parsed as it is streamed."""
    records = _records(content, name)
    first = next(records, None)
    if first is None:
        raise ConfigError(f"empty {what}: expected a header row with the columns {', '.join(required)}", file=name)
    header_line, header = first
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
    table = Table(name, tuple(header), content, header_line)
    if next(table.stream(), None) is None:
        raise ConfigError(f"no data rows in the {what} (only a header)", file=name, line=header_line)
    return table


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
