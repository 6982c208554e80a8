"""Closed forms over N configurations at once (docs/theory.md Thms 1-3, Cor 1), for solvers and sweeps.

Shapes: tau (N, S), d (N, S-1) or None (zeros), M an integer or an (N,) integer array.
Every function returns an (N,) float array. Same formulas as `closed_forms`, row by row:

    T_free  = (M-1) tau_max + sum tau              Thm 1
    T_async = (M-1) tau_max + sum tau + sum d       Thm 2
    T_block = (M-1) sigma_max + sum sigma           Thm 3
    T_gpipe = (S+M-1) tau_max                       Cor 1
"""

from __future__ import annotations

from typing import Any

import numpy as np

from partitioner.analysis.inputs import as_d_batch, as_M_batch, as_tau_batch

__all__ = [
    "tau_max_batch",
    "sigma_batch",
    "sigma_max_batch",
    "makespan_free_batch",
    "makespan_async_batch",
    "makespan_blocking_batch",
    "makespan_gpipe_batch",
    "homogeneity_bias_batch",
]


def _tau_d(tau: Any, d: Any) -> tuple[np.ndarray, np.ndarray]:
    t = as_tau_batch(tau)
    return t, as_d_batch(d, *t.shape)


def tau_max_batch(tau: Any) -> np.ndarray:
    """Row-wise tau_max (docs/theory.md §2)."""
    return as_tau_batch(tau).max(axis=1)


def sigma_batch(tau: Any, d: Any = None) -> np.ndarray:
    """Row-wise sigma (N, S): sigma_s = tau_s + d_s, sigma_{S-1} = tau_{S-1} (recurrence 2)."""
    t, dd = _tau_d(tau, d)
    out = t.copy()
    out[:, :-1] += dd
    return out


def sigma_max_batch(tau: Any, d: Any = None) -> np.ndarray:
    """Row-wise sigma_max (Thm 3)."""
    return sigma_batch(tau, d).max(axis=1)


def makespan_free_batch(tau: Any, M: Any = 1) -> np.ndarray:
    """Row-wise T_free = (M-1) tau_max + sum tau (Thm 1)."""
    t = as_tau_batch(tau)
    return (as_M_batch(M, t.shape[0]) - 1) * t.max(axis=1) + t.sum(axis=1)


def makespan_async_batch(tau: Any, d: Any = None, M: Any = 1) -> np.ndarray:
    """Row-wise T_async = (M-1) tau_max + sum tau + sum d (Thm 2)."""
    t, dd = _tau_d(tau, d)
    return (as_M_batch(M, t.shape[0]) - 1) * t.max(axis=1) + t.sum(axis=1) + dd.sum(axis=1)


def makespan_blocking_batch(tau: Any, d: Any = None, M: Any = 1) -> np.ndarray:
    """Row-wise T_block = (M-1) sigma_max + sum sigma (Thm 3)."""
    s = sigma_batch(tau, d)
    return (as_M_batch(M, s.shape[0]) - 1) * s.max(axis=1) + s.sum(axis=1)


def makespan_gpipe_batch(tau: Any, M: Any = 1) -> np.ndarray:
    """Row-wise GPipe estimate (S+M-1) tau_max (Cor 1)."""
    t = as_tau_batch(tau)
    N, S = t.shape
    return (S + as_M_batch(M, N) - 1) * t.max(axis=1)


def homogeneity_bias_batch(tau: Any) -> np.ndarray:
    """Row-wise sum (tau_max - tau_j) (Cor 1)."""
    t = as_tau_batch(tau)
    return (t.max(axis=1, keepdims=True) - t).sum(axis=1)
