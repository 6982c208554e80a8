"""Rendering a report section by section within its budget (`partition report`'s outputs).

The terminal text, the Markdown and the JSON are each rendered as a sequence of named
sections (the headline, each table, each JSON field). `Sections.part(name, render, empty)`
renders one while `stop()` says nothing cut the report (the CLI's stop is
`report.solving.stopped`: the `--time-limit` passed or Ctrl-C came, never the work budget,
which bounds only the searches), and an `answer` section (the headline, the JSON's plans) also
under a spent time limit, so every output answers; once it says something, or Ctrl-C lands inside a section
(KeyboardInterrupt, counted by partitioner.interrupts' handler), that section and every later
one are left out (`empty` instead), and `note()` names them and what cut them, so an
interrupted report still writes what it rendered and exits 0 like every other cut.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

__all__ = ["Sections"]

T = TypeVar("T")


class Sections:
    """The sections of one output rendered so far; module doc."""

    def __init__(self, stop: Callable[[], str] | None = None) -> None:
        self.stop = stop or (lambda: "")
        self.left_out: list[str] = []
        self.why = ""  # what cut the output ("Ctrl-C" stays; the time limit is checked again each time)
        self.cause = ""  # what cut the sections left out

    def part(self, name: str, render: Callable[[], T], empty: T, answer: bool = False) -> T:
        """`render()`, or `empty` when the output was cut before or during this section. An
        `answer` section (the headline, the plans) is rendered under a spent time limit too; only
        Ctrl-C leaves it out (as the serve search gets its first point: an output always answers)."""
        if self.why != "Ctrl-C":
            self.why = self.stop()
        if self.why == "Ctrl-C" or (self.why and not answer):
            return self._leave(name, self.why, empty)
        try:
            return render()
        except KeyboardInterrupt:
            self.why = "Ctrl-C"
            return self._leave(name, self.why, empty)

    def _leave(self, name: str, why: str, empty: T) -> T:
        self.left_out.append(name)
        self.cause = why
        return empty

    def note(self) -> str:
        """The one line naming what this output left out ("" when it is whole)."""
        if not self.left_out:
            return ""
        return f"rendering ({', '.join(self.left_out)} left out): cut short by {self.cause}"
