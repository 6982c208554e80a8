"""Small helpers shared by CLI commands: unit formatting and safe writes.

Nothing the user wrote is ever overwritten: an output path that is one of the inputs, or an
existing file that this tool did not write, is refused with a one-line error.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

from partitioner.errors import InputError

__all__ = ["fmt_time", "fmt_rate", "check_writable", "safe_write"]


def fmt_time(seconds: float) -> str:
    """Seconds in a readable unit: 1.23 s, 45.6 ms, 7.8 µs."""
    if not math.isfinite(seconds):
        return str(seconds)
    a = abs(seconds)
    if a == 0:
        return "0"
    if a >= 1:
        return f"{seconds:.4g} s"
    if a >= 1e-3:
        return f"{seconds * 1e3:.4g} ms"
    return f"{seconds * 1e6:.4g} µs"


def fmt_rate(per_second: float) -> str:
    """Micro-batches per second."""
    return f"{per_second:.4g}/s"


def check_writable(path: str | Path, *, inputs: Iterable[str | Path] = (), marker: str = "") -> Path:
    """Raise InputError if writing `path` would destroy something the user wrote (see `safe_write`).

    Commands that write several files call this for every path first, so a refusal leaves
    nothing half-written.
    """
    out = Path(path)
    resolved = out.resolve()
    for source in inputs:
        if Path(source).resolve() == resolved:
            raise InputError(f"{out}: refusing to overwrite an input file")
    if out.exists():
        if out.is_dir():
            raise InputError(f"{out}: is a directory")
        try:
            existing = out.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise InputError(f"{out}: cannot read existing file ({exc.strerror})") from exc
        if not marker or marker not in existing:
            raise InputError(f"{out}: exists and was not written by partitioner; choose another path")
    return out


def safe_write(path: str | Path, text: str, *, inputs: Iterable[str | Path] = (), marker: str = "") -> Path:
    """Write `text` to `path` unless that would destroy something the user wrote.

    Refuses when `path` is one of `inputs`, or when it exists and does not contain `marker`
    (the signature of a file this tool wrote before, e.g. the plan format tag).
    """
    out = check_writable(path, inputs=inputs, marker=marker)
    out.write_text(text, encoding="utf-8")
    return out
