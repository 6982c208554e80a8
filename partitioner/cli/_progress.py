"""One status line on stderr for a long command (`partition report`, `partition plan`).

On a terminal each update overwrites the last (carriage return, then erase to the end of the
line) and the line is erased when the command ends, so a search leaves no trail of lines. Off a
terminal (a log file, a pipe, a test runner) it prints nothing unless asked (`--progress`), then
one line per update at most once a second. Commands whose stdout is data (`--json`, `--export`)
print no progress unless `--progress` is given. Nothing shows during the first `QUIET_S` seconds.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

__all__ = ["QUIET_S", "ProgressLine", "wants_progress"]

QUIET_S = 1.0  # commands shorter than this print no progress
EVERY_S = 1.0  # off a terminal, at most one line per this many seconds


def wants_progress(flag: bool, *, data_on_stdout: bool, stream: TextIO | None = None) -> bool:
    """Whether to show progress: `--progress` always; else only on a terminal and only when stdout
    carries no data (`--json`, `--export`)."""
    if flag:
        return True
    err = stream or sys.stderr
    return not data_on_stdout and bool(getattr(err, "isatty", lambda: False)())


class ProgressLine:
    """`line(text)` shows `text` as the one progress line; `close()` (or leaving a `with`) erases it."""

    def __init__(self, enabled: bool, stream: TextIO | None = None, quiet_s: float = QUIET_S) -> None:
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.start = time.perf_counter()
        self.quiet_s = quiet_s
        self.last = -float("inf")
        self.shown = False

    def __call__(self, text: str) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self.start < self.quiet_s:
            return
        line = f"{now - self.start:5.1f}s  {text}"
        if self.tty:
            from partitioner.cli._output import terminal_width

            width = max(20, terminal_width() - 1)
            self.stream.write("\r" + line[:width] + "\x1b[K")
        elif now - self.last >= EVERY_S:
            self.stream.write(line + "\n")
            self.last = now
        else:
            return
        self.shown = True
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.tty and self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
        self.shown = False

    def __enter__(self) -> ProgressLine:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
