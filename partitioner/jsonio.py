"""Strict JSON in and out: the one place partitioner turns data into JSON text and back.

Out (`dumps`): always valid JSON (RFC 8259). Python's `json` writes ``Infinity`` and ``NaN`` for
non-finite floats, which no strict parser accepts; here every non-finite number (float, numpy
scalar or array element) becomes ``null``. A ``null`` where a number is expected therefore means
"unbounded or undefined" (an infinite throughput of a zero-time stage, a ratio that is 0/0), and
the field's documentation says which. Numpy arrays and scalars are written as lists and numbers,
tuples as lists.

In (`loads_user`): a user's JSON file with the limits of partitioner.limits (nesting depth,
integer digits) and the same strictness: ``NaN``/``Infinity`` literals are refused, every error is
one located ConfigError.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from partitioner.errors import ConfigError

__all__ = ["dumps", "strict", "loads_user"]


def strict(value: Any) -> Any:
    """`value` with every non-finite float replaced by None and numpy types made plain."""
    if isinstance(value, bool) or value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k) if not isinstance(k, str) else k: strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict(v) for v in value]
    tolist = getattr(value, "tolist", None)  # numpy arrays and scalars
    if callable(tolist):
        return strict(tolist())
    return value


def dumps(value: Any, *, indent: int | None = 2, sort_keys: bool = False) -> str:
    """JSON text of `value` (see `strict`); never ``Infinity`` or ``NaN``. No trailing newline."""
    return json.dumps(strict(value), indent=indent, sort_keys=sort_keys, allow_nan=False)


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (use null or a number)")


def loads_user(text: str, file: str) -> Any:
    """Parse a user's JSON text; ConfigError naming `file` (and the line) on any problem."""
    from partitioner.limits import exceeded, limit

    depth, digits = limit("MAX_YAML_DEPTH"), limit("MAX_INT_DIGITS")
    nesting = _max_nesting(text)
    if nesting > depth:
        raise ConfigError(exceeded("MAX_YAML_DEPTH", f"nesting ({nesting} levels)"), file=file)

    def parse_int(raw: str) -> int:
        if len(raw.lstrip("-")) > digits:
            raise ValueError(exceeded("MAX_INT_DIGITS", f"an integer of {len(raw.lstrip('-'))} digits"))
        return int(raw)

    try:
        return json.loads(text, parse_int=parse_int, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"malformed JSON: {exc.msg}", file=file, line=exc.lineno) from None
    except (ValueError, RecursionError) as exc:
        raise ConfigError(f"malformed JSON: {exc}", file=file) from None


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKETS = re.compile(r"[\[\]{}]")


def _max_nesting(text: str) -> int:
    """Deepest bracket nesting outside strings (a linear scan, so deep input cannot recurse)."""
    deepest = level = 0
    for m in _BRACKETS.finditer(_STRING.sub("", text)):
        level += 1 if m.group() in "[{" else -1
        deepest = max(deepest, level)
    return deepest
