"""Closed-loop decode: K micro-batches circulate through S stages (docs/theory.md "Decode").

In decode every micro-batch comes back: the tokens it samples after stage S-1 travel over a
return link d_ret (last device -> first device; a few bytes per sequence) and are the input of
its next step on stage 0. The paper's model is open: M independent micro-batches pass once.

Derivation (max-plus cycle mean of the event graph; Baccelli, Cohen, Olsder and Quadrat,
"Synchronization and Linearity", Wiley 1992, ch. 2 (timed event graphs) and ch. 3 (the
eigenvalue of an irreducible max-plus matrix is its maximum cycle mean)). Number the jobs n = r·K + m
(micro-batch m, round r) in the order the stages serve them, and let x_s(n) be the time job n
starts on stage s. With unbounded buffers and constant times the start times obey

    x_s(n)   >= x_s(n-1) + w_s                        stage s serves one job at a time
    x_{s+1}(n) >= x_s(n) + tau_s + d_s                  the job moves on (arrival at s+1)
    x_0(n)   >= x_{S-1}(n-K) + tau_{S-1} + d_ret        its previous step came back

with equality for the largest right-hand side: a max-plus linear recurrence. w_s is how long
stage s is held per job: tau_s + beta·d_s with beta = 0 (asynchronous sends), 1 (blocking: the
send occupies the stage, Thm 3's sigma) or 1 - rho (partial overlap); here the last stage's send
is the return, so its hold is tau_{S-1} + beta·d_ret. On serial links (one transfer at a time,
each occupying the link o_s <= d_s) every link adds a self loop of weight o_s.
The growth rate of such a recurrence, the time per job in steady state, is the maximum cycle
mean of its graph: the largest (weight of a circuit) / (jobs its index advances). The graph has
exactly two kinds of elementary circuits:

    - each stage's self loop (and each serial link's): weight w_s, one job;
    - the round trip x_0 -> x_1 -> ... -> x_{S-1} -> x_0: weight Σtau + Σd + d_ret, K jobs
      (forward arcs keep n, only the return arc advances it, by K).

So the time per job is max(w_max, R/K) with R = Σtau + Σd + d_ret, and one round of all K
micro-batches (the time between two tokens of one sequence: the TPOT) is

    P = max(K·w_max, R),       tokens/s = K·B / P   (B sequences per micro-batch).

Asynchronous: w_max = tau_max; blocking: w_max = sigma_max of the closed loop (sigma_{S-1}
includes d_ret). This differs from the open-loop rate 1/tau_max (Prop 1) exactly when the
round trip binds, K·w_max < R, i.e. K below the crossover K* = R/w_max; asynchronous,
K* = M* - 1 + d_ret/tau_max with the open loop's M* = 1 + (Στ + Σd)/tau_max (Prop 1): too
few micro-batches circulate to keep the bottleneck busy, and each waits for its own token.
With K above the crossover the closed loop runs at the open-loop rate and more micro-batches
only lengthen the TPOT. Bounded buffers add circuits (Dallery & Gershwin 1992) that can only
raise P; with at most K jobs in the loop a buffer of K - 1 slots or more never binds.

Prefill (TTFT): a prompt makes one pass, Thm 2 (async) or Thm 3 (blocking) at M = 1; chunked
prefill of C chunks pipelines C parts of it, the open-loop makespan at M = C.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

import numpy as np

from partitioner.analysis.closed_forms import makespan_async, makespan_blocking
from partitioner.analysis.inputs import ArrayLike, as_d, as_tau
from partitioner.errors import InputError

__all__ = [
    "BOUNDS",
    "as_in_flight",
    "as_d_ret",
    "round_trip",
    "stage_hold",
    "decode_period",
    "decode_bound",
    "decode_throughput",
    "decode_crossover",
    "prefill_ttft",
]

BOUNDS: tuple[str, ...] = ("bottleneck", "round_trip")
_SHARE = {"async": 0.0, "blocking": 1.0}


def as_in_flight(K: Any) -> int:
    """K, micro-batches in flight: an integer >= 1 (bools refused)."""
    if isinstance(K, bool) or not isinstance(K, Integral) or K < 1:
        raise InputError(f"in_flight K must be an integer >= 1 (got {K!r})")
    return int(K)


def as_d_ret(d_ret: Any) -> float:
    """The return latency d_ret in seconds: a finite number >= 0."""
    if isinstance(d_ret, bool) or not isinstance(d_ret, Real) or not (0 <= float(d_ret) < math.inf):
        raise InputError(f"d_ret must be a finite number of seconds >= 0 (got {d_ret!r})")
    return float(d_ret)


def _share(regime: str, rho: float | None) -> float:
    if regime == "partial":
        if rho is None or not 0.0 <= float(rho) <= 1.0:
            raise InputError(f"regime 'partial' needs rho in [0, 1] (got {rho!r})")
        return 1.0 - float(rho)
    if regime not in _SHARE:
        raise InputError(f"regime must be one of async, blocking, partial (got {regime!r})")
    return _SHARE[regime]


def round_trip(tau: ArrayLike, d: ArrayLike | None = None, d_ret: float = 0.0) -> float:
    """R = Σtau + Σd + d_ret: one micro-batch's own cycle from stage 0 back to stage 0."""
    t = as_tau(tau)
    return math.fsum([*t.tolist(), *as_d(d, t.size).tolist(), as_d_ret(d_ret)])


