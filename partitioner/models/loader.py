"""Safe YAML loading that remembers line numbers, and pydantic errors turned into ConfigError.

`read_yaml` parses with `yaml.SafeLoader` (no arbitrary tags) and records the line of every
key and list item by its path, so a `ValidationError.loc` such as ``('devices', 2, 'memory_gb')``
becomes ``cluster.yaml:14: devices[2].memory_gb: ...`` (issue 3, Errors; style.md rule 6).
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from partitioner.errors import ConfigError
from partitioner.models import catalog
from partitioner.models.fields import LocatedValueError
from partitioner.userfiles import read_user_text

__all__ = ["Source", "read_yaml", "validate", "format_loc", "Loc"]

Loc = tuple[str | int, ...]
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Source:
    """A loaded file: its display name and the 1-based line of each YAML path."""

    file: str
    marks: dict[Loc, int] = field(default_factory=dict)

    def line(self, path: Loc) -> int | None:
        """Line of `path`, or of its longest known prefix."""
        for n in range(len(path), -1, -1):
            if tuple(path[:n]) in self.marks:
                return self.marks[tuple(path[:n])]
        return None


def format_loc(loc: Loc) -> str:
    """``('devices', 2, 'memory_gb')`` -> ``devices[2].memory_gb``."""
    out = ""
    for p in loc:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _walk(node: yaml.Node, path: Loc, marks: dict[Loc, int], file: str) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: set[Any] = set()
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.value)
            if key in seen:
                raise ConfigError(
                    f"duplicate key {key!r}", file=file, location=format_loc(path + (key,)) or None,
                    line=key_node.start_mark.line + 1,
                )
            seen.add(key)
            marks[path + (key,)] = key_node.start_mark.line + 1
            _walk(value_node, path + (key,), marks, file)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            marks[path + (i,)] = item.start_mark.line + 1
            _walk(item, path + (i,), marks, file)


def read_yaml(path: str | Path) -> tuple[dict[str, Any], Source]:
    """Parse a YAML mapping safely; ConfigError (with line) if missing, malformed or not a mapping."""
    name = str(path)
    text = read_user_text(path)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.load(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        raise ConfigError(f"malformed YAML: {exc.problem or exc.context}", file=name, line=line) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"malformed YAML: {exc}", file=name) from None
    if not isinstance(data, dict):
        got = "an empty file" if data is None else f"a {type(data).__name__}"
        raise ConfigError(f"expected a mapping at the top level (got {got})", file=name, line=1)
    marks: dict[Loc, int] = {}
    if node is not None:
        _walk(node, (), marks, name)
    return data, Source(name, marks)


def _data_loc(data: Any, loc: Loc, kind: str) -> Loc:
    """Drop pydantic's union/validator tags from `loc`, keeping only steps into the data
    (and, for a missing or unknown key, the key itself)."""
    out: list[str | int] = []
    cur = data
    for i, p in enumerate(loc):
        if isinstance(cur, dict) and p in cur:
            out.append(p)
            cur = cur[p]
        elif isinstance(cur, list) and isinstance(p, int) and 0 <= p < len(cur):
            out.append(p)
            cur = cur[p]
        elif isinstance(cur, dict) and i == len(loc) - 1 and kind in ("missing", "extra_forbidden"):
            out.append(p)
    return tuple(out)


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for arg in typing.get_args(annotation):
        found += _models_in(arg)
    return found


def _fields_at(cls: type[BaseModel], path: Loc) -> list[str] | None:
    """The field names (aliases) valid at `path` inside schema `cls`, or None if unknown."""
    current: type[BaseModel] | None = cls
    for p in path:
        if isinstance(p, int) or current is None:
            continue
        spec = next((f for n, f in current.model_fields.items() if (f.alias or n) == p), None)
        models = _models_in(spec.annotation) if spec else []
        current = models[0] if models else None
    if current is None:
        return None
    return [f.alias or n for n, f in current.model_fields.items()]


def _message(cls: type[BaseModel], err: dict[str, Any], loc: Loc) -> str:
    kind, msg, got = err["type"], str(err["msg"]), err.get("input")
    if kind == "extra_forbidden":
        valid = _fields_at(cls, loc[:-1])
        return catalog.unknown_message("field", loc[-1], valid) if valid else f"unknown field {loc[-1]!r}"
    if kind == "missing":
        return "missing required field"
    if kind in ("value_error", "assertion_error"):
        return msg.split(", ", 1)[1] if msg.startswith(("Value error, ", "Assertion failed, ")) else msg
    if isinstance(got, (dict, list)):
        return msg
    return f"{msg} (got {got!r})"


# Type mismatches that a union reports for the branches the input was not meant for.
_MISMATCH = frozenset({
    "literal_error", "string_type", "float_type", "float_parsing", "int_type", "int_parsing",
    "dict_type", "model_type", "model_attributes_type", "bool_type", "bool_parsing", "none_required",
})


def validate(cls: type[M], data: Any, source: Source, context: dict[str, Any] | None = None) -> M:
    """`cls.model_validate(data)`; the first error becomes a ConfigError naming file, path and line."""
    try:
        return cls.model_validate(data, context=context)
    except ValidationError as exc:
        best: tuple[tuple[int, bool], Loc, dict[str, Any]] | None = None
        for err in exc.errors():
            loc = _data_loc(data, tuple(err["loc"]), err["type"])
            extra = (err.get("ctx") or {}).get("error")
            if isinstance(extra, LocatedValueError):
                loc = loc + extra.loc
            rank = (len(loc), err["type"] not in _MISMATCH)
            if best is None or rank > best[0]:
                best = (rank, loc, dict(err))
        assert best is not None  # a ValidationError always carries at least one error
        _, loc, err = best
        raise ConfigError(
            _message(cls, err, loc), file=source.file, location=format_loc(loc) or None, line=source.line(loc)
        ) from None
