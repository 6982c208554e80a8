"""Gateway CSVs at the edge: aggregated statistics or per-request logs -> `GatewayStats` rows.

Two formats, told apart by the header (the gateway data set's README):

- statistics: ``model,node,n,dur_min,dur_p5,dur_p50,dur_p95,dur_mean,tot_p50,q_p50,q_frac``
  (seconds; `n` the request count, `q_frac` the share that queued), one row per (model, node);
- requests: ``model,node,duration_s,total_s,queue_wait_s``, one row per request, aggregated here
  with `gateway.aggregate_requests` (numpy linear percentiles; rows grouped by (model, node) in
  order of first appearance).

Every cell goes through `partitioner.calibrate.csvio`, so errors name file, line, column, value.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from partitioner.calibrate import csvio
from partitioner.calibrate.gateway import GatewayStats, aggregate_requests
from partitioner.errors import ConfigError

__all__ = ["STATS_COLUMNS", "REQUEST_COLUMNS", "GatewayFile", "read_gateway"]

STATS_COLUMNS: tuple[str, ...] = (
    "model", "node", "n", "dur_min", "dur_p5", "dur_p50", "dur_p95", "dur_mean", "tot_p50", "q_p50", "q_frac",
)
REQUEST_COLUMNS: tuple[str, ...] = ("model", "node", "duration_s", "total_s", "queue_wait_s")
_ORDERED = ("dur_min", "dur_p5", "dur_p50", "dur_p95")  # must not decrease along a row
_SLACK = 1e-9  # relative tolerance of the order checks (published percentiles carry float noise)
_WHAT = (f"gateway CSV (statistics: {','.join(STATS_COLUMNS)}; "
         f"or per-request log: {','.join(REQUEST_COLUMNS)})")


@dataclass(frozen=True)
class GatewayFile:
    """A read gateway CSV: its display name, format and per-(model, node) statistics in file order."""

    file: str
    format: Literal["stats", "requests"]
    stats: tuple[GatewayStats, ...]


def read_gateway(path: str | Path) -> GatewayFile:
    """Read either gateway format; ConfigError (file:line: column: value) for any bad cell."""
    table = csvio.read_csv(path, ("model", "node"), what=_WHAT)
    if set(STATS_COLUMNS) <= set(table.columns):
        return GatewayFile(table.file, "stats", _stats_rows(table))
    if set(REQUEST_COLUMNS) <= set(table.columns):
        return GatewayFile(table.file, "requests", _request_rows(table))
    raise ConfigError(
        "header matches neither gateway format: statistics need "
        f"{','.join(STATS_COLUMNS)} (missing {_missing(table, STATS_COLUMNS)}); per-request logs need "
        f"{','.join(REQUEST_COLUMNS)} (missing {_missing(table, REQUEST_COLUMNS)})",
        file=table.file,
    )


def _missing(table: csvio.Table, columns: Sequence[str]) -> str:
    return ", ".join(repr(c) for c in columns if c not in table.columns)


def _stats_row(table: csvio.Table, row: csvio.Row) -> GatewayStats:
    nums = {c: csvio.number(table, row, c) for c in STATS_COLUMNS[3:]}
    for lo, hi in itertools.pairwise(_ORDERED):
        if nums[hi] < nums[lo] * (1 - _SLACK):
            raise table.error(f"must be >= {lo} = {nums[lo]!r} (got {row.cells[hi]!r})", row, hi)
    if nums["dur_mean"] < nums["dur_min"] * (1 - _SLACK):
        raise table.error(f"must be >= dur_min = {nums['dur_min']!r} (got {row.cells['dur_mean']!r})", row, "dur_mean")
    if nums["q_frac"] > 1:
        raise table.error(f"must be a share in [0, 1] (got {row.cells['q_frac']!r})", row, "q_frac")
    return GatewayStats(
        model=csvio.text(table, row, "model"), node=csvio.text(table, row, "node"),
        n=csvio.integer(table, row, "n", minimum=1), **nums,
    )


def _stats_rows(table: csvio.Table) -> tuple[GatewayStats, ...]:
    """One GatewayStats per row; a repeated (model, node) is an error naming both lines."""
    seen: dict[tuple[str, str], int] = {}
    out = []
    for row in table.stream():
        stats = _stats_row(table, row)
        key = (stats.model, stats.node)
        if key in seen:
            raise table.error(
                f"duplicate row for model {stats.model!r} on node {stats.node!r} (also line {seen[key]})", row
            )
        seen[key] = row.line
        out.append(stats)
    return tuple(out)


def _request_rows(table: csvio.Table) -> tuple[GatewayStats, ...]:
    """Group requests by (model, node) in order of first appearance and aggregate each group."""
    groups: dict[tuple[str, str], tuple[list[float], list[float], list[float]]] = {}
    for row in table.stream():
        key = (csvio.text(table, row, "model"), csvio.text(table, row, "node"))
        dur, tot, queue = groups.setdefault(key, ([], [], []))
        dur.append(csvio.number(table, row, "duration_s"))
        tot.append(csvio.number(table, row, "total_s"))
        queue.append(csvio.number(table, row, "queue_wait_s"))
    return tuple(aggregate_requests(m, n, *samples) for (m, n), samples in groups.items())
