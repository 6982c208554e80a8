"""The timings CSV: measured forward times of single layers or layer ranges (docs/costmodel.md §1).

Edge module: reads the file (through `partitioner.calibrate.csvio`) into frozen `Timing` records,
with a one-line located error for every bad cell. Shared by `partition calibrate profile` (which
reads it) and `partition calibrate measure` (which writes it).

Columns (header required, order free, extra columns ignored, ``#`` comment lines allowed):

========  =====================================================================================
column    meaning
========  =====================================================================================
device    a device name of cluster.yaml, or a GPU catalogue id (e.g. ``rtx-3090``); a device
          name wins (the rule of a profile's ``cost:`` keys)
layer     ``embed``, ``lm_head``, a decoder-layer index ``12``, or an inclusive range ``0-3``
          (timed together; ``seconds`` is then the whole range's time)
phase     ``decode`` or ``prefill``
batch     sequences per micro-batch, integer >= 1
tokens    prefill: prompt tokens per sequence; decode: context length (KV positions read per
          sequence); integer >= 1
seconds   time of one forward pass of that layer (range) for one micro-batch, between 1 ns
          and 10^6 s (a median of repeats is recommended)
samples   optional: how many timings that value summarises, integer >= 1 (default 1); the
          efficiency fit weights each row by it
========  =====================================================================================

Two rows for the same device, layer(s), phase, batch and tokens with different ``seconds``
contradict each other and are an error naming both lines (summarise repeats into one row).

Example::

    # Llama-3.1-8B, bf16, one RTX 3090; medians of 20 runs
    device,layer,phase,batch,tokens,seconds,samples
    rtx-3090,embed,decode,16,8192,0.000021,20
    rtx-3090,0-7,decode,16,8192,0.0061,20
    rtx-3090,lm_head,prefill,1,512,0.00094,20
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from partitioner.calibrate import csvio
from partitioner.errors import ConfigError
from partitioner.models import catalog

__all__ = ["COLUMNS", "Timing", "Point", "parse_layer", "read_timings", "parse_timings"]

COLUMNS: tuple[str, ...] = ("device", "layer", "phase", "batch", "tokens", "seconds")
Kind = Literal["embed", "decoder", "head"]
_RANGE = re.compile(r"^(\d+)\s*(?:-\s*(\d+))?$")


@dataclass(frozen=True, order=True)
class Point:
    """A workload point: phase, sequences per micro-batch B, tokens (prefill S, decode C)."""

    phase: str
    batch: int
    tokens: int

    def __str__(self) -> str:
        return f"{self.phase} batch {self.batch} tokens {self.tokens}"


@dataclass(frozen=True)
class Timing:
    """One measured row: `kind` embed/decoder/head; decoder layers `first`..`last` inclusive."""

    device: str
    kind: Kind
    first: int  # decoder index (0 for embed / lm_head)
    last: int
    phase: str
    batch: int
    tokens: int
    seconds: float
    samples: int = 1
    line: int = 0  # 1-based line in the CSV (0: not from a file)

    @property
    def n_layers(self) -> int:
        """Layers the row times together: last - first + 1 decoder layers, or 1."""
        return self.last - self.first + 1 if self.kind == "decoder" else 1

    @property
    def layer(self) -> str:
        """The `layer` cell as written back: embed, lm_head, 12 or 0-3."""
        if self.kind != "decoder":
            return "embed" if self.kind == "embed" else "lm_head"
        return str(self.first) if self.first == self.last else f"{self.first}-{self.last}"

    @property
    def point(self) -> Point:
        return Point(self.phase, self.batch, self.tokens)

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device, "layer": self.layer, "phase": self.phase, "batch": self.batch,
                "tokens": self.tokens, "seconds": self.seconds, "samples": self.samples, "line": self.line}


def parse_layer(raw: str) -> tuple[Kind, int, int]:
    """``embed`` / ``lm_head`` / ``12`` / ``0-3`` -> (kind, first, last); ValueError if malformed."""
    value = raw.strip().lower()
    if value in ("embed", "lm_head"):
        return ("embed" if value == "embed" else "head"), 0, 0
    match = _RANGE.match(value)
    if not match:
        raise ValueError(f"expected embed, lm_head, a layer index such as 12 or a range such as 0-3 (got {raw!r})")
    first = int(match.group(1))
    last = int(match.group(2)) if match.group(2) is not None else first
    if last < first:
        raise ValueError(f"a range must ascend, first-last (got {raw!r})")
    return "decoder", first, last


def _layer(table: csvio.Table, row: csvio.Row, num_layers: int | None) -> tuple[Kind, int, int]:
    raw = csvio.text(table, row, "layer")
    try:
        kind, first, last = parse_layer(raw)
    except ValueError as exc:
        raise table.error(str(exc), row, "layer") from None
    if num_layers is not None and kind == "decoder" and last >= num_layers:
        raise table.error(
            f"layer {last} is beyond the model's {num_layers} decoder layers (0-{num_layers - 1}) (got {raw!r})",
            row, "layer",
        )
    return kind, first, last


def _device(table: csvio.Table, row: csvio.Row, valid: Collection[str] | None, shown: Sequence[str]) -> str:
    name = csvio.text(table, row, "device")
    if valid is not None and name not in valid:
        also = "" if set(shown) >= set(catalog.ids("gpus")) else " (or a GPU catalogue id: partition catalog gpus)"
        raise table.error(catalog.unknown_message("device", name, tuple(shown)) + also, row, "device")
    return name


def _phase(table: csvio.Table, row: csvio.Row) -> str:
    raw = csvio.text(table, row, "phase")
    if raw.lower() not in ("decode", "prefill"):
        raise table.error(f"must be decode or prefill (got {raw!r})", row, "phase")
    return raw.lower()


def _timing(table: csvio.Table, row: csvio.Row, num_layers: int | None,
            valid: Collection[str] | None, shown: Sequence[str]) -> Timing:
    kind, first, last = _layer(table, row, num_layers)
    samples = csvio.integer(table, row, "samples", minimum=1) if "samples" in table.columns else 1
    return Timing(
        device=_device(table, row, valid, shown), kind=kind, first=first, last=last,
        phase=_phase(table, row), batch=csvio.integer(table, row, "batch", minimum=1),
        tokens=csvio.integer(table, row, "tokens", minimum=1),
        seconds=_seconds(table, row), samples=samples, line=row.line,
    )


#: A measured layer time outside [1 ns, 10^6 s] is a unit mistake, not a measurement (and its
#: squares would leave the float range in the least-squares fit).
SECONDS_RANGE = (1e-9, 1e6)


def _seconds(table: csvio.Table, row: csvio.Row) -> float:
    value = csvio.number(table, row, "seconds", positive=True)
    low, high = SECONDS_RANGE
    if not low <= value <= high:
        raise table.error(f"must be between {low:g} and {high:g} s (got {row.cells['seconds']!r})", row, "seconds")
    return value


def parse_timings(table: csvio.Table, *, num_layers: int | None = None,
                  valid: Collection[str] | None = None, shown: Sequence[str] = ()) -> tuple[Timing, ...]:
    """Every row of a parsed timings table (see the module docstring).

    `num_layers`: the model's decoder layers, to reject indices beyond it; `valid`: accepted
    device keys (None: any); `shown`: the names an unknown-device error lists.
    """
    timings = tuple(_timing(table, row, num_layers, valid, shown) for row in table.stream())
    _check_duplicates(table, timings)
    return timings


def _check_duplicates(table: csvio.Table, timings: Sequence[Timing]) -> None:
    """Two rows that time the same layers at the same point on the same device must agree: a
    repeat with another `seconds` contradicts it (summarise repeats into one row with `samples`)."""
    seen: dict[tuple[Any, ...], Timing] = {}
    for t in timings:
        key = (t.device, t.kind, t.first, t.last, t.phase, t.batch, t.tokens)
        first = seen.setdefault(key, t)
        if first is not t and first.seconds != t.seconds:
            raise ConfigError(
                f"contradicts line {first.line}: device {t.device!r}, layer {t.layer}, {t.point} measured "
                f"{first.seconds!r} s there and {t.seconds!r} s here; keep one row (a median, with samples)",
                file=table.file, line=t.line,
            )


def read_timings(path: str | Path, *, num_layers: int | None = None,
                 valid: Collection[str] | None = None, shown: Sequence[str] = ()) -> tuple[Timing, ...]:
    """Read a timings CSV; ConfigError ``file:line: column 'x': ... (got '...')`` on a bad cell."""
    return parse_timings(csvio.read_csv(path, COLUMNS, what="timings CSV"),
                         num_layers=num_layers, valid=valid, shown=shown)
