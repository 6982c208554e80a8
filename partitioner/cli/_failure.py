"""What one machine's loss costs, on the console and in JSON (partitioner.planning.failure,
partitioner.planning.serving.Failure): one view for the default answer (partitioner.cli._answer)
and every explicit request on several machines (partitioner.cli.plan, partitioner.cli._deploy)."""

from __future__ import annotations

from typing import Any

__all__ = ["failure_lines", "request_failure_block", "request_failure_lines", "failure_json"]


def failure_lines(f: Any) -> list[str]:
    """What one machine's loss costs (a partitioner.planning.serving.Failure, or None: no lines),
    for the default answer and every explicit request on several machines alike."""
    if f is None or not f.losses:
        return []
    w = f.worst
    cost = f"−{1 - w.tokens_per_s / f.tokens_per_s:.1%}" if f.tokens_per_s > 0 else "—"
    lines = [f"one machine lost: worst case {_rate(w.tokens_per_s)} ({cost}) without one {w.kind} "
             f"machine ({_names(w.machines)})"]
    for loss in f.losses:
        lines.append(f"  without one {loss.kind} machine ({_names(loss.machines)}): {_rate(loss.tokens_per_s)}")
    return _wrapped(lines)


def _wrapped(lines: list[str]) -> list[str]:
    """`lines` wrapped at the terminal's width (partitioner.cli._output.terminal_width), each
    continuation indented under its line; words are never split."""
    import textwrap

    from partitioner.cli._output import terminal_width

    width = max(40, terminal_width())
    out: list[str] = []
    for line in lines:
        lead = " " * (len(line) - len(line.lstrip(" ")) + 4)
        out += textwrap.wrap(line, width=width, subsequent_indent=lead, break_long_words=False,
                             break_on_hyphens=False) or [line]
    return out


def _rate(tokens_per_s: float) -> str:
    """A loss's tokens/s; 0 is the same request planned again finding no plan that runs it (for a
    fixed workload: its batch x in-flight sequences no longer fit)."""
    return f"{tokens_per_s:,.4g} tokens/s" if tokens_per_s > 0 else "0 tokens/s (the same request no longer fits)"


def request_failure_block(request: Any, result: Any, export: str | None, since: int) -> tuple[Any] | None:
    """(the failure block or None,) of an explicit request on several machines
    (partitioner.planning.failure; none after a Ctrl-C since the interrupts count `since`); None on
    one machine, for an answer without tokens/s or under --export (nothing printed)."""
    from partitioner.planning.failure import request_failure, tokens_of

    if export is not None or len({d.node for d in request.cluster.devices}) < 2 or tokens_of(result) <= 0:
        return None

    return (request_failure(request, result, since),)


def request_failure_lines(fail: tuple[Any] | None) -> list[str]:
    """The console lines of `request_failure_block`'s result: the block, or why there is none."""
    if fail is None:
        return []
    if fail[0] is None:
        return ["one machine lost: not planned (no time left under --time-limit, or Ctrl-C)"]
    return failure_lines(fail[0])


def failure_json(result: Any, fail: tuple[Any] | None) -> str:
    """The plan's (or deployment's) JSON, with `failure` (as the default answer's) when computed."""
    if fail is None:
        return str(result.to_json())
    from partitioner.jsonio import dumps

    doc = result.to_dict()
    doc["failure"] = None if fail[0] is None else fail[0].to_dict()
    return dumps(doc, indent=2) + "\n"


def _names(nodes: tuple[str, ...]) -> str:
    return ", ".join(nodes) if len(nodes) <= 3 else f"{nodes[0]} … {nodes[-1]}, any of {len(nodes)}"
