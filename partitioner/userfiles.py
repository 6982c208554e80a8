"""Reading files the user wrote: a missing, unreadable or unbounded file is one located ConfigError.

Shared by every edge reader (YAML, config.json, CSV, plan JSON) so they all fail the same way:
``cluster.yaml: file not found`` or ``stats.csv: cannot read (Permission denied)``.

Only regular files are read, and at most `limit` bytes (partitioner.limits MAX_INPUT_BYTES by
default): a device (``/dev/zero``, ``/dev/stdin``), a FIFO or a socket is refused by its name
before anything is read, and a file that grows past the limit while it is read is refused too.
A path holding a control character (a newline, ESC, ...) is refused by its name as well, since a
name derived from it (a model named after its file) would carry the character into scripts.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from partitioner.errors import ConfigError
from partitioner.safetext import control_problem, escape_control

__all__ = ["read_user_text", "read_user_bytes", "require_regular_file"]


def require_regular_file(path: str | Path, shown: str | None = None) -> os.stat_result:
    """The stat of `path` (following symlinks); ConfigError unless it is an existing regular file."""
    name = shown or str(path)
    problem = control_problem(str(path))
    if problem:  # the name becomes data downstream (a model's name is its file's stem)
        raise ConfigError(f"the file name {problem}", file=escape_control(name))
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ConfigError("file not found", file=name) from None
    except OSError as exc:  # ELOOP (a symlink loop), EACCES, ENAMETOOLONG, ...
        raise ConfigError(f"cannot read ({exc.strerror or exc})", file=name) from None
    except ValueError as exc:  # a NUL byte in the path
        raise ConfigError(f"cannot read ({exc})", file=name) from None
    if stat.S_ISDIR(st.st_mode):
        raise ConfigError("is a directory, not a file", file=name)
    if not stat.S_ISREG(st.st_mode):
        kind = "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else "a device"
        raise ConfigError(f"is {kind}, not a regular file; partitioner reads only regular files", file=name)
    return st


def read_user_bytes(path: str | Path, shown: str | None = None, *, limit: int | None = None,
                    limit_name: str = "MAX_INPUT_BYTES") -> bytes:
    """At most `limit` bytes of the regular file `path`; ConfigError naming `shown` otherwise."""
    from partitioner.limits import exceeded
    from partitioner.limits import limit as get_limit

    name = shown or str(path)
    cap = get_limit(limit_name) if limit is None else limit
    st = require_regular_file(path, name)
    if st.st_size > cap:
        raise ConfigError(exceeded(limit_name, f"its size ({st.st_size:,} bytes)"), file=name)
    try:
        with open(path, "rb") as fh:
            data = fh.read(cap + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read ({exc.strerror or exc})", file=name) from None
    if len(data) > cap:
        raise ConfigError(exceeded(limit_name, "its size (grew while read)"), file=name)
    return data


def read_user_text(path: str | Path, shown: str | None = None, *, encoding: str = "utf-8",
                   limit: int | None = None, limit_name: str = "MAX_INPUT_BYTES") -> str:
    """The text of `path` (see `read_user_bytes`); a file that is not `encoding` text is a ConfigError."""
    name = shown or str(path)
    data = read_user_bytes(path, name, limit=limit, limit_name=limit_name)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        hint = " (UTF-16?)" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else " (a binary file?)"
        raise ConfigError(
            f"cannot read (not {encoding} text: byte 0x{data[exc.start]:02x} at offset {exc.start}{hint})",
            file=name,
        ) from None
