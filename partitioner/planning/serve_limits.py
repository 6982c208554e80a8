"""The serve objective's limits as the solvers take them, checked (moved from partitioner.api).

`serve_limits(model, tpot_ms, ttft_ms, max_batch)` turns the user's milliseconds into the
seconds of `partitioner.serving.points.Limits` and lists the batch sizes a model can be costed
at (None: the roofline's grid, `partitioner.serving.search.batch_grid`; a profile: the sizes all
its batch tables cover).
"""

from __future__ import annotations

from typing import Any

__all__ = ["serve_limits", "positive", "profile_batches"]


def positive(name: str, value: float | None) -> float | None:
    from partitioner.errors import InputError

    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < float(value) < float("inf"):
        raise InputError(f"{name} must be a finite number > 0 (got {value!r})")
    return float(value)


def profile_batches(model: Any) -> list[int] | None:
    """Batch sizes a profile can be costed at: its own batch (scalar costs), or every B of
    `batch_grid` inside the range all its batch tables cover; None for the roofline."""
    from partitioner.serving.search import batch_grid

    if not model.is_profile:
        return None
    tables = [v for e in model.layers for v in e.cost.values() if isinstance(v, dict)]
    if not tables:
        return [model.workload.batch]
    lo, hi = max(min(t) for t in tables), min(max(t) for t in tables)
    return [b for b in batch_grid(hi) if b >= lo] if lo <= hi else []


def serve_limits(model: Any, tpot_ms: float | None, ttft_ms: float | None,
                 max_batch: int | None) -> tuple[Any, list[int] | None]:
    """The serve objective's limits (TPOT/TTFT in ms -> s, the largest batch) and the model's
    batch grid (None: the roofline grid; a profile's common batch sizes), each value checked."""
    from partitioner.errors import InputError
    from partitioner.serving.search import Limits

    if max_batch is not None and (isinstance(max_batch, bool) or not isinstance(max_batch, int) or max_batch < 1):
        raise InputError(f"max_batch must be an integer >= 1 (got {max_batch!r})")
    tpot, ttft = positive("tpot_ms", tpot_ms), positive("ttft_ms", ttft_ms)
    limits = Limits(None if tpot is None else tpot / 1e3, None if ttft is None else ttft / 1e3, max_batch)
    batches = profile_batches(model)
    if batches == []:
        raise InputError(f"{model.name}: the batch tables of its layers cover no common batch size")
    return limits, batches
