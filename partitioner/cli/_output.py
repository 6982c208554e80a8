"""Small helpers shared by CLI commands: unit formatting and safe writes.

Nothing the user wrote is ever overwritten or half-written:

* **The header.** Every file partitioner writes starts with a header line in the file's own
  comment syntax: ``# <marker> ... sha256=<hex>`` (YAML, CSV, text) or
  ``<!-- <marker> ... sha256=<hex> -->`` (Markdown, HTML; in HTML after the ``<!DOCTYPE html>``
  line, which must stay first), where ``<hex>`` is the SHA-256 of everything after the header line. JSON has no comments: there the header is the top-level
  ``"format"`` field, which must equal the marker (JSON files carry no checksum).
* **Replacing a file.** An existing output is replaced only if its first line is such a header
  with the expected marker (checked exactly, at the start of line 1, never as a substring
  anywhere) and its checksum still matches, i.e. nobody edited it since partitioner wrote it.
  A hand-edited file is replaced only with ``--force`` (anywhere on the command line); a file
  partitioner did not write, an input of the command, a directory or anything that is not a
  regular file (``/dev/full``, a FIFO) never is, and is never read.
* **Atomic, all or none.** Text goes to a temporary file in the target's directory, which is
  renamed over the target. Inside a CLI command every write of the command is staged and the
  renames happen only when the command succeeds (the error boundary in partitioner.cli commits
  or discards them), so ``report --md ok.md --html /read-only/x.html`` leaves no ``ok.md``.
  Outside a command (the Python API) each write commits at once.
* ``-`` as a path means standard output.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import stat
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from partitioner.errors import InputError

__all__ = ["fmt_time", "fmt_rate", "check_writable", "safe_write", "commit_pending", "discard_pending",
           "with_header", "header_syntax"]

_PENDING = "partitioner.pending_writes"
_HEADER_READ = 64 * 1024  # a header line is short; read no more to find it


def fmt_time(seconds: float) -> str:
    """Seconds in a readable unit: 1.23 s, 45.6 ms, 7.8 µs."""
    if not math.isfinite(seconds):
        return str(seconds)
    a = abs(seconds)
    if a == 0:
        return "0"
    if a >= 1:
        return f"{seconds:.4g} s"
    if a >= 1e-3:
        return f"{seconds * 1e3:.4g} ms"
    return f"{seconds * 1e6:.4g} µs"


def fmt_rate(per_second: float) -> str:
    """Micro-batches per second."""
    return f"{per_second:.4g}/s"


def terminal_width(fallback: int = 140) -> int:
    """The terminal's width, also when stdout is piped ($COLUMNS, else whichever of stdout, stderr
    or stdin is a terminal); `fallback` columns only when there is no terminal at all. Every
    command's tables use it."""
    if os.environ.get("COLUMNS", "").isdigit():
        return int(os.environ["COLUMNS"])
    for fd in (1, 2, 0):
        try:
            return os.get_terminal_size(fd).columns
        except OSError:
            continue
    return fallback


# -- the header ---------------------------------------------------------------------------------
def header_syntax(path: str | Path) -> tuple[str, str] | None:
    """(open, close) of a header comment for `path`'s suffix, or None for JSON (no comments)."""
    suffix = Path(path).suffix.lower()
    if suffix == ".json":
        return None
    if suffix in (".md", ".markdown", ".html", ".htm", ".xml", ".svg"):
        return "<!-- ", " -->"
    return "# ", ""


def _digest(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


JSON_CHECKSUM = "sha256"  # the key a JSON output carries its checksum in (JSON has no comments)


def _json_digest(data: dict[str, object]) -> str:
    """Checksum of a JSON document's content (canonical form, without its checksum key)."""
    import json

    body = {k: v for k, v in data.items() if k != JSON_CHECKSUM}
    return _digest(json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False))


def _json_with_checksum(text: str) -> str:
    """A JSON object's text with a last key `sha256` holding `_json_digest` (2-space indent, as
    every partitioner JSON output); other JSON text unchanged."""
    import json

    try:
        data = json.loads(text)
    except ValueError:
        return text
    if not isinstance(data, dict):
        return text
    data.pop(JSON_CHECKSUM, None)
    data[JSON_CHECKSUM] = _json_digest(data)
    return json.dumps(data, indent=2, allow_nan=False) + "\n"


