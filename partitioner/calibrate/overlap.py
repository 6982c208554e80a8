"""Overlap ratio rho from measured makespans (docs/theory.md §9, Cor 4, Cor 5, Errors 1 and 3).

Legend (docs/theory.md §2, §9): tau_s stage times, d_s link latencies, M micro-batches, T(M) a measured
makespan. Under the model every regime's T(M) is a line in M with intercept sum tau + sum d
(Thm 2 and Thm 3 agree at M = 1), so from n >= 2 measurements at >= 2 distinct M:

    T(M)        = b + (M-1) k                         least squares; exact with two points
    rho         = (sigma_max - k)/(sigma_max - tau_max)          (§9; undefined if sigma_max = tau_max)
    sandwich    T_async(M) <= T(M) <= T_block(M)                 (Cor 5)
    recoverable = (1 - rho)(sigma_max - tau_max)/tau_max = k/tau_max - 1   (§9; 0 if no link binds)
    rebalance   = tau_max/mean(tau) - 1      perfect balance of the same work (docs/theory.md "Left open")
    p           = max_{s: d_s > 0} 1 - (k - tau_s)/d_s           (per-transfer overlap, Errors 3)

Why rho and p differ (Errors 3). §9 defines rho *linearly*: the slope moves from sigma_max
(rho = 0) to tau_max (rho = 1) in proportion. Cor 5 describes rho as the fraction of *each*
transfer that overlaps compute; then stage s is busy tau_s + (1-p) d_s and the slope is
max(tau_max, max_s tau_s + (1-p) d_s), convex in p and below the line. Example: tau = [4, 5],
d = [2], 50 % of each transfer overlapped: stage 0 is busy 4 + 1 = 5 = tau_max, so the slope is
5.0 and §9's formula reports rho = 1.0 (the linear slope(0.5) would be 5.5). From k = 5.0 the
per-transfer reading gives only p >= 0.5: at k = tau_max no link limits the slope, so any p above
the bound fits; p is identified exactly only when k > tau_max. The two agree (rho = p) when the
bottleneck stage's own link is the only binding one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from numbers import Real
from typing import Any

import numpy as np

from partitioner.analysis.closed_forms import first_latency, makespan_async, makespan_blocking, sigma_max
from partitioner.analysis.inputs import ArrayLike, as_d, as_M, as_tau
from partitioner.analysis.overlap import (
    RhoUndefinedError,
    binding_links,
    first_binding_link,
    per_transfer_overlap,
    rho_from_measurements,
)
from partitioner.errors import InputError

__all__ = ["RTOL", "ADVICE_FLOOR", "MeasuredPoint", "OverlapFit", "fit_overlap", "advise"]

RTOL = 1e-6  # relative tolerance of the sandwich and slope-range checks (measurements are rounded)
ADVICE_FLOOR = 0.01  # headroom below 1 % of throughput is not worth working on


@dataclass(frozen=True)
class MeasuredPoint:
    """One measurement against the model: the sandwich of Cor 5 and the fitted line."""

    M: int
    T: float
    T_async: float  # Thm 2
    T_block: float  # Thm 3
    fitted: float  # b + (M-1) k
    residual: float  # T - fitted
    inside: bool  # T_async <= T <= T_block, within RTOL (Cor 5)


@dataclass(frozen=True)
class OverlapFit:
    """Everything `fit_overlap` derives from the measurements; `to_dict()` is the --json object."""

    tau: tuple[float, ...]
    d: tuple[float, ...]
    tau_max: float
    sigma_max: float
    k: float  # fitted slope, s per micro-batch
    b: float  # fitted T at M = 1
    first_latency: float  # sum tau + sum d, the model's T(1) (Thm 2/3)
    intercept_diff: float  # b - first_latency
    intercept_rel: float  # (b - first_latency)/first_latency
    r2: float | None  # None with exactly two measurements (the line is exact)
    points: tuple[MeasuredPoint, ...]
    rho: float | None  # §9, unclipped; None when sigma_max == tau_max
    rho_reason: str | None  # why rho is None
    slope_in_range: bool  # tau_max <= k <= sigma_max within RTOL, i.e. 0 <= rho <= 1
    p: float | None  # per-transfer overlap fraction, when identified (k > tau_max)
    p_min: float | None  # lower bound on p when k <= tau_max
    p_reason: str | None  # why p is None
    recoverable: float  # throughput gain from perfect overlap, fraction (§9)
    rebalance_headroom: float  # throughput gain from perfectly balanced compute, fraction
    binding_links: tuple[int, ...]  # d_s > tau_max - tau_s (Cor 4)
    first_binding_link: int | None  # argmax_{s <= S-2} tau_s (Errors 1)
    advice_kind: str  # "communication", "rebalance" or "limit"
    advice: str
    warnings: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict (tuples become lists, points become objects)."""
        out = asdict(self)
        out["tau"], out["d"] = list(self.tau), list(self.d)
        out["points"] = [asdict(p) for p in self.points]
        for key in ("binding_links", "warnings"):
            out[key] = list(out[key])
        return out


