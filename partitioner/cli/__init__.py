"""The `partition` command: a thin click group and the single error boundary (house rule 8).

Each command lives in its own module and is imported only when it runs, so that
`partition --help` stays instant (no numpy, ortools or matplotlib at start-up).
Errors: every `PartitionerError` and every click usage error (unknown option, bad value)
becomes one line on stderr and its exit code (2 bad input, 3 infeasible, 4 solver failure); a
library exception that hostile input can still cause (RecursionError, OverflowError, a decoding
error, numpy's LinAlgError, ...) is first mapped to one by `partitioner.errors.translate`; any
other exception is a bug and is reported as one line too, with exit code 1. Ctrl-C that reaches
the boundary (the solvers return their best plan so far when they have one) is one line, exit 130. `--debug` (anywhere
on the line) shows the traceback instead. `--force` (anywhere on the line) lets a command replace
an output file that was hand-edited since partitioner wrote it (partitioner.cli._output).
"""

from __future__ import annotations

import importlib
import os
import warnings
from typing import Any, ClassVar

import click

__all__ = ["main", "COMMANDS", "LazyCommands"]

COMMANDS: dict[str, tuple[str, str]] = {
    # name: (module, one-line help shown by `partition --help` without importing it)
    "analyze": ("partitioner.cli.analyze", "Closed-form makespan analysis of a stage chain."),
    "plan": ("partitioner.cli.plan", "Plan which GPUs, in what order, hold which layers."),
    "report": ("partitioner.cli.report", "What-if report comparing plans, baselines and GPipe."),
    "export": ("partitioner.cli.export", "Print a plan in the format an engine takes."),
    "score": ("partitioner.cli.score", "Score the split an engine runs today beside the optimal plan."),
    "calibrate": ("partitioner.cli.calibrate", "Turn measurements into stage times, rho and cost factors."),
    "costs": ("partitioner.cli.costs", "Per-layer, per-device time, memory and cut bytes."),
    "catalog": ("partitioner.cli.catalog", "List the shipped GPU, link and model presets."),
    "schema": ("partitioner.cli.schema", "Print the JSON Schema of model, cluster or plan files."),
    "fleet": ("partitioner.cli.fleet", "Which GPUs to buy or rent to serve a model at a target, at least cost."),
}

#: Options that name a file or folder to write: an empty value is refused before anything runs.
OUTPUT_OPTIONS = frozenset({"--out", "--md", "--html", "--write-cluster", "--write-profile", "--write-scripts"})


class LazyCommands(click.Group):
    """A group whose commands are imported only when invoked: `table` maps each command name to
    (module, one-line help); the module defines a click command object named like the command
    (dashes as underscores: `engine-log` is `engine_log`)."""

    table: ClassVar[dict[str, tuple[str, str]]] = {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.table)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.table:
            return None
        module = importlib.import_module(self.table[cmd_name][0])
        command: click.Command = getattr(module, cmd_name.replace("-", "_"))
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_) for name, (_, help_) in self.table.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