def with_header(path: str | Path, text: str, marker: str) -> str:
    """`text` as written to `path`: its first line made (or kept as) the header of `marker`, with the
    checksum of the rest appended. JSON (no comments) carries the marker as its `format` field and
    the checksum of its content as a last `sha256` key."""
    syntax = header_syntax(path)
    if not marker:
        return text
    if syntax is None:
        return _json_with_checksum(text)
    opening, closing = syntax
    preamble, text = _split_preamble(text)
    first, newline, rest = text.partition("\n")
    if first.startswith(opening + marker) and first.endswith(closing) and newline:
        head, body = first[: len(first) - len(closing)] if closing else first, rest
    else:
        head, body = opening + marker, text
    return f"{preamble}{head} sha256={_digest(body)}{closing}\n{body}"


def _split_preamble(text: str) -> tuple[str, str]:
    """An HTML doctype line or a script's ``#!`` line stays first (browsers and the kernel's
    exec need it there); the header follows it."""
    if text[:9].upper() == "<!DOCTYPE" or text.startswith("#!"):
        first, newline, rest = text.partition("\n")
        return first + newline, rest
    return "", text


def _header_pattern(opening: str, closing: str, marker: str) -> re.Pattern[str]:
    return re.compile(re.escape(opening + marker) + r"(?:[ ;,:].*)? sha256=([0-9a-f]{64})" + re.escape(closing))


# -- checks -------------------------------------------------------------------------------------
def _same_file(a: str | Path, b: str | Path) -> bool:
    try:
        return os.path.realpath(a) == os.path.realpath(b) or os.path.samefile(a, b)
    except (OSError, ValueError):  # a missing file, a NUL byte in a path
        return False


def _forced() -> bool:
    import click

    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.meta.get("partitioner.force"))


def _existing_verdict(out: Path, marker: str, force: bool) -> None:
    """Raise InputError unless the existing regular file `out` may be replaced."""
    from partitioner.limits import limit

    foreign = InputError(f"{out}: exists and was not written by partitioner; choose another path")
    if not marker:
        raise foreign
    syntax = header_syntax(out)
    try:
        with open(out, "rb") as fh:
            if syntax is None:
                raw = fh.read(limit("MAX_INPUT_BYTES") + 1)
                _check_json_format(out, raw, marker, foreign, force)
                return
            first = fh.readline(_HEADER_READ).decode("utf-8", errors="replace").rstrip("\r\n")
            if (first[:9].upper() == "<!DOCTYPE" and syntax[0] == "<!-- ") or (first.startswith("#!") and syntax[0] == "# "):
                first = fh.readline(_HEADER_READ).decode("utf-8", errors="replace").rstrip("\r\n")
            match = _header_pattern(*syntax, marker).fullmatch(first)
            if match is None:
                raise foreign
            if force:
                return
            body = fh.read(limit("MAX_INPUT_BYTES") + 1)
    except OSError as exc:
        raise InputError(f"{out}: cannot read the existing file ({exc.strerror or exc})") from None
    if hashlib.sha256(body).hexdigest() != match.group(1):
        raise InputError(f"{out}: was edited since partitioner wrote it (its checksum differs); "
                         "pass --force to replace it, or choose another path")


def _check_json_format(out: Path, raw: bytes, marker: str, foreign: InputError, force: bool) -> None:
    """A JSON output is ours when its `format` field is exactly `marker`; hand-edited when its
    `sha256` key differs from the checksum of its content (a file without that key predates it)."""
    import json

    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        raise foreign from None
    if not isinstance(data, dict) or data.get("format") != marker:
        raise foreign
    stored = data.get(JSON_CHECKSUM)
    if force or stored is None:
        return
    if stored != _json_digest(data):
        raise InputError(f"{out}: was edited since partitioner wrote it (its checksum differs); "
                         "pass --force to replace it, or choose another path")


