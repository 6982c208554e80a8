"""Typed exceptions. Every error the user can cause derives from `PartitionerError`.

The CLI (`partitioner.cli`) is the single boundary that turns these into a one-line
message and an exit code: 2 for bad input, 3 for a model that cannot fit, 4 for a solver
failure. Causes are fixed at the input edge (partitioner.limits, partitioner.userfiles, the YAML
loader); `translate` maps what can still escape from a library on hostile input (Python's own
recursion, overflow and decoding errors, numpy's linear algebra) to one of these types.
"""

from __future__ import annotations

__all__ = [
    "PartitionerError",
    "InputError",
    "ConfigError",
    "InfeasibleError",
    "SolverError",
    "translate",
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


def translate(exc: BaseException) -> PartitionerError | None:
    """The PartitionerError that stands for `exc`, a library exception user input can cause, or
    None when `exc` is not one (a bug, which the CLI reports as an internal error)."""
    if isinstance(exc, PartitionerError):
        return exc
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, RecursionError):
        return InputError("input nested too deeply to process (see partitioner.limits MAX_YAML_DEPTH)")
    if isinstance(exc, MemoryError):
        return InputError("out of memory: the input is too large (see the limits in partitioner.limits)")
    if isinstance(exc, OverflowError):
        return InputError(f"a number is too large ({text}); numbers must be at most 1e18 in size")
    if isinstance(exc, UnicodeError):
        return InputError(f"an input is not UTF-8 text ({text})")
    if isinstance(exc, ValueError) and "null byte" in text:  # os.stat of a path with NUL (click.Path)
        return InputError("a path contains a NUL byte")
    if isinstance(exc, ValueError) and "digits" in text and "int" in text:
        return InputError(f"an integer has too many digits ({text})")
    if isinstance(exc, RuntimeError) and "symlink loop" in text.lower():
        return InputError(f"a path is a symlink loop ({text})")
    if isinstance(exc, FloatingPointError):
        return InputError(f"numbers out of range for floating point ({text})")
    if type(exc).__name__ == "LinAlgError":  # numpy.linalg, not imported here (lazy imports)
        return InputError(f"the measurements give a singular system ({text}); check for repeated or extreme values")
    return None
