"""Shell-safe printed commands: one `Step` per command, rendered as a listing and per-host scripts.

Every value that reaches a printed command is quoted with `quote` (`shlex.quote`; ANSI-C `$'...'` for control characters) (device, node and
model names, paths, addresses, environment values), so a hostile name such as
`node-03;touch PWNED;` or one holding a newline stays one argument. Environment variable
names are checked against `[A-Za-z_][A-Za-z0-9_]*`; every comment line goes through `comment`,
which escapes control characters, so a newline cannot end the comment; file names of the scripts keep only
`[A-Za-z0-9._-]`. The scripts run no remote command: each is run on its own host.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Step", "MARKER", "comment", "quote", "command_line", "listing", "scripts", "slug", "is_host_name"]

MARKER = "written by partition export"

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_HOST = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.\-:\[\]]*[A-Za-z0-9\]])?\Z")
_HEREDOC = "PARTITIONER_EOF"


@dataclass(frozen=True)
class Step:
    """One command on one host: its environment, argument vector and a file it needs first."""

    host: str
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    note: str = ""
    file: tuple[str, str] | None = None  # (relative path, content) written before the command
    tag: str = ""  # the replica of a deployment ("r0", "r1", ...): part of the script's file name

    def __post_init__(self) -> None:
        for key, _ in self.env:
            if not _ENV_NAME.match(key):
                raise ValueError(f"invalid environment variable name {key!r}")
        if self.file is not None and (slug(self.file[0]) != self.file[0] or _HEREDOC in self.file[1]):
            raise ValueError(f"unsafe file for a script: {self.file[0]!r}")


def slug(text: str) -> str:
    """`text` reduced to `[A-Za-z0-9._-]` (for file names), never empty."""
    out = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "host"
    return out[:60]


def is_host_name(text: str) -> bool:
    """Whether `text` can be a host name or IP address as engines take it."""
    return bool(_HOST.match(text))


def quote(text: str) -> str:
    """`text` as one shell word: `shlex.quote`, or bash's ANSI-C quoting ``$'...'`` when it holds a
    control character (names are refused at load if they do; this keeps the output one inert line
    should one get past it)."""
    from partitioner.safetext import control_problem

    if control_problem(text) is None:
        return shlex.quote(text)
    body = "".join(
        "".join(f"\\x{b:02x}" for b in c.encode()) if control_problem(c) else "\\" + c if c in "\\'" else c
        for c in text
    )  # a control character as its UTF-8 bytes, \xNN each: the same bytes in any locale
    return f"$'{body}'"


def command_line(step: Step) -> str:
    """`K=V ... argv` with every value quoted."""
    env = [f"{k}={quote(v)}" for k, v in step.env]
    return " ".join(env + [quote(a) for a in step.argv])


def _file_lines(step: Step) -> list[str]:
    if step.file is None:
        return []
    path, content = step.file
    body = content if content.endswith("\n") else content + "\n"
    return [f"cat > {shlex.quote(path)} <<'{_HEREDOC}'", body.rstrip("\n"), _HEREDOC]


def comment(text: str) -> str:
    """`text` as one shell comment line: every control character escaped (partitioner.safetext),
    so a newline in a name cannot end the comment and ESC cannot reach the terminal."""
    from partitioner.safetext import escape_control

    return "# " + escape_control(text)


_comment = comment


def listing(header: Sequence[str], steps: Sequence[Step]) -> str:
    """The readable listing: header comments, then each step under '# [k] on host ...'."""
    lines = [_comment(h) for h in header]
    for k, step in enumerate(steps, 1):
        where = f"[{k}] on host {step.host!r}"
        lines.append(_comment(f"{where}: {step.note}" if step.note else where))
        lines += _file_lines(step)
        lines.append(command_line(step))
    return "\n".join(lines) + "\n"


def scripts(steps: Sequence[Step], header: Sequence[str] = ()) -> tuple[tuple[str, str], ...]:
    """One script per run of consecutive steps on one host (and replica), named `NN-host.sh`
    (`NN-rK-host.sh` for replica K of a deployment), in run order."""
    groups: list[list[Step]] = []
    for step in steps:
        if groups and (groups[-1][0].host, groups[-1][0].tag) == (step.host, step.tag):
            groups[-1].append(step)
        else:
            groups.append([step])
    out = []
    for i, group in enumerate(groups, 1):
        host = group[0].host
        lines = ["#!/usr/bin/env bash", _comment(MARKER), _comment(f"step {i} of {len(groups)}: run on host {host!r}")]
        lines += [_comment(h) for h in header]
        for step in group:
            if step.note:
                lines.append(_comment(step.note))
            lines += _file_lines(step)
            lines.append(command_line(step))
        tag = f"{slug(group[0].tag)}-" if group[0].tag else ""
        out.append((f"{i:02d}-{tag}{slug(host)}.sh", "\n".join(lines) + "\n"))
    return tuple(out)
