"""The cost model (docs/costmodel.md): per-layer, per-device time, memory and cut bytes as numpy arrays.

Pure: no files, no printing, no pydantic (style.md rule 1). Formulas: docs/costmodel.md.
"""

from __future__ import annotations

from partitioner.costs.tables import build_tables

__all__ = ["build_tables"]
