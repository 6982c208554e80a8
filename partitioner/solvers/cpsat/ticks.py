"""Integer time for CP-SAT: every second-valued number of the model becomes whole "ticks".

CP-SAT only reasons about integers, so `time_scale` picks one power-of-two number of ticks
per second (house rule 4: the scaling lives in one named helper) and `build_ticks` rounds
each *primitive* number once: c[g][l] and the link delay d(g, h, l) = alpha(g, h) +
b[l] / beta(g, h) of a cut after layer l (problem.link_delay). Sums of ticks are
then exact integers, so plans whose stage times are sums of the same numbers tie exactly.

Rounding error: a stage sum of at most L rounded terms is off by at most L/2 ticks, a
sigma by (L+1)/2, T(M) by (M-1)(L+1)/2 + (L+S)/2 (Thm 2 / Thm 3 forms). `Ticks.slack`
gives these bounds; the solver treats differences within them as ties and subtracts them
when it turns a CP-SAT bound back into a valid lower bound in seconds. With one stage of up
to 2^40 ticks a tick is ~1e-12 of a stage; the T(M) range (up to 2^50 ticks) can make ticks
coarser at very large M, which is why the solver re-checks every "optimal" claim against
these exact bounds and downgrades the ones the rounding could have decided.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from partitioner.errors import InputError
from partitioner.problem import Problem

__all__ = ["Ticks", "time_scale", "to_ticks", "build_ticks", "plan_ticks", "STAGE_TICKS", "TOTAL_TICKS"]

STAGE_TICKS = 2.0**40  # one stage (all layers on the slowest device + worst link) in ticks
TOTAL_TICKS = 2.0**50  # the largest T(M) in ticks: int64 sums keep 2^13 of headroom


@dataclass(frozen=True, eq=False)
class Ticks:
    """The integer tables of one problem.

    scale        ticks per second of the tau and sigma phases (a power of two)
    c[g, l]      compute ticks of layer l on device g
    d[g, h, l]   ticks of the link g -> h when the pipeline is cut after layer l (l < L-1)
    T_scale, Tc, Td   the same for the T(M) phase, whose range may need coarser ticks
    """

    scale: float
    c: np.ndarray
    d: np.ndarray
    M: int
    T_scale: float = 0.0
    Tc: np.ndarray | None = None
    Td: np.ndarray | None = None

    @property
    def split(self) -> bool:
        """True when T(M) uses its own (coarser) ticks."""
        return self.Tc is not None and self.T_scale != self.scale

    def seconds(self, ticks: float, component: str = "tau") -> float:
        """Ticks of `component` back to seconds."""
        return float(ticks) / (self.T_scale if component == "T" and self.split else self.scale)

    def slack(self, component: str) -> int:
        """Largest rounding error (ticks) of a `tau`, `sigma` or `T` value (module doc)."""
        G, L = self.c.shape
        stage = math.ceil((L + 1) / 2) + 1
        if component in ("tau", "sigma"):
            return stage
        return (self.M - 1) * stage + math.ceil((L + min(G, L)) / 2) + 1


def time_scale(stage_seconds: float, total_seconds: float) -> float:
    """Power-of-two ticks per second: one stage <= 2^40 ticks and T(M) <= 2^50 ticks, below
    2^53 (exact doubles, which CP-SAT's LP uses) and far inside int64."""
    stage = max(stage_seconds, 1e-300)
    total = max(total_seconds, stage)
    ticks_per_s = min(STAGE_TICKS / stage, TOTAL_TICKS / total)
    return float(2.0 ** math.floor(math.log2(ticks_per_s)))


def to_ticks(seconds: np.ndarray | float, scale: float) -> np.ndarray:
    """Round seconds to the nearest whole tick (int64)."""
    return np.rint(np.asarray(seconds, dtype=float) * scale).astype(np.int64)


def _delays(problem: Problem) -> np.ndarray:
    """d(g, h, l) in seconds for every ordered pair and cut position (problem.link_delay)."""
    t, G, L = problem.tables, problem.G, problem.L
    beta = np.asarray(t.bandwidth_Bps, dtype=float)[:, :, None]
    b = np.asarray(t.cut_bytes, dtype=float)[None, None, : max(L - 1, 0)]
    with np.errstate(divide="ignore", invalid="ignore"):
        transfer = np.where(np.isinf(beta), 0.0, b / beta)
    d = np.asarray(t.latency_s, dtype=float)[:, :, None] + transfer  # problem.link_delay, vectorised
    d[np.arange(G), np.arange(G), :] = 0.0
    return np.broadcast_to(d, (G, G, max(L - 1, 0))).copy()


def build_ticks(problem: Problem) -> Ticks:
    """Scale and round c and d; raise InputError on numbers CP-SAT cannot represent."""
    cost = np.asarray(problem.tables.cost, dtype=float)
    d = _delays(problem)
    for name, arr in (("cost", cost), ("link delay", d)):
        bad = np.argwhere(~np.isfinite(arr) | (arr < 0))
        if bad.size:
            idx = tuple(int(i) for i in bad[0])
            raise InputError(f"cpsat needs finite non-negative times; {name}{list(idx)} = {float(arr[idx])!r}")
    G, L = problem.G, problem.L
    worst_d = float(d.max()) if d.size else 0.0
    stage = float(cost.sum(axis=1).max()) + worst_d
    total = (problem.M - 1) * stage + float(cost.max(axis=0).sum()) + (min(G, L) - 1) * worst_d
    scale = time_scale(stage, stage)  # tau / sigma phases: one stage fills the tick range
    T_scale = time_scale(stage, total)
    c, dd = to_ticks(cost, scale), to_ticks(d, scale)
    if T_scale == scale:
        return Ticks(scale=scale, c=c, d=dd, M=int(problem.M), T_scale=scale)
    return Ticks(scale=scale, c=c, d=dd, M=int(problem.M), T_scale=T_scale,
                 Tc=to_ticks(cost, T_scale), Td=to_ticks(d, T_scale))


def plan_ticks(ticks: Ticks, regime: str, devices: tuple[int, ...], cuts: tuple[int, ...]) -> dict[str, int]:
    """tau_max, sigma_max and T(M) of a plan in ticks, exactly as the model computes them."""
    out = _stage_ticks(ticks.c, ticks.d, ticks.M, regime, (devices, cuts))
    if ticks.split:
        assert ticks.Tc is not None and ticks.Td is not None
        out["T"] = _stage_ticks(ticks.Tc, ticks.Td, ticks.M, regime, (devices, cuts))["T"]
    return out


def _stage_ticks(
    c: np.ndarray, dt: np.ndarray, M: int, regime: str, plan: tuple[tuple[int, ...], tuple[int, ...]]
) -> dict[str, int]:
    devices, cuts = plan
    S = len(devices)
    tau = [int(c[g, cuts[s]:cuts[s + 1]].sum()) for s, g in enumerate(devices)]
    d = [int(dt[devices[s], devices[s + 1], cuts[s + 1] - 1]) for s in range(S - 1)] + [0]
    sigma = [t + x for t, x in zip(tau, d, strict=True)]
    period = max(tau) if regime == "async" else max(sigma)
    return {"tau": max(tau), "sigma": max(sigma), "T": (M - 1) * period + sum(tau) + sum(d)}
