"""Slack, the phase transition, and the overlap ratio rho (docs/theory.md Cor 4, Cor 5, §9, Errors 1 and 3).

    slack_s      = tau_max - tau_s                       (s = 0..S-2, Cor 4)
    binding      = { s : d_s > slack_s }  <=>  sigma_s > tau_max
    transition   = sigma_max > tau_max  <=>  binding non-empty        (Cor 4)
    first binds  = argmax_{s <= S-2} tau_s       (Errors 1: the paper's rule is wrong)
    overlap gap  = (M-1)(sigma_max - tau_max) = T_block - T_async      (Cor 5)
    slope(rho)   = tau_max + (1-rho)(sigma_max - tau_max)              (Cor 5, §9)
    T_real(rho)  = T_block - rho (T_block - T_async)                   (§9)
    rho          = (sigma_max - k)/(sigma_max - tau_max), k the fitted slope of T(M)  (§9)
    slope_p(p)   = max(tau_max, max_s tau_s + (1-p) d_s)   p of EACH transfer overlaps (Errors 3)
    p(k)         = max_{s: d_s > 0} 1 - (k - tau_s)/d_s, in [0, 1]; exact iff k > tau_max (Errors 3)

Note (Errors 3): if a fraction rho of *each* transfer overlaps compute, the true slope is
max(tau_max, max_s tau_s + (1-rho) d_s), not the linear slope(rho) above; this module implements
§9's linear *definition* of rho; `partitioner.simulate` simulates the per-transfer meaning.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Real

import numpy as np

from partitioner.analysis.closed_forms import makespan_async, makespan_blocking, sigma
from partitioner.analysis.inputs import ArrayLike, as_d, as_M, as_rho, as_tau
from partitioner.errors import InputError

__all__ = [
    "RhoUndefinedError",
    "slack",
    "binding_links",
    "phase_transition",
    "first_binding_link",
    "overlap_gap",
    "effective_slope",
    "makespan_real",
    "rho_from_makespan",
    "rho_from_measurements",
    "per_transfer_slope",
    "per_transfer_overlap",
]

_REL_TOL = 1e-12  # sigma_max == tau_max within this relative tolerance: rho is undefined


class RhoUndefinedError(InputError):
    """rho cannot be recovered: T_block == T_async (sigma_max == tau_max, or M == 1)."""


def slack(tau: ArrayLike) -> tuple[float, ...]:
    """Compute slack tau_max - tau_s of each sending stage s = 0..S-2 (Cor 4, docs/theory.md)."""
    t = as_tau(tau)
    return tuple(float(x) for x in t.max() - t[:-1])


def binding_links(tau: ArrayLike, d: ArrayLike | None = None) -> tuple[int, ...]:
    """Links s with d_s > tau_max - tau_s, i.e. sigma_s > tau_max: they raise the blocking slope (Cor 4)."""
    t = as_tau(tau)
    s = sigma(t, d)
    return tuple(int(i) for i in np.flatnonzero(s[:-1] > t.max()))


def phase_transition(tau: ArrayLike, d: ArrayLike | None = None) -> bool:
    """Cor 4: the blocking slope leaves tau_max iff sigma_max > tau_max iff some link binds."""
    return len(binding_links(tau, d)) > 0


def first_binding_link(tau: ArrayLike) -> int | None:
    """The link that binds first as every d grows uniformly: argmax_{s <= S-2} tau_s (Errors 1).

    It is the sending stage with the smallest slack (position is irrelevant). Ties: the lowest
    index. None when S == 1 (no link). The paper's "stage just below the bottleneck" is wrong.
    """
    t = as_tau(tau)
    if t.size == 1:
        return None
    return int(np.argmax(t[:-1]))


def overlap_gap(tau: ArrayLike, d: ArrayLike | None = None, M: int = 1) -> float:
    """T_block - T_async = (M-1)(sigma_max - tau_max) >= 0: the most overlap can save (Cor 5)."""
    t = as_tau(tau)
    return (as_M(M) - 1) * (float(sigma(t, d).max()) - float(t.max()))


def effective_slope(tau: ArrayLike, d: ArrayLike | None = None, rho: float = 1.0) -> float:
    """Per-micro-batch slope tau_max + (1-rho)(sigma_max - tau_max) (Cor 5 / §9, linear in rho)."""
    t = as_tau(tau)
    return float(t.max()) + (1.0 - as_rho(rho)) * (float(sigma(t, d).max()) - float(t.max()))


def makespan_real(tau: ArrayLike, d: ArrayLike | None = None, M: int = 1, rho: float = 1.0) -> float:
    """rho-interpolated makespan T_real = T_block - rho (T_block - T_async) (§9 definition of rho)."""
    T_block = makespan_blocking(tau, d, M)
    return T_block - as_rho(rho) * (T_block - makespan_async(tau, d, M))


def _spread(tau: np.ndarray, d: np.ndarray) -> tuple[float, float]:
    """(sigma_max - tau_max, sigma_max); raises RhoUndefinedError when the spread is zero."""
    s_max, t_max = float(sigma(tau, d).max()), float(tau.max())
    if s_max - t_max <= _REL_TOL * s_max:
        raise RhoUndefinedError(
            f"rho is undefined when sigma_max == tau_max (both {t_max!r}): no link binds, "
            "so T_async == T_block for every M"
        )
    return s_max - t_max, s_max


def _check_time(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not np.isfinite(float(value)):
        raise InputError(f"{name} must be a finite number of seconds (got {value!r})")
    if float(value) <= 0:
        raise InputError(f"{name} must be > 0 (got {value!r})")
    return float(value)


def rho_from_makespan(T_real: float, tau: ArrayLike, d: ArrayLike | None, M: int) -> float:
    """One measurement: rho = (T_block - T_real)/(T_block - T_async) (§9 definition).

    Needs M >= 2 and sigma_max > tau_max (else RhoUndefinedError). The value is returned as is:
    outside [0, 1] means the measurement lies outside the sandwich [T_async, T_block] of Cor 5
    (e.g. bounded buffers, §10(ii)), or that tau/d are off.
    """
    t = as_tau(tau)
    dd = as_d(d, t.size)
    T = _check_time("T_real", T_real)
    if as_M(M) == 1:
        raise RhoUndefinedError("rho is undefined at M = 1: T_block == T_async (got M = 1)")
    _spread(t, dd)
    T_block = makespan_blocking(t, dd, M)
    return (T_block - T) / (T_block - makespan_async(t, dd, M))


def rho_from_measurements(
    Ms: Sequence[int], Ts: Sequence[float], tau: ArrayLike, d: ArrayLike | None
) -> float:
    """rho = (sigma_max - k)/(sigma_max - tau_max), k the least-squares slope of T over M (§9).

    The slope cancels the unknown intercept, so two points at different M pin rho down exactly
    (docs/theory.md, "Overlap ratio"); more points average out noise. Returned unclipped.
    """
    t = as_tau(tau)
    dd = as_d(d, t.size)
    if len(Ms) != len(Ts):
        raise InputError(f"need as many makespans as M values (got {len(Ms)} M, {len(Ts)} T)")
    Mv = np.array([as_M(m) for m in Ms], dtype=float)
    Tv = np.array([_check_time("T", x) for x in Ts], dtype=float)
    if np.unique(Mv).size < 2:
        raise InputError(f"need measurements at >= 2 distinct M values (got M = {list(Ms)!r})")
    spread, s_max = _spread(t, dd)
    dM = Mv - Mv.mean()
    k = float(dM @ (Tv - Tv.mean()) / (dM @ dM))
    return (s_max - k) / spread


def per_transfer_slope(tau: ArrayLike, d: ArrayLike | None = None, p: float = 1.0) -> float:
    """Slope when a fraction p of EACH transfer overlaps compute (Cor 5's meaning; Errors 3).

    Stage s is then busy tau_s + (1-p) d_s per micro-batch, so the slope is
    max(tau_max, max_s tau_s + (1-p) d_s): convex in p and <= `effective_slope` (linear, §9).
    """
    t = as_tau(tau)
    busy = t[:-1] + (1.0 - as_rho(p)) * as_d(d, t.size)
    return float(max(t.max(), busy.max(initial=0.0)))


def per_transfer_overlap(k: float, tau: ArrayLike, d: ArrayLike | None, rtol: float = 1e-9) -> tuple[float, bool]:
    """Per-transfer overlap p explaining the slope k: the inverse of `per_transfer_slope` (Errors 3).

    If k > tau_max, k = tau_s + (1-p) d_s on the limiting link and >= it on the others, so
    p = max_{s: d_s > 0} 1 - (k - tau_s)/d_s, clipped to [0, 1]: returns (p, True). If k <= tau_max
    (1 + rtol) no link limits the slope and any p >= p_min = max_s 1 - slack_s/d_s gives it:
    returns (p_min, False), a lower bound. InputError when no link has d_s > 0 (nothing overlaps).
    """
    t = as_tau(tau)
    dd = as_d(d, t.size)
    if isinstance(k, bool) or not isinstance(k, Real) or not np.isfinite(float(k)):
        raise InputError(f"the slope k must be a finite number of seconds (got {k!r})")
    live = dd > 0
    if not live.any():
        raise InputError(f"the overlap fraction needs a link with d_s > 0 (got d = {dd.tolist()!r})")
    identified = k > float(t.max()) * (1.0 + rtol)
    at = k if identified else float(t.max())
    with np.errstate(over="ignore"):  # a tiny d_s gives -inf: that link cannot limit the slope
        p = float(np.max(1.0 - (at - t[:-1][live]) / dd[live]))
    return min(1.0, max(0.0, p)), identified