def _measurements(Ms: Sequence[int], Ts: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Validated (M, T) arrays: M integers >= 1, T finite > 0, >= 2 of them at >= 2 distinct M."""
    if len(Ms) != len(Ts):
        raise InputError(f"need as many makespans as M values (got {len(Ms)} M, {len(Ts)} T)")
    Mv = np.array([as_M(m) for m in Ms], dtype=np.int64)
    for m, t in zip(Mv, Ts, strict=False):
        if isinstance(t, bool) or not isinstance(t, Real) or not math.isfinite(t) or t <= 0:
            raise InputError(f"a makespan must be a finite number of seconds > 0 (got T={t!r} at M={m})")
    listing = ", ".join(f"M={m}" for m in Mv)
    if Mv.size < 2:
        raise InputError(f"need at least two measurements at two distinct M (got {Mv.size}: {listing or 'none'})")
    if np.unique(Mv).size < 2:
        raise InputError(f"need measurements at two distinct M (got {Mv.size}, all at M={Mv[0]})")
    return Mv, np.array(Ts, dtype=float)


def _fit_line(Mv: np.ndarray, Tv: np.ndarray) -> tuple[float, float, float | None, np.ndarray]:
    """Least squares T = b + (M-1) k: (k, b, R^2 or None for two points, fitted values)."""
    X = np.column_stack([np.ones(Mv.size), Mv - 1.0])
    (b, k), *_ = np.linalg.lstsq(X, Tv, rcond=None)
    fitted = X @ np.array([b, k])
    r2 = None
    if Mv.size > 2:
        ss_tot = float(((Tv - Tv.mean()) ** 2).sum())
        r2 = 1.0 if ss_tot == 0 else 1.0 - float(((Tv - fitted) ** 2).sum()) / ss_tot
    return float(k), float(b), r2, fitted


def _per_transfer(k: float, t: np.ndarray, dd: np.ndarray, rtol: float) -> tuple[float | None, float | None, str | None]:
    """(p, p_min, reason): p when identified (k > tau_max), else its lower bound (Errors 3)."""
    if not (dd > 0).any():
        return None, None, "no link has d_s > 0: there is no transfer to overlap"
    value, identified = per_transfer_overlap(k, t, dd, rtol)
    if identified:
        return value, None, None
    return None, value, f"k <= tau_max: no link limits the slope; any p >= {value:.6g} fits"


def _rho(Mv: np.ndarray, Tv: np.ndarray, t: np.ndarray, dd: np.ndarray) -> tuple[float | None, str | None]:
    """rho of §9 from the measurements, or (None, reason) when sigma_max == tau_max."""
    try:
        return rho_from_measurements([int(m) for m in Mv], [float(x) for x in Tv], t, dd), None
    except RhoUndefinedError:
        return None, (
            f"sigma_max = tau_max = {float(t.max()):.6g}: no link binds, T_async = T_block for every M"
        )


def _points(t: np.ndarray, dd: np.ndarray, Mv: np.ndarray, Tv: np.ndarray, fitted: np.ndarray, *,
            rtol: float) -> tuple[MeasuredPoint, ...]:
    out = []
    for m, T, f in zip(Mv, Tv, fitted, strict=False):
        lo, hi = makespan_async(t, dd, int(m)), makespan_blocking(t, dd, int(m))
        inside = lo * (1 - rtol) <= T <= hi * (1 + rtol)
        out.append(MeasuredPoint(int(m), float(T), lo, hi, float(f), float(T - f), bool(inside)))
    return tuple(out)


def _link(s: int) -> str:
    return f"{s}->{s + 1}"


def advise(recoverable: float, rebalance: float, binding: Sequence[int], first: int | None) -> tuple[str, str]:
    """(kind, text): what to work on, from the two throughput headrooms (fractions).

    Both < ADVICE_FLOOR: "limit". Overlap headroom strictly larger: "communication", naming the
    binding links (Cor 4) and the one that binds first as links slow down (Errors 1). Otherwise
    "rebalance" (design rule 1 of docs/theory.md §6: balance compute first; ties go to it).
    """
    rec, reb = max(0.0, recoverable), max(0.0, rebalance)
    if max(rec, reb) < ADVICE_FLOOR:
        return "limit", (
            f"The pipeline is at its limit: better overlap could recover {rec:.1%} of throughput and "
            f"rebalancing compute {reb:.1%} (both < {ADVICE_FLOOR:.0%})."
        )
    if rec > reb:
        names = ", ".join(_link(s) for s in binding) or "none"
        text = (
            f"Work on the communication stack (overlap sends with compute, faster links): better overlap "
            f"could recover {rec:.1%} of throughput, rebalancing compute {reb:.1%}. "
            f"Binding links (d_s > tau_max - tau_s, Cor 4): {names}."
        )
        if first is not None:
            status = "" if first in binding else " (not binding yet)"
            text += f" First to bind as links slow down (Errors 1): {_link(first)}{status}."
        return "communication", text
    return "rebalance", (
        f"Rebalance compute first (`partition plan`): perfect balance could recover {reb:.1%} of "
        f"throughput (tau_max/mean tau - 1), better overlap {rec:.1%}."
    )


def _warnings(fit: dict[str, Any], points: Sequence[MeasuredPoint]) -> tuple[str, ...]:
    out = []
    if not fit["slope_in_range"]:
        rho = "undefined" if fit["rho"] is None else f"{fit['rho']:.6g}"
        out.append(
            f"slope k = {fit['k']:.6g} s lies outside [tau_max, sigma_max] = [{fit['tau_max']:.6g}, "
            f"{fit['sigma_max']:.6g}] s (rho = {rho}): the measurements violate the model's assumptions "
            "(bounded buffers §10(ii), wrong tau or d, or noise)"
        )
    outside = [p for p in points if not p.inside]
    if outside:
        listing = ", ".join(f"M={p.M} (T={p.T:.6g}, [{p.T_async:.6g}, {p.T_block:.6g}])" for p in outside)
        out.append(f"{len(outside)} of {len(points)} measurements lie outside T_async <= T <= T_block (Cor 5): {listing}")
    return tuple(out)


def fit_overlap(
    tau: ArrayLike, d: ArrayLike | None, Ms: Sequence[int], Ts: Sequence[float], rtol: float = RTOL
) -> OverlapFit:
    """Fit T(M) = b + (M-1) k to measured makespans and derive rho, p and advice (§9, Errors 3).

    InputError on bad tau/d (wrong length, negative), M < 1, T <= 0, or fewer than two
    measurements at two distinct M. rho outside [0, 1] and points outside the sandwich are
    reported (slope_in_range, points[i].inside, warnings), not raised.
    """
    t = as_tau(tau)
    dd = as_d(d, t.size)
    Mv, Tv = _measurements(Ms, Ts)
    k, b, r2, fitted = _fit_line(Mv, Tv)
    t_max, s_max, A = float(t.max()), sigma_max(t, dd), first_latency(t, dd)
    rho, rho_reason = _rho(Mv, Tv, t, dd)
    p, p_min, p_reason = _per_transfer(k, t, dd, rtol)
    recoverable = 0.0 if rho is None else (1.0 - rho) * (s_max - t_max) / t_max
    rebalance = t_max / float(t.mean()) - 1.0
    binding, first = binding_links(t, dd), first_binding_link(t)
    kind, text = advise(recoverable, rebalance, binding, first)
    points = _points(t, dd, Mv, Tv, fitted, rtol=rtol)
    fields: dict[str, Any] = {
        "tau": tuple(float(x) for x in t), "d": tuple(float(x) for x in dd), "tau_max": t_max, "sigma_max": s_max,
        "k": k, "b": b, "first_latency": A, "intercept_diff": b - A, "intercept_rel": (b - A) / A, "r2": r2, "points": points,
        "rho": rho, "rho_reason": rho_reason, "slope_in_range": t_max * (1 - rtol) <= k <= s_max * (1 + rtol),
        "p": p, "p_min": p_min, "p_reason": p_reason, "recoverable": recoverable, "rebalance_headroom": rebalance,
        "binding_links": binding, "first_binding_link": first, "advice_kind": kind, "advice": text,
    }
    return OverlapFit(**fields, warnings=_warnings(fields, points))
