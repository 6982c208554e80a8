"""Which engine release a launch plan is written for: the version line and the rules per version.

The rules that differ between releases of an engine live in its record in
`partitioner/models/presets/engines.yaml`, under `versions:` (newest first; the first is the
default the exports target). `partition export --engine-version V` picks another listed release;
an unknown one is refused with the list. Each entry names where its rules were read (`source`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from partitioner.errors import InputError

__all__ = ["LABEL", "release", "version_line"]

LABEL = {"vllm": "vLLM", "sglang": "SGLang", "llamacpp": "llama.cpp", "trtllm": "TensorRT-LLM"}


def _versions(engine: str) -> dict[str, Mapping[str, Any]]:
    from partitioner.models import catalog

    return dict(catalog.require("engines", engine).get("versions") or {})


def release(engine: str, version: str | None = None) -> tuple[str, Mapping[str, Any]]:
    """(version, its rules) of `engine`: `version` if listed, else the newest listed one."""
    versions = _versions(engine)
    if not versions:
        raise InputError(f"no launch rules for engine {engine!r} in presets/engines.yaml")
    if version is None:
        return next(iter(versions.items()))
    if version not in versions:
        raise InputError(f"--engine-version {version!r} is not a {LABEL.get(engine, engine)} release with known launch rules "
                         f"(known: {', '.join(versions)})")
    return version, versions[version]


def version_line(engine: str, version: str | None = None) -> str:
    """'for vLLM 0.33.0 (...)': the header line of every launch plan."""
    v, rules = release(engine, version)
    label = rules.get("label") or f"{LABEL.get(engine, engine)} {v}"
    return f"for {label}"
