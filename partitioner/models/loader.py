"""Safe YAML loading that remembers line numbers, and pydantic errors turned into ConfigError.

`read_yaml` parses with `yaml.SafeLoader` (no arbitrary tags) and records the line of every
key and list item by its path, so a `ValidationError.loc` such as ``('devices', 2, 'memory_gb')``
becomes ``cluster.yaml:14: devices[2].memory_gb: ...``.

Bounded by design (partitioner.limits): at most MAX_YAML_BYTES are read, collections nest at
most MAX_YAML_DEPTH deep, the document may hold at most MAX_YAML_NODES nodes after alias
expansion (counted on the composed graph, never expanded), an alias may not refer to the
collection that contains it, integers have at most MAX_INT_DIGITS digits, and a control
character (NUL, ESC, ...) is reported with its line and column.
"""

from __future__ import annotations

import re
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from partitioner.errors import ConfigError
from partitioner.limits import exceeded, limit
from partitioner.models import catalog
from partitioner.models.fields import LocatedValueError
from partitioner.userfiles import read_user_text

__all__ = ["Source", "read_yaml", "parse_yaml", "validate", "format_loc", "Loc"]

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


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that bounds nesting depth (MAX_YAML_DEPTH) while composing and the digits of
    integers (MAX_INT_DIGITS) while constructing, raising a located ConfigError."""

    file = ""
    max_depth = 0
    max_digits = 0

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._counted: tuple[str, str, str] | None = None  # (key, limit name, what) of the list composed

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > self.max_depth:
                mark = self.peek_event().start_mark
                raise ConfigError(exceeded("MAX_YAML_DEPTH", "nesting"), file=self.file, line=mark.line + 1)
            if self._depth == 2 and isinstance(parent, yaml.MappingNode) and isinstance(index, yaml.ScalarNode):
                self._counted = _ITEM_LIMITS.get(index.value)
            elif self._depth == 3 and self._counted and isinstance(parent, yaml.SequenceNode) and index >= limit(self._counted[1]):
                key, name, what = self._counted  # a top-level list longer than its limit: refused while read
                raise ConfigError(exceeded(name, f"more than {index:,} {what}"), file=self.file, location=key,
                                  line=self.peek_event().start_mark.line + 1)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_yaml_int(self, node: yaml.ScalarNode) -> Any:
        digits = sum(ch.isalnum() for ch in str(node.value))
        if digits > self.max_digits:
            raise ConfigError(
                exceeded("MAX_INT_DIGITS", f"an integer of {digits} digits"), file=self.file,
                line=node.start_mark.line + 1,
            )
        return super().construct_yaml_int(node)


#: Top-level lists whose length alone breaks a limit, checked while the YAML is composed (so
#: `devices: [{}, {}, ...]` with 200,000 items fails after 1,025 of them, not after parsing all):
#: a profile's `layers` entries each repeat at least once, so more entries than MAX_LAYERS break it.
_ITEM_LIMITS = {"devices": ("devices", "MAX_DEVICES", "devices"), "layers": ("layers", "MAX_LAYERS", "layer entries")}

_BoundedLoader.add_constructor("tag:yaml.org,2002:int", _BoundedLoader.construct_yaml_int)

# Characters YAML forbids (PyYAML's Reader.NON_PRINTABLE): found first, so the error has a line.
_NON_PRINTABLE = re.compile("[^\x09\x0A\x0D\x20-\x7E\x85\xA0-\uD7FF\uE000-\uFFFD\U00010000-\U0010ffff]")


def _check_characters(text: str, file: str) -> None:
    bad = _NON_PRINTABLE.search(text)
    if bad is None:
        return
    line = text.count("\n", 0, bad.start()) + 1
    col = bad.start() - (text.rfind("\n", 0, bad.start()) + 1) + 1
    raise ConfigError(
        f"column {col}: control character U+{ord(bad.group()):04X} is not allowed in YAML", file=file, line=line
    )


def _expanded_size(root: yaml.Node, file: str, budget: int) -> int:
    """Nodes of `root` with every alias expanded, computed without expanding (memoised per node);
    ConfigError for an alias that refers to itself or for more than `budget` nodes."""
    size: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        children = _children(node)
        if done:
            on_path.discard(key)
            size[key] = 1 + sum(size[id(c)] for c in children)
            if size[key] > budget:
                raise ConfigError(
                    exceeded("MAX_YAML_NODES", "the document after alias expansion"), file=file,
                    line=node.start_mark.line + 1,
                )
            continue
        if key in size:
            continue
        if key in on_path:
            raise ConfigError("an alias refers to the collection that contains it (a recursive alias)",
                              file=file, line=node.start_mark.line + 1)
        on_path.add(key)
        stack.append((node, True))
        for child in children:
            if id(child) in on_path:
                raise ConfigError("an alias refers to the collection that contains it (a recursive alias)",
                                  file=file, line=node.start_mark.line + 1)
            if id(child) not in size:
                stack.append((child, False))
    return size[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _walk(node: yaml.Node, path: Loc, marks: dict[Loc, int], file: str, seen_nodes: set[int]) -> None:
    """Record the line of every key and item; an aliased collection is walked once (at its anchor),
    so the walk is linear in the file, not in the expanded document."""
    if id(node) in seen_nodes:
        return
    seen_nodes.add(id(node))
    if isinstance(node, yaml.MappingNode):
        seen: set[Any] = set()
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else f"<{key_node.id} key at line {line}>"
            if key in seen:
                raise ConfigError(
                    f"duplicate key {key!r}", file=file, location=format_loc((*path, key)) or None, line=line,
                )
            seen.add(key)
            marks[(*path, key)] = line
            _walk(value_node, (*path, key), marks, file, seen_nodes)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            marks[(*path, i)] = item.start_mark.line + 1
            _walk(item, (*path, i), marks, file, seen_nodes)


def read_yaml(path: str | Path) -> tuple[dict[str, Any], Source]:
    """Parse a YAML mapping safely; ConfigError (with line) if missing, malformed, not a mapping,
    or beyond a limit of partitioner.limits (size, nesting, alias expansion, integer digits)."""
    name = str(path)
    text = read_user_text(path, limit_name="MAX_YAML_BYTES")
    return parse_yaml(text, name)


def parse_yaml(text: str, name: str) -> tuple[dict[str, Any], Source]:
    """`read_yaml` on text already read; `name` is the file shown in errors."""
    _check_characters(text, name)
    loader = type("Loader", (_BoundedLoader,), {
        "file": name, "max_depth": limit("MAX_YAML_DEPTH"), "max_digits": limit("MAX_INT_DIGITS"),
    })(text)
    try:
        node = loader.get_single_node()
        if node is not None:
            _expanded_size(node, name, limit("MAX_YAML_NODES"))
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = " ".join(str(exc.problem or exc.context).split())
        if exc.problem and exc.context:
            problem += f" ({' '.join(str(exc.context).split())})"
        raise ConfigError(f"malformed YAML: {problem}", file=name, line=line) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"malformed YAML: {' '.join(str(exc).split())}", file=name) from None
    finally:
        loader.dispose()
    if not isinstance(data, dict):
        got = "an empty file" if data is None else f"a {type(data).__name__}"
        raise ConfigError(f"expected a mapping at the top level (got {got})", file=name, line=1)
    marks: dict[Loc, int] = {}
    if node is not None:
        _walk(node, (), marks, name, set())
    return data, Source(name, marks)


def _data_loc(data: Any, loc: Loc, kind: str) -> Loc:
    """Drop pydantic's union/validator tags from `loc`, keeping only steps into the data
    (and, for a missing or unknown key, the key itself)."""
    out: list[str | int] = []
    cur = data
    for i, p in enumerate(loc):
        if isinstance(cur, dict) and p in cur:  # noqa: SIM114 - separate branches keep mypy's narrowing
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
        _, loc, chosen = best
        raise ConfigError(
            _message(cls, chosen, loc), file=source.file, location=format_loc(loc) or None, line=source.line(loc)
        ) from None
