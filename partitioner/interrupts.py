"""Ctrl-C across many solves: a count of SIGINTs that loops compare before and after a solve.

A solver turns Ctrl-C into its best plan so far (status "INTERRUPTED", or "OPTIMAL" when it had
just proven it), which is right for one solve but lets a loop over many solves (the replica and
serve searches) run on to the end and report "optimal". While a CLI command runs,
`count_sigints` makes SIGINT count itself before raising KeyboardInterrupt as Python's default
handler does; a loop notes `count()` before a solve and raises KeyboardInterrupt after it when
`since(mark)` is true, so its own handler returns the best deployment so far, and the exact
solvers call `no_new_solve()` as they start, so a later phase does not start. Pure bookkeeping:
no heavy imports, so `partition --help` stays instant.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["count", "since", "count_sigints", "no_new_solve"]

_seen = [0]
_base = [0]  # `_seen` when the running command installed the handler


def count() -> int:
    """SIGINTs seen so far (while `count_sigints` was in effect)."""
    return _seen[0]


def since(mark: int) -> bool:
    """Whether a SIGINT arrived since `count()` was `mark`."""
    return _seen[0] != mark


def _handler(signum: int, frame: Any) -> None:
    _seen[0] += 1
    raise KeyboardInterrupt


def count_sigints() -> Callable[[], None]:
    """Install the counting SIGINT handler (main thread only); returns the function restoring the old one."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.signal(signal.SIGINT, _handler)
    _base[0] = _seen[0]

    def restore() -> None:
        signal.signal(signal.SIGINT, previous)
        _base[0] = _seen[0]  # outside a command `no_new_solve` is inert again

    return restore


def no_new_solve() -> None:
    """Called as an exact solver starts: after a Ctrl-C in this command, no new solve starts
    (KeyboardInterrupt), so a command of many solves (a report, a search) stops within one
    solve's check interval; the solve that was running when Ctrl-C came returns its plan so far."""
    if _seen[0] != _base[0]:
        raise KeyboardInterrupt
