"""Integer time for CP-SAT: every second-valued number of the model becomes whole "ticks".

CP-SAT only reasons about integers, so `time_scale` picks one power-of-two number of ticks
per second (house rule 4: the scaling lives in one named helper) and `build_ticks` rounds
each *primitive* number once: c[g][l] and the link delay d(g, h, l) = alpha(g, h) +
b[l] / beta(g, h) of a cut after layer l (issue 4, problem.link_delay). Sums of ticks are
then exact integers, so plans whose stage times are sums of the same numbers tie exactly.

Rounding error: a stage sum of at most L rounded terms is off by at most L/2 ticks, a
sigma by (L+1)/2, T(M) by (M-1)(L+1)/2 + (L+S)/2 (Thm 2 / Thm 3 forms). `Ticks.slack`
gives these bounds; the solver treats differences within them as ties (with stages of
~2^32 ticks they are ~1e-9 of a stage time, about `problem.lex_compare`'s tolerance) and
subtracts them when it turns a CP-SAT bound back into a valid lower bound in seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from partitioner.errors import InputError
from partitioner.problem import Problem, link_delay

__all__ = ["Ticks", "time_scale", "to_ticks", "build_ticks", "plan_ticks", "STAGE_TICKS", "TOTAL_TICKS"]

STAGE_TICKS = 2.0**32  # one stage (all layers on the slowest device + worst link) in ticks
TOTAL_TICKS = 2.0**40  # the largest T(M) in ticks (see the module doc: larger broke CP-SAT)


@dataclass(frozen=True, eq=False)
class Ticks:
    """The integer tables of one problem.

    scale        ticks per second (a power of two)
    c[g, l]      compute ticks of layer l on device g
    d[g, h, l]   ticks of the link g -> h when the pipeline is cut after layer l (l < L-1)
    """

    scale: float
    c: np.ndarray
    d: np.ndarray
    M: int

    def seconds(self, ticks: float) -> float:
        """Ticks back to seconds."""
        return float(ticks) / self.scale

    def slack(self, component: str) -> int:
        """Largest rounding error (ticks) of a `tau`, `sigma` or `T` value (module doc)."""
        G, L = self.c.shape
        stage = math.ceil((L + 1) / 2) + 1
        if component in ("tau", "sigma"):
            return stage
        return (self.M - 1) * stage + math.ceil((L + min(G, L)) / 2) + 1


def time_scale(stage_seconds: float, total_seconds: float) -> float:
    """Power-of-two ticks per second: one stage <= 2^32 ticks and T(M) <= 2^40 ticks.

    CP-SAT 9.15 returned wrong optima on this model with stages of 2^48 ticks, so the
    numbers stay far below 2^53 (exact doubles) even after its presolve multiplies them.
    """
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
    d = np.zeros((G, G, max(L - 1, 0)))
    for g in range(G):
        for h in range(G):
            if g != h:
                d[g, h, :] = [link_delay(t, g, h, l) for l in range(L - 1)]
    return d


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
    scale = time_scale(stage, total)
    return Ticks(scale=scale, c=to_ticks(cost, scale), d=to_ticks(d, scale), M=int(problem.M))


def plan_ticks(ticks: Ticks, regime: str, devices: tuple[int, ...], cuts: tuple[int, ...]) -> dict[str, int]:
    """tau_max, sigma_max and T(M) of a plan in ticks, exactly as the model computes them."""
    S = len(devices)
    tau = [int(ticks.c[g, cuts[s]:cuts[s + 1]].sum()) for s, g in enumerate(devices)]
    d = [int(ticks.d[devices[s], devices[s + 1], cuts[s + 1] - 1]) for s in range(S - 1)] + [0]
    sigma = [t + x for t, x in zip(tau, d)]
    period = max(tau) if regime == "async" else max(sigma)
    return {"tau": max(tau), "sigma": max(sigma), "T": (ticks.M - 1) * period + sum(tau) + sum(d)}
