"""Shipped presets (GPUs, links, models, engines, prices) looked up by exact id (style.md rule 14).

An unknown id is an error that lists the closest valid ids (ids it is a prefix of, then by edit
distance over ids and display names) and every valid id; there is no fuzzy matching.
"""

from __future__ import annotations

import difflib
from functools import cache
from importlib import resources
from typing import Any, Literal

import yaml

__all__ = ["Kind", "KINDS", "entries", "ids", "require", "gpu_defaults", "unknown_message", "closest", "aliases"]

Kind = Literal["gpus", "links", "models", "engines", "prices"]
KINDS: tuple[str, ...] = ("gpus", "links", "models", "engines", "prices")
_SINGULAR = {"gpus": "GPU", "links": "link", "models": "model", "engines": "engine", "prices": "priced GPU"}


@cache
def _load(kind: str) -> dict[str, Any]:
    text = resources.files("partitioner.models").joinpath("presets", f"{kind}.yaml").read_text()
    # the shipped presets are trusted files: libyaml's safe loader where it is built (5x faster)
    data: dict[str, Any] = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return data


def entries(kind: str) -> dict[str, dict[str, Any]]:
    """All catalogue entries of `kind` ("gpus", "links" or "models"), id -> raw mapping."""
    table: dict[str, dict[str, Any]] = _load(kind)[kind]
    return table


def ids(kind: str) -> tuple[str, ...]:
    """The valid ids of `kind`, in catalogue order."""
    return tuple(entries(kind))


def aliases(kind: str) -> dict[str, str]:
    """Display names of `kind`'s entries (their `name:`), alias -> id: suggestions only, never
    looked up (presets are found by exact id)."""
    return {str(e["name"]): k for k, e in entries(kind).items() if isinstance(e, dict) and e.get("name")}


def gpu_defaults() -> dict[str, Any]:
    """The fitted default efficiencies and fixed costs (gpus.yaml `defaults`): eta_memory and
    token_overhead_ms by memory type and weight-precision class, eta_compute by compute class."""
    table: dict[str, Any] = _load("gpus")["defaults"]
    return table


def _distance(a: str, b: str) -> int:
    """Optimal-string-alignment edit distance (insert, delete, substitute, swap two neighbours)."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], prev2[j - 2] + 1)
        prev2, prev = prev, row
    return prev[-1]


def _norm(text: str) -> str:
    return "-".join(text.lower().replace("_", " ").replace("-", " ").split())


def closest(value: str, valid: tuple[str, ...] | list[str], n: int = 3,
            aliases: dict[str, str] | None = None) -> list[str]:
    """Up to `n` entries of `valid` closest to `value`: ids it is a prefix of (`rtx-3060` ->
    `rtx-3060-12gb`) first, then by edit distance (at most a third of the longer name) over the ids
    and `aliases` (alias -> id, e.g. a preset's display name "GeForce RTX 3060 12GB")."""
    want = _norm(str(value))
    if not want:
        return []
    names = [(_norm(v), v) for v in valid] + [(_norm(a), i) for a, i in (aliases or {}).items() if i in valid]
    ranked: dict[str, tuple[int, int]] = {}
    for name, target in names:
        extends, cut = name.startswith(want), want.startswith(name)
        dist = _distance(want, name)
        if extends or cut or dist <= max(1, max(len(want), len(name)) // 3):
            key = (0 if extends else 1 if cut else 2, dist)
            ranked[target] = min(ranked.get(target, key), key)
    near = sorted(ranked, key=lambda t: ranked[t])
    return near[:n] or difflib.get_close_matches(str(value), list(valid), n=n, cutoff=0.6)


def unknown_message(what: str, value: object, valid: tuple[str, ...] | list[str],
                    aliases: dict[str, str] | None = None) -> str:
    """``unknown GPU id 'rtx-309'; closest: rtx-3090, rtx-3080; valid: ...``."""
    near = closest(str(value), valid, aliases=aliases)
    hint = f"; closest: {', '.join(near)}" if near else ""
    return f"unknown {what} {value!r}{hint}; valid: {', '.join(valid)}"


def require(kind: str, key: str) -> dict[str, Any]:
    """The raw entry `key` of catalogue `kind`; ValueError listing the closest ids if unknown."""
    table = entries(kind)
    if key not in table:
        raise ValueError(unknown_message(f"{_SINGULAR[kind]} id", key, ids(kind), aliases=aliases(kind)))
    return dict(table[key])
