"""Shipped presets (GPUs, links, models, engines, prices) looked up by exact id (style.md rule 14).

An unknown id is an error that lists the closest valid ids (difflib) and every valid id;
there is no fuzzy matching.
"""

from __future__ import annotations

import difflib
from functools import cache
from importlib import resources
from typing import Any, Literal

import yaml

__all__ = ["Kind", "KINDS", "entries", "ids", "require", "gpu_defaults", "unknown_message", "closest"]

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


def gpu_defaults() -> dict[str, Any]:
    """The fitted default efficiencies and fixed costs (gpus.yaml `defaults`): eta_memory and
    token_overhead_ms by memory type and weight-precision class, eta_compute by compute class."""
    table: dict[str, Any] = _load("gpus")["defaults"]
    return table


def closest(value: str, valid: tuple[str, ...] | list[str], n: int = 3) -> list[str]:
    """Up to `n` entries of `valid` closest to `value` (difflib ratio >= 0.4)."""
    return difflib.get_close_matches(str(value), list(valid), n=n, cutoff=0.4)


def unknown_message(what: str, value: object, valid: tuple[str, ...] | list[str]) -> str:
    """``unknown GPU id 'rtx-309'; closest: rtx-3090, rtx-3080; valid: ...``."""
    near = closest(str(value), valid)
    hint = f"; closest: {', '.join(near)}" if near else ""
    return f"unknown {what} {value!r}{hint}; valid: {', '.join(valid)}"


def require(kind: str, key: str) -> dict[str, Any]:
    """The raw entry `key` of catalogue `kind`; ValueError listing the closest ids if unknown."""
    table = entries(kind)
    if key not in table:
        raise ValueError(unknown_message(f"{_SINGULAR[kind]} id", key, ids(kind)))
    return dict(table[key])