def stage_hold(
    tau: ArrayLike, d: ArrayLike | None = None, d_ret: float = 0.0, regime: str = "async",
    *, rho: float | None = None, occupancy: ArrayLike | None = None,
) -> np.ndarray:
    """w_s = tau_s + beta·d_s per stage (the last stage's send is d_ret); links' o_s appended."""
    t = as_tau(tau)
    sends = np.append(as_d(d, t.size), as_d_ret(d_ret))
    w = t + _share(regime, rho) * sends
    if occupancy is not None:
        o = np.asarray(occupancy, dtype=float)
        if o.shape != sends.shape or (~np.isfinite(o) | (o < 0) | (o > sends * (1 + 1e-12))).any():
            raise InputError(f"occupancy must be S values in [0, d_s] (d and d_ret; got {occupancy!r})")
        w = np.append(w, o)
    return w


def decode_period(
    tau: ArrayLike, d: ArrayLike | None = None, K: int = 1, d_ret: float = 0.0,
    *, regime: str = "async", rho: float | None = None, occupancy: ArrayLike | None = None,
) -> float:
    """P = max(K·w_max, Σtau + Σd + d_ret): the time of one round, the TPOT (module doc)."""
    w = stage_hold(tau, d, d_ret, regime, rho=rho, occupancy=occupancy)
    return max(as_in_flight(K) * float(w.max()), round_trip(tau, d, d_ret))


def decode_bound(
    tau: ArrayLike, d: ArrayLike | None = None, K: int = 1, d_ret: float = 0.0,
    *, regime: str = "async", rho: float | None = None, occupancy: ArrayLike | None = None,
) -> str:
    """Which term of P's max binds: "bottleneck" (K·w_max >= R, ties included) or "round_trip"."""
    w = stage_hold(tau, d, d_ret, regime, rho=rho, occupancy=occupancy)
    return "bottleneck" if as_in_flight(K) * float(w.max()) >= round_trip(tau, d, d_ret) else "round_trip"


def decode_throughput(
    tau: ArrayLike, d: ArrayLike | None = None, K: int = 1, d_ret: float = 0.0,
    *, B: int = 1, regime: str = "async", rho: float | None = None, occupancy: ArrayLike | None = None,
) -> float:
    """K·B / P tokens per second (B sequences per micro-batch, one token each per round)."""
    if isinstance(B, bool) or not isinstance(B, Integral) or B < 1:
        raise InputError(f"batch B must be an integer >= 1 (got {B!r})")
    P = decode_period(tau, d, K, d_ret, regime=regime, rho=rho, occupancy=occupancy)
    return math.inf if P == 0 else as_in_flight(K) * int(B) / P


def decode_crossover(
    tau: ArrayLike, d: ArrayLike | None = None, d_ret: float = 0.0, regime: str = "async",
    *, rho: float | None = None,
) -> float:
    """R / w_max: the K from which the bottleneck binds (P = K·w_max); inf if every w_s is 0."""
    w = float(stage_hold(tau, d, d_ret, regime, rho=rho).max())
    R = round_trip(tau, d, d_ret)
    return math.inf if w == 0 else R / w


def prefill_ttft(tau: ArrayLike, d: ArrayLike | None = None, chunks: int = 1, regime: str = "async") -> float:
    """Time to first token of one prompt: the open-loop makespan at M = chunks (Thm 2 / Thm 3).

    tau and d are the stage and link times of one chunk; chunks = 1 is the single pass
    Σtau + Σd (Thm 2 at M = 1).
    """
    if regime not in _SHARE:
        raise InputError(f"regime must be async or blocking (got {regime!r})")
    M = as_in_flight(chunks)
    return makespan_async(tau, d, M) if regime == "async" else makespan_blocking(tau, d, M)
