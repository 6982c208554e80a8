"""A GPU's compute capability from the catalogue (moved from partitioner.export.base, which
re-exports it), read by the exports and by the solvers' engine rules alike."""

from __future__ import annotations

__all__ = ["compute_capability"]


def compute_capability(gpu: str) -> tuple[int, int] | None:
    """The catalogue's compute capability of GPU id `gpu` (None: not in the catalogue or unknown)."""
    from partitioner.models import catalog

    entry = catalog.entries("gpus").get(gpu)
    value = entry.get("compute_capability") if entry else None
    if not value:
        return None
    major, _, minor = str(value).partition(".")
    return int(major), int(minor or 0)
