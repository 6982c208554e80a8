"""Options beyond the paper's assumptions (docs/theory.md §10 open problems (i), (ii), (v); Errors 3).

- regime and partial overlap: the blocked share beta of each send is 0 ("async", recurrence 1),
  1 ("blocking", recurrence 2) or 1 - rho ("partial": a fraction rho of every transfer overlaps
  compute, Cor 5's meaning of rho; Errors 3 shows its slope is max(tau_max, max_s tau_s+(1-rho)d_s)).
- serial links (§10(i)): a link carries one transfer at a time, FIFO; each transfer occupies it
  for o_s <= d_s (default o_s = d_s; d_s - o_s is then pure propagation latency).
- bounded buffers (§10(ii), replaces A2): K_s >= 0 slots in front of stage s+1.
- random stage times (§10(v), replaces A4): an (M, S) array per run from a seeded sampler,
  either a callable `f(rng) -> (M, S)` or a named law with mean tau_s and a coefficient of
  variation: ("lognormal", cv), ("gamma", cv) or ("exponential", None) (= gamma with cv 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from numbers import Integral, Real
from typing import Any

import numpy as np

from partitioner.analysis.inputs import as_rho
from partitioner.errors import InputError

__all__ = [
    "REGIMES",
    "Sampler",
    "blocked_share",
    "as_buffers",
    "as_occupancy",
    "named_sampler",
    "draw_tau",
]

REGIMES: tuple[str, ...] = ("async", "blocking", "partial")
Sampler = Callable[[np.random.Generator], np.ndarray]


def blocked_share(regime: str, rho: float | None) -> float:
    """beta, the share of each send that blocks its stage: async 0, blocking 1, partial 1 - rho."""
    if regime not in REGIMES:
        raise InputError(f"regime must be one of {', '.join(REGIMES)} (got {regime!r})")
    if regime == "partial":
        if rho is None:
            raise InputError("regime 'partial' needs rho, the overlapped share of each transfer (got None)")
        return 1.0 - as_rho(rho)
    if rho is not None:
        raise InputError(f"rho applies only to regime 'partial' (got rho={rho!r} with regime {regime!r})")
    return 0.0 if regime == "async" else 1.0


def as_buffers(buffer: Any, S: int) -> tuple[int | None, ...] | None:
    """Buffer capacities: None (infinite), one integer K >= 0 for every link, or S-1 of them."""
    if buffer is None:
        return None
    values = [buffer] * (S - 1) if isinstance(buffer, Integral) else list(buffer)
    if len(values) != S - 1:
        raise InputError(f"buffer must hold S-1 = {S - 1} capacities (got {buffer!r})")
    for k in values:
        if k is not None and (isinstance(k, bool) or not isinstance(k, Integral) or k < 0):
            raise InputError(f"buffer capacities must be integers >= 0 or None (got {k!r})")
    return tuple(None if k is None else int(k) for k in values)


def as_occupancy(serial_links: bool, link_occupancy: Any, d: np.ndarray) -> np.ndarray | None:
    """Per-transfer link occupancy o (shape of d) for serial links, or None for pure delays."""
    if not serial_links:
        if link_occupancy is not None:
            raise InputError(f"link_occupancy needs serial_links=True (got {link_occupancy!r})")
        return None
    if link_occupancy is None:
        return d.copy()
    try:
        o = np.array(link_occupancy, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"link_occupancy must be numbers (got {link_occupancy!r})") from exc
    if o.shape != d.shape:
        raise InputError(f"link_occupancy must have the shape of d {d.shape} (got {o.shape})")
    bad = ~np.isfinite(o) | (o < 0) | (o > d)
    if bad.any():
        i = tuple(int(x) for x in np.argwhere(bad)[0])
        got = f"got {float(o[i])!r} with d_s = {float(d[i])!r}"
        raise InputError(f"link_occupancy must be in [0, d_s] ({got})")
    return o


def named_sampler(kind: str, cv: float | None, tau: np.ndarray, M: int) -> Sampler:
    """Sampler of an (M, S) array with mean tau_s per column and coefficient of variation cv."""
    if kind == "exponential":
        if cv not in (None, 1, 1.0):
            raise InputError(f"the exponential law has cv = 1 (got cv={cv!r})")
        kind, cv = "gamma", 1.0
    if kind not in ("lognormal", "gamma"):
        raise InputError(f"unknown distribution {kind!r}; use lognormal, gamma or exponential")
    if isinstance(cv, bool) or not isinstance(cv, Real) or not (0 < float(cv) < math.inf):
        raise InputError(f"cv must be a finite number > 0 (got {cv!r})")
    c2 = float(cv) ** 2
    shape = (M, tau.size)

    def lognormal(rng: np.random.Generator) -> np.ndarray:
        s2 = math.log1p(c2)  # mean exp(mu + s2/2) = tau, cv^2 = exp(s2) - 1
        with np.errstate(divide="ignore"):
            mu = np.log(tau) - s2 / 2
        return np.where(tau > 0, rng.lognormal(np.where(tau > 0, mu, 0.0), math.sqrt(s2), shape), 0.0)

    def gamma(rng: np.random.Generator) -> np.ndarray:
        return rng.gamma(1.0 / c2, tau * c2, shape)  # mean k theta = tau, cv = 1/sqrt(k)

    return lognormal if kind == "lognormal" else gamma


def draw_tau(
    tau_sampler: Sampler | tuple[str, float | None] | None, tau: np.ndarray, M: int, seed: Any
) -> np.ndarray | None:
    """Stage times for one run, shape (M, S), drawn with np.random.default_rng(seed); None if none."""
    if tau_sampler is None:
        return None
    if isinstance(tau_sampler, Sequence) and not isinstance(tau_sampler, str) and len(tau_sampler) == 2:
        tau_sampler = named_sampler(tau_sampler[0], tau_sampler[1], tau, M)
    if not callable(tau_sampler):
        raise InputError(f"tau_sampler must be a callable or (name, cv) (got {tau_sampler!r})")
    try:
        rng = np.random.default_rng(seed)
    except (TypeError, ValueError) as exc:
        raise InputError(f"seed must be an integer or None (got {seed!r})") from exc
    p = np.asarray(tau_sampler(rng), dtype=float)
    if p.shape != (M, tau.size):
        raise InputError(f"tau_sampler must return shape (M, S) = {(M, tau.size)} (got {p.shape})")
    bad = ~np.isfinite(p) | (p < 0)
    if bad.any():
        raise InputError(f"tau_sampler returned a negative or non-finite time (got {float(p[bad][0])!r})")
    return p
