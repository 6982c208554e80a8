"""Typed exceptions. Every error the user can cause derives from `PartitionerError`.

The CLI (`partitioner.cli`) is the single boundary that turns these into a one-line
message and an exit code: 2 for bad input, 3 for a model that cannot fit, 4 for a solver
failure.
"""

from __future__ import annotations

__all__ = [
    "PartitionerError",
    "InputError",
    "ConfigError",
    "InfeasibleError",
    "SolverError",
]


class PartitionerError(Exception):
    """Base class of every error raised on purpose by `partitioner`."""

    exit_code = 2


class InputError(PartitionerError, ValueError):
    """Invalid numbers passed to a pure function (empty tau, negative d, M < 1, ...).

    The message quotes the offending value.
    """


class ConfigError(PartitionerError, ValueError):
    """Invalid user file: names the file, the YAML path and, when known, the line.

    Rendered as ``cluster.yaml:14: devices[2].memory_gb: must be > 0 (got -3)``.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        location: str | None = None,
        line: int | None = None,
    ) -> None:
        self.message = message
        self.file = file
        self.location = location
        self.line = line
        super().__init__(self.render())

    def render(self) -> str:
        head = ""
        if self.file:
            head = self.file + (f":{self.line}" if self.line else "") + ": "
        elif self.line:
            head = f"line {self.line}: "
        if self.location:
            head += f"{self.location}: "
        return head + self.message


class InfeasibleError(PartitionerError):
    """No plan satisfies the memory limits. The message says what is needed and what is available."""

    exit_code = 3


class SolverError(PartitionerError):
    """A solver failed for a reason other than infeasibility (time limit without incumbent, ...)."""

    exit_code = 4