class LazyGroup(LazyCommands):
    """The top-level group: lazy commands plus the single error boundary and `--debug`."""

    table = COMMANDS

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        for flag in ("--debug", "--force"):
            if flag in args:
                args = [a for a in args if a != flag]
                ctx.meta[f"partitioner.{flag[2:]}"] = True
        for i, arg in enumerate(args):  # `--out ''` would otherwise mean "no --out": silently nothing
            name, eq, value = arg.partition("=")
            if name in OUTPUT_OPTIONS and ((eq and not value.strip()) or (not eq and i + 1 < len(args) and not args[i + 1].strip())):
                _fail(ctx, f"{name}: the path is empty; give a file name (or - for standard output where it is allowed)", 2)
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:  # `partition --bogus`: one line, as inside a command
            if ctx.meta.get("partitioner.debug"):
                raise
            _fail(ctx, f"{ctx.command_path}: {exc.format_message()} (see '{ctx.command_path} --help')", exc.exit_code)
            raise  # unreachable: _fail exits

    def invoke(self, ctx: click.Context) -> Any:
        from partitioner.errors import PartitionerError

        debug = ctx.meta.get("partitioner.debug") or os.environ.get("PARTITIONER_DEBUG") == "1"
        from partitioner import interrupts

        restore = interrupts.count_sigints()  # so loops over many solves stop on Ctrl-C (partitioner.interrupts)
        mark = interrupts.count()
        try:
            return self._transaction(ctx)
        except PartitionerError as exc:
            if debug:
                raise
            _fail(ctx, str(exc), exc.exit_code)
        except click.UsageError as exc:  # a bad option or argument: one line too, not click's usage block
            if debug:
                raise
            where = exc.ctx.command_path if exc.ctx is not None else ctx.command_path
            _fail(ctx, f"{where}: {exc.format_message()} (see '{where} --help')", exc.exit_code)
        except OSError as exc:  # unreadable input or unwritable output
            if debug:
                raise
            where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
            _fail(ctx, f"{where}{exc.strerror or exc}", 2)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except KeyboardInterrupt:  # Ctrl-C before any phase had a plan to return (else it returns it)
            if debug:
                raise
            _fail(ctx, "interrupted (Ctrl-C) before the command had a result; nothing was written", 130)
        except Exception as exc:  # the boundary: map what input can cause, report the rest as a bug
            if debug:
                raise
            if interrupts.since(mark):  # Ctrl-C inside a C extension's import or call surfaces as its own error
                _fail(ctx, "interrupted (Ctrl-C) before the command had a result; nothing was written", 130)
            from partitioner.errors import translate

            mapped = translate(exc)
            if mapped is not None:
                _fail(ctx, str(mapped), mapped.exit_code)
            _fail(ctx, f"internal error ({type(exc).__name__}: {_one_line(exc)}); this is a bug: "
                       "rerun with --debug and report the traceback", 1)
        finally:
            restore()

    def _transaction(self, ctx: click.Context) -> Any:
        """Run the command with its file writes staged: renamed into place if it succeeds, deleted
        if it fails, so one command writes all of its files or none (partitioner.cli._output)."""
        import warnings

        from partitioner.cli import _output

        ctx.meta["partitioner.pending_writes"] = []
        try:
            with warnings.catch_warnings(record=True) as caught:
                # numpy's RuntimeWarnings (overflow, invalid value) would add lines to stderr: they
                # are collected and summarised in one line if the command still succeeds
                warnings.simplefilter("always", RuntimeWarning)
                result = super().invoke(ctx)
            _warn_numeric(caught)
        except click.exceptions.Exit as exc:
            (_output.commit_pending if exc.exit_code == 0 else _output.discard_pending)(ctx.meta)
            raise
        except BaseException:
            _output.discard_pending(ctx.meta)
            raise
        _output.commit_pending(ctx.meta)
        return result


def _warn_numeric(caught: list[warnings.WarningMessage]) -> None:
    numeric = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    for w in caught:
        if w not in numeric:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    if numeric:
        click.echo(f"warning: {len(numeric)} floating-point warning(s) while computing (first: "
                   f"{_one_line(numeric[0].message)}); check the input for extreme values", err=True)


def _one_line(exc: BaseException | Warning | str) -> str:
    return " ".join(str(exc).split())[:300]


_CONTROL = {c: f"\\x{c:02x}" for c in [*range(0x20), *range(0x7F, 0xA0)]}


def _fail(ctx: click.Context, message: str, code: int) -> None:
    """Print `error: message` as exactly one line on stderr and exit with `code`; whitespace runs
    become one space and other control characters (a NUL or ESC from a file name or a value the
    user gave) are shown escaped, so the line cannot break or recolour the terminal."""
    click.echo(f"error: {' '.join(message.split()).translate(_CONTROL)}", err=True)
    ctx.exit(code)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="partitioner")
def main() -> None:
    """partitioner: plan pipeline-parallel LLM inference on heterogeneous GPU clusters.

    Add --debug anywhere to see a traceback instead of a one-line error, and --force anywhere to
    replace an output file that was hand-edited since partitioner wrote it. Limits, errors and
    output files: README "Limits, errors and output files"; theory: docs/.
    """
