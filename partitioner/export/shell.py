"""Shell-safe printed commands: one `Step` per command, rendered as a listing and per-host scripts.

Every value that reaches a printed command is quoted with `quote` (`shlex.quote`; ANSI-C `$'...'` for control characters) (device, node and
model names, paths, addresses, environment values), so a hostile name such as
`node-03;touch PWNED;` or one holding a newline stays one argument. Environment variable
names are checked against `[A-Za-z_][A-Za-z0-9_]*`; every comment line goes through `comment`,
which escapes control characters, so a newline cannot end the comment; file names of the scripts keep only
`[A-Za-z0-9._-]`. The scripts run no remote command: each is run on its own host.

Long-running servers (a `Step` with `serves`, e.g. llama.cpp's rpc-server) are started in the
background of their host's script, which then waits until each one accepts TCP connections
(bash `/dev/tcp`, bounded retries) and keeps running (`wait`) so that stopping the script stops
them. A step with `needs` first waits the same way for every endpoint it connects to. A step
with `fallback` runs the first of its binary names found on PATH (engines rename binaries).
Wherever a step prints CUDA ordinals (`CUDA_VISIBLE_DEVICES`), `CUDA_DEVICE_ORDER=PCI_BUS_ID`
is set with them: CUDA's default order is fastest-first, which on a host with mixed GPUs need
not be the order `nvidia-smi` and the cluster file list (CUDA Programming Guide, "CUDA
Environment Variables").
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Step", "MARKER", "WAIT_TRIES", "comment", "quote", "command_line", "listing", "scripts", "slug",
           "is_host_name", "is_ipv6", "cuda_env"]

MARKER = "written by partition export"

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_HOST = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.\-:\[\]]*[A-Za-z0-9\]])?\Z")
_HEREDOC = "PARTITIONER_EOF"
_ENDPOINT = re.compile(r"[A-Za-z0-9.\-]+:[0-9]+\Z")
WAIT_TRIES = 120  # readiness checks, one a second: a server gets two minutes to listen
_WAIT_FN = (
    f"wait_port() {{  # wait_port HOST PORT: until a TCP connection succeeds, at most {WAIT_TRIES} tries a second apart\n"
    f"    for _ in $(seq {WAIT_TRIES}); do\n"
    "        if (exec 3<>\"/dev/tcp/$1/$2\") 2>/dev/null; then return 0; fi\n"
    "        sleep 1\n"
    "    done\n"
    f"    echo \"nothing listens on $1:$2 after {WAIT_TRIES} tries\" >&2\n"
    "    exit 1\n"
    "}"
)


@dataclass(frozen=True)
class Step:
    """One command on one host: its environment, argument vector and a file it needs first."""

    host: str
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    note: str = ""
    file: tuple[str, str] | None = None  # (relative path, content) written before the command
    tag: str = ""  # the replica of a deployment ("r0", "r1", ...): part of the script's file name
    serves: str = ""  # "HOST:PORT" a long-running server listens on: started in the background, waited for
    needs: tuple[str, ...] = ()  # "HOST:PORT" endpoints waited for before the command runs
    fallback: str = ""  # an older name of argv[0], run when argv[0] is not on PATH

    def __post_init__(self) -> None:
        for key, _ in self.env:
            if not _ENV_NAME.match(key):
                raise ValueError(f"invalid environment variable name {key!r}")
        for ep in (self.serves, *self.needs) if self.serves else self.needs:
            if not _ENDPOINT.match(ep):
                raise ValueError(f"invalid endpoint {ep!r} (HOST:PORT, no IPv6)")
        if self.fallback and not re.fullmatch(r"[A-Za-z0-9._-]+", self.fallback + self.argv[0]):
            raise ValueError(f"invalid binary names {self.argv[0]!r}, {self.fallback!r}")
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


def is_ipv6(host: str) -> bool:
    """Whether `host` is an IPv6 address (bare or in brackets)."""
    return ":" in host


def cuda_env(visible: str) -> tuple[tuple[str, str], ...]:
    """`CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=visible`: ordinals in PCI bus order."""
    return (("CUDA_DEVICE_ORDER", "PCI_BUS_ID"), ("CUDA_VISIBLE_DEVICES", visible))


def _env(step: Step) -> tuple[tuple[str, str], ...]:
    keys = {k for k, _ in step.env}
    if "CUDA_VISIBLE_DEVICES" in keys and "CUDA_DEVICE_ORDER" not in keys:
        return (("CUDA_DEVICE_ORDER", "PCI_BUS_ID"), *step.env)
    return step.env


def _binary_var(step: Step) -> str:
    return re.sub(r"\W", "_", step.argv[0]) + "_bin"


def command_line(step: Step, script: bool = False) -> str:
    """`K=V ... argv` with every value quoted (in a script, a binary with a fallback name is
    the variable `_binary_var` set by the script)."""
    env = [f"{k}={quote(v)}" for k, v in _env(step)]
    first = f'"${_binary_var(step)}"' if script and step.fallback else quote(step.argv[0])
    return " ".join(env + [first] + [quote(a) for a in step.argv[1:]])


def _file_lines(step: Step) -> list[str]:
    if step.file is None:
        return []
    path, content = step.file
    body = content if content.endswith("\n") else content + "\n"
    return [f"cat > {quote(path)} <<'{_HEREDOC}'", body.rstrip("\n"), _HEREDOC]


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
        if step.fallback:
            lines.append(_comment(f"(older builds name the binary {step.fallback!r})"))
        lines += _file_lines(step)
        lines.append(command_line(step) + (" &" if step.serves else ""))
    return "\n".join(lines) + "\n"


def _body(group: Sequence[Step]) -> list[str]:
    """The script lines running `group`: servers in the background and waited for, the rest in
    the foreground after the endpoints they need answer."""
    lines: list[str] = []
    if any(st.serves or st.needs for st in group):
        lines.append(_WAIT_FN)
    for st in {_binary_var(st): st for st in group if st.fallback}.values():
        a, b = quote(st.argv[0]), quote(st.fallback)
        lines.append(f"{_binary_var(st)}=\"$(command -v {a} || command -v {b} || echo {a})\"")
    servers = [st for st in group if st.serves]
    if servers:
        lines += ["pids=()", "trap 'kill \"${pids[@]}\" 2>/dev/null' EXIT INT TERM"]
    for step in group:
        if step.note:
            lines.append(_comment(step.note))
        lines += _file_lines(step)
        lines += [f"wait_port {ep.replace(':', ' ')}" for ep in step.needs]
        lines.append(command_line(step, script=True) + (" &" if step.serves else ""))
        if step.serves:
            lines.append("pids+=($!)")
    if servers:
        lines.append(_comment("wait until every server above listens, then keep serving (stop this script to stop them)"))
        lines += [f"wait_port {st.serves.replace(':', ' ')}" for st in servers]
        lines += [f"echo {quote('ready: ' + ' '.join(st.serves for st in servers))}", "wait"]
    return lines


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
        lines += _body(group)
        tag = f"{slug(group[0].tag)}-" if group[0].tag else ""
        out.append((f"{i:02d}-{tag}{slug(host)}.sh", "\n".join(lines) + "\n"))
    return tuple(out)
