"""Validation of the numbers every closed form and the simulator take (docs/theory.md).

One place turns user numbers into clean float arrays or raises `InputError` quoting the
offending value: tau (S stage times, s), d (S-1 link latencies, s; default zeros), M (integer
number of micro-batches >= 1, bools refused), rho (overlap ratio in [0, 1]). Batch forms check
arrays of N configurations at once: tau (N, S), d (N, S-1), M scalar or (N,).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Integral, Real
from typing import Any

import numpy as np

from partitioner.errors import InputError

__all__ = [
    "as_tau",
    "as_d",
    "as_M",
    "as_rho",
    "as_tau_batch",
    "as_d_batch",
    "as_M_batch",
]

ArrayLike = Sequence[float] | np.ndarray


def _as_float_array(name: str, values: Any, ndim: int) -> np.ndarray:
    """Converts `values` to a float array of `ndim` dimensions or raises InputError."""
    if isinstance(values, (str, bytes)):
        raise InputError(f"{name} must be numbers, not a string (got {values!r})")
    try:
        arr = np.array(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be numbers (got {values!r})") from exc
    if arr.ndim != ndim:
        raise InputError(f"{name} must have {ndim} dimension(s) (got shape {arr.shape}: {values!r})")
    return arr


def _check_entries(name: str, arr: np.ndarray) -> None:
    """Refuses non-finite, negative or absurdly large entries (partitioner.limits:
    |x| <= MAX_MAGNITUDE, so sums of them cannot overflow), quoting the first offender and its index."""
    from partitioner.limits import MAX_MAGNITUDE

    bad = ~np.isfinite(arr) | (arr < 0)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        where = idx[0] if len(idx) == 1 else list(idx)
        raise InputError(f"{name}[{where}] must be finite and >= 0 (got {float(arr[idx])!r})")
    odd = arr > MAX_MAGNITUDE
    if odd.any():
        idx = tuple(int(i) for i in np.argwhere(odd)[0])
        where = idx[0] if len(idx) == 1 else list(idx)
        raise InputError(f"{name}[{where}] must be at most {MAX_MAGNITUDE:g} (got {float(arr[idx])!r})")


def as_tau(tau: ArrayLike) -> np.ndarray:
    """Stage times tau_0..tau_{S-1} (docs/theory.md §2): non-empty, finite, >= 0, tau_max > 0."""
    arr = _as_float_array("tau", tau, 1)
    if arr.size == 0:
        raise InputError(f"tau must hold at least one stage time (got {list(arr)!r})")
    _check_entries("tau", arr)
    if arr.max() <= 0:
        raise InputError(f"tau needs at least one positive stage time (got {arr.tolist()!r})")
    return arr


def as_d(d: ArrayLike | None, S: int) -> np.ndarray:
    """Link latencies d_0..d_{S-2} (docs/theory.md §2), default zeros: exactly S-1, finite, >= 0."""
    if d is None:
        return np.zeros(S - 1)
    arr = _as_float_array("d", d, 1)
    if arr.size != S - 1:
        raise InputError(
            f"d must hold S-1 = {S - 1} link latencies for S = {S} stages "
            f"(got {arr.size}: {arr.tolist()!r})"
        )
    _check_entries("d", arr)
    return arr


def as_M(M: Any) -> int:
    """Number of micro-batches: an integer >= 1 (bool refused)."""
    if isinstance(M, bool) or not isinstance(M, Integral):
        raise InputError(f"M must be an integer >= 1 (got {M!r})")
    if M < 1:
        raise InputError(f"M must be an integer >= 1 (got {M!r})")
    return int(M)


def as_rho(rho: Any) -> float:
    """Overlap ratio rho in [0, 1] (Cor 5 / §9, docs/theory.md)."""
    if isinstance(rho, bool) or not isinstance(rho, Real) or not math.isfinite(float(rho)):
        raise InputError(f"rho must be a number in [0, 1] (got {rho!r})")
    if not 0.0 <= float(rho) <= 1.0:
        raise InputError(f"rho must be in [0, 1] (got {rho!r})")
    return float(rho)


def as_tau_batch(tau: Any) -> np.ndarray:
    """N configurations of stage times, shape (N, S) with N >= 1, S >= 1; rows need tau_max > 0."""
    arr = _as_float_array("tau", tau, 2)
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise InputError(f"tau must have shape (N, S) with N, S >= 1 (got {arr.shape})")
    _check_entries("tau", arr)
    zero = np.flatnonzero(arr.max(axis=1) <= 0)
    if zero.size:
        raise InputError(f"tau[{int(zero[0])}] needs a positive stage time (got {arr[zero[0]].tolist()!r})")
    return arr


def as_d_batch(d: Any, N: int, S: int) -> np.ndarray:
    """N configurations of link latencies, shape (N, S-1); None means zeros."""
    if d is None:
        return np.zeros((N, S - 1))
    arr = _as_float_array("d", d, 2)
    if arr.shape != (N, S - 1):
        raise InputError(f"d must have shape (N, S-1) = {(N, S - 1)} (got {arr.shape})")
    _check_entries("d", arr)
    return arr


def as_M_batch(M: Any, N: int) -> np.ndarray:
    """M as one integer for all N configurations or an (N,) integer array; every entry >= 1."""
    if np.ndim(M) == 0:
        return np.full(N, as_M(M.item() if isinstance(M, np.generic) else M), dtype=np.int64)
    arr = np.asarray(M)
    if arr.shape != (N,) or arr.dtype.kind not in "iu":
        raise InputError(f"M must be an integer or an integer array of shape ({N},) (got {M!r})")
    if (arr < 1).any():
        raise InputError(f"M must be >= 1 (got {int(arr[arr < 1][0])} in M)")
    return arr.astype(np.int64)