def check_writable(path: str | Path, *, inputs: Iterable[str | Path] = (), marker: str = "",
                   force: bool | None = None) -> Path:
    """Raise InputError if writing `path` would destroy something the user wrote (see the module doc).

    Commands that write several files may call this for every path first, so a refusal comes
    before any slow work; `safe_write` checks again.
    """
    if not str(path).strip():
        raise InputError(f"an output path is empty (got {str(path)!r}); give a file name, or - for standard output")
    out = Path(path)
    if str(path) == "-":
        return out
    for source in inputs:
        if _same_file(source, out):
            raise InputError(f"{out}: refusing to overwrite an input file")
    try:
        st = os.stat(out)
    except FileNotFoundError:
        if os.path.lexists(out):  # a dangling symlink: writing would create its target somewhere else
            raise InputError(f"{out}: is a symlink to a missing file ({os.readlink(out)!r}); "
                             "refusing to write through it") from None
        return out
    except (OSError, ValueError) as exc:  # a symlink loop, a path through a file, a NUL byte, ...
        raise InputError(f"{out}: cannot write ({getattr(exc, 'strerror', None) or exc})") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"{out}: is a directory")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{out}: is not a regular file (a device or a FIFO); partitioner writes only regular files")
    _existing_verdict(out, marker, _forced() if force is None else force)
    return out


# -- writing ------------------------------------------------------------------------------------
@dataclass
class _Staged:
    target: Path
    temp: str


def _stage(out: Path, text: str, mode: int | None = None) -> _Staged:
    """Write `text` to a new temporary file beside `out` (same directory, so the rename is atomic),
    with permission bits `mode` (None: those of the file it replaces, else 0o666 less the umask)."""
    directory = out.parent if str(out.parent) else Path(".")
    try:
        fd, temp = tempfile.mkstemp(dir=directory, prefix=f".{out.name}.", suffix=".tmp")
    except OSError as exc:
        raise InputError(f"{out}: cannot write ({exc.strerror or exc})") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is None:
            try:
                mode = stat.S_IMODE(os.stat(out).st_mode)
            except OSError:
                umask = os.umask(0)
                os.umask(umask)
                mode = 0o666 & ~umask
        os.chmod(temp, mode)
    except OSError as exc:
        _remove(temp)
        raise InputError(f"{out}: cannot write ({exc.strerror or exc})") from None
    return _Staged(out, temp)


def _remove(temp: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(temp)


def _commit(staged: list[_Staged]) -> None:
    for i, item in enumerate(staged):
        try:
            os.replace(item.temp, item.target)
        except OSError as exc:
            for rest in staged[i:]:
                _remove(rest.temp)
            raise InputError(f"{item.target}: cannot write ({exc.strerror or exc})") from None


def _pending() -> list[_Staged] | None:
    import click

    ctx = click.get_current_context(silent=True)
    if ctx is None or _PENDING not in ctx.meta:
        return None
    pending: list[_Staged] = ctx.meta[_PENDING]
    return pending


def commit_pending(meta: dict[str, object]) -> None:
    """Rename every write staged during a command into place (called by the CLI's boundary)."""
    staged = meta.pop(_PENDING, None)
    if isinstance(staged, list):
        _commit(staged)


def discard_pending(meta: dict[str, object]) -> None:
    """Delete every write staged during a command that failed (called by the CLI's boundary)."""
    staged = meta.pop(_PENDING, None)
    if isinstance(staged, list):
        for item in staged:
            _remove(item.temp)


def safe_write(path: str | Path, text: str, *, inputs: Iterable[str | Path] = (), marker: str = "",
               force: bool | None = None, mode: int | None = None) -> Path:
    """Write `text` (with the header of `marker`, see `with_header`) to `path` unless that would
    destroy something the user wrote; ``-`` prints it to standard output instead.

    Refuses when `path` is one of `inputs`, not a regular file, or an existing file that does not
    start with the header of `marker` (or whose checksum shows a hand edit, unless `force` or
    ``--force``). Inside a CLI command the file appears when the command succeeds.
    """
    out = check_writable(path, inputs=inputs, marker=marker, force=force)
    if str(path) == "-":
        import click

        click.echo(text, nl=False)
        return out
    pending = _pending()
    if pending is not None and any(_same_file(p.target, out) or p.target == out for p in pending):
        raise InputError(f"{out}: this command already writes that file")
    staged = _stage(out, with_header(out, text, marker), mode)
    if pending is None:
        _commit([staged])
    else:
        pending.append(staged)
    return out
