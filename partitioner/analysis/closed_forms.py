"""Closed-form makespans and biases of a heterogeneous pipeline (docs/theory.md, Thms 1-3, Cors 1-3).

Symbols (docs/theory.md §2):
    S      number of stages, tau_j the time of stage j per micro-batch (j = 0..S-1)
    d_j    latency of link j -> j+1 (j = 0..S-2); the last stage sends nothing
    M      number of micro-batches, in order
    sigma  blocking stage times: sigma_s = tau_s + d_s (s < S-1), sigma_{S-1} = tau_{S-1}

    T_free  = (M-1) tau_max + sum tau                      Thm 1 (d = 0)
    T_async = (M-1) tau_max + sum tau + sum d               Thm 2
    T_block = (M-1) sigma_max + sum sigma                   Thm 3
    T_gpipe = (S+M-1) tau_max                               Cor 1 (the classic estimate)

Every function validates its input (`partitioner.analysis.inputs`) and returns a Python float.
"""

from __future__ import annotations

import math

import numpy as np

from partitioner.analysis.inputs import ArrayLike, as_d, as_M, as_tau

__all__ = [
    "tau_max",
    "sigma",
    "sigma_max",
    "first_latency",
    "makespan_free",
    "makespan_async",
    "makespan_blocking",
    "makespan_gpipe",
    "homogeneity_bias",
    "full_bias",
    "gpipe_relative_error",
    "throughput_async",
    "throughput_blocking",
    "crossover_batches",
    "bubble_fraction",
]


def tau_max(tau: ArrayLike) -> float:
    """Bottleneck stage time tau_max = max_j tau_j (docs/theory.md §2)."""
    return float(as_tau(tau).max())


def sigma(tau: ArrayLike, d: ArrayLike | None = None) -> np.ndarray:
    """Blocking stage times sigma_s = tau_s + d_s (s < S-1), sigma_{S-1} = tau_{S-1} (recurrence 2)."""
    t = as_tau(tau)
    out = t.copy()
    out[:-1] += as_d(d, t.size)
    return out


def sigma_max(tau: ArrayLike, d: ArrayLike | None = None) -> float:
    """Blocking bottleneck sigma_max = max_s sigma_s (Thm 3)."""
    return float(sigma(tau, d).max())


def first_latency(tau: ArrayLike, d: ArrayLike | None = None) -> float:
    """Latency of the first micro-batch, sum tau + sum d = T[0][S-1] (Thm 2 at M = 1; Errors 2)."""
    t = as_tau(tau)
    return math.fsum(t) + math.fsum(as_d(d, t.size))


def makespan_free(tau: ArrayLike, M: int = 1) -> float:
    """Communication-free makespan T(M) = (M-1) tau_max + sum tau (Thm 1, docs/theory.md)."""
    t = as_tau(tau)
    return (as_M(M) - 1) * float(t.max()) + math.fsum(t)


def makespan_async(tau: ArrayLike, d: ArrayLike | None = None, M: int = 1) -> float:
    """Asynchronous makespan T(M) = sum tau + sum d + (M-1) tau_max (Thm 2, docs/theory.md)."""
    t = as_tau(tau)
    return first_latency(t, d) + (as_M(M) - 1) * float(t.max())


def makespan_blocking(tau: ArrayLike, d: ArrayLike | None = None, M: int = 1) -> float:
    """Blocking makespan T(M) = (M-1) sigma_max + sum sigma (Thm 3, docs/theory.md)."""
    s = sigma(tau, d)
    return (as_M(M) - 1) * float(s.max()) + math.fsum(s)


def makespan_gpipe(tau: ArrayLike, M: int = 1) -> float:
    """The classic GPipe estimate T_c = (S+M-1) tau_max (Cor 1, docs/theory.md; Huang et al. 2019)."""
    t = as_tau(tau)
    return (t.size + as_M(M) - 1) * float(t.max())


def homogeneity_bias(tau: ArrayLike) -> float:
    """Homogeneity bias B = sum_j (tau_max - tau_j) = T_c - T_free, constant in M (Cor 1)."""
    t = as_tau(tau)
    return math.fsum(float(t.max()) - t)


def full_bias(tau: ArrayLike, d: ArrayLike | None = None) -> float:
    """Full bias T_c - T_async = sum (tau_max - tau_j) - sum d (Cor 3); < 0: T_c underestimates."""
    t = as_tau(tau)
    return homogeneity_bias(t) - math.fsum(as_d(d, t.size))


def gpipe_relative_error(tau: ArrayLike, d: ArrayLike | None = None, M: int = 1) -> float:
    """Signed relative error of GPipe vs Thm 2: g = (T_c - T_async)/T_async (Table 1, docs/theory.md).

    With d = 0 this is Table 1's g = B/T; e.g. tau = [0.5,1,1,5]: +166.7 % at M = 1.
    """
    t = as_tau(tau)
    T = makespan_async(t, d, M)
    return (makespan_gpipe(t, M) - T) / T


def throughput_async(tau: ArrayLike) -> float:
    """Asymptotic async throughput lim T(M)/M -> 1/tau_max, for any d (Prop 1)."""
    return 1.0 / tau_max(tau)


def throughput_blocking(tau: ArrayLike, d: ArrayLike | None = None) -> float:
    """Asymptotic blocking throughput 1/sigma_max (Prop 1)."""
    return 1.0 / sigma_max(tau, d)


def crossover_batches(tau: ArrayLike, d: ArrayLike | None = None) -> float:
    """Smooth crossover M* = 1 + (sum tau + sum d)/tau_max (docs/theory.md, "Crossover"; 2.5 for [0.5,1,1,5]).

    Below M* the fill latency sum tau + sum d dominates T(M); above it the slope (M-1) tau_max does.
    """
    return 1.0 + first_latency(tau, d) / tau_max(tau)


def bubble_fraction(tau: ArrayLike, d: ArrayLike | None = None, M: int = 1) -> float:
    """Idle share of stage-time in the async schedule: 1 - M sum tau / (S T_async).

    Definition (ours): over the window [0, T_async] of Thm 2, the S stages offer S*T_async
    stage-seconds and compute M*sum(tau) of them; the rest is bubble (fill, drain and the
    waiting of faster stages behind the bottleneck). For a balanced pipeline with d = 0 it is
    GPipe's (S-1)/(M+S-1) (Huang et al. 2019, "GPipe", §2.2 bubble overhead).
    """
    t = as_tau(tau)
    return 1.0 - as_M(M) * math.fsum(t) / (t.size * makespan_async(t, d, M))
