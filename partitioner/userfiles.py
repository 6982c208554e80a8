"""Reading files the user wrote: a missing or unreadable file is one located ConfigError.

Shared by every edge reader (YAML, config.json, CSV) so they all fail the same way:
``cluster.yaml: file not found`` or ``stats.csv: cannot read (Permission denied)``.
"""

from __future__ import annotations

from pathlib import Path

from partitioner.errors import ConfigError

__all__ = ["read_user_text"]


def read_user_text(path: str | Path, shown: str | None = None, *, encoding: str = "utf-8") -> str:
    """The text of `path`; ConfigError naming `shown` (default: the path) if it cannot be read."""
    name = shown or str(path)
    try:
        return Path(path).read_text(encoding=encoding)
    except FileNotFoundError:
        raise ConfigError("file not found", file=name) from None
    except IsADirectoryError:
        raise ConfigError("is a directory, not a file", file=name) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read ({getattr(exc, 'strerror', None) or exc})", file=name) from None
