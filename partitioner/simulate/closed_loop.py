"""Closed-loop decode simulation: K micro-batches circulate for a number of rounds.

The same engine as `simulate` (docs/theory.md recurrences (1)/(2) and the extensions of `extended`:
serial links, bounded buffers, random stage times, partial overlap) with `engine.Loop`: after
the last stage a micro-batch's sampled tokens go back over the return link d_ret, and its next
step enters stage 0 when they land. The closed form it is checked against is
`partitioner.analysis.closed_loop.decode_period` (max-plus cycle mean).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from partitioner.analysis.closed_loop import as_d_ret, as_in_flight
from partitioner.analysis.inputs import ArrayLike, as_d, as_d_batch, as_tau, as_tau_batch
from partitioner.errors import InputError
from partitioner.simulate import engine
from partitioner.simulate.extended import Sampler, as_buffers, as_occupancy, blocked_share, draw_tau

__all__ = ["DecodeRun", "simulate_decode", "decode_period_batch"]


@dataclass(frozen=True, eq=False)
class DecodeRun:
    """K micro-batches over `rounds` rounds. Job n = r·K + m is step r of micro-batch m.

    exit[n]      time job n leaves the last stage (its token is sampled)
    returned[n]  time job n's tokens reach stage 0 again
    """

    K: int
    rounds: int
    exit: np.ndarray
    returned: np.ndarray

    def period(self, window: int | None = None) -> float:
        """Mean time of one round over the last `window` rounds (default: the last half)."""
        w = max(1, self.rounds // 2) if window is None else int(window)
        if not 1 <= w < self.rounds:
            raise InputError(f"window must be in [1, rounds) = [1, {self.rounds}) (got {window!r})")
        last = self.exit[-self.K:]
        return float((last - self.exit[-self.K * (w + 1): -self.K * w]).mean() / w)

    def tpot(self) -> np.ndarray:
        """Time between consecutive tokens of each micro-batch, shape (rounds - 1, K)."""
        e = self.exit.reshape(self.rounds, self.K)
        return np.diff(e, axis=0)


def _rounds(rounds: Any) -> int:
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 2:
        raise InputError(f"rounds must be an integer >= 2 (got {rounds!r})")
    return rounds


def simulate_decode(
    tau: ArrayLike,
    d: ArrayLike | None = None,
    K: int = 1,
    d_ret: float = 0.0,
    *,
    rounds: int = 64,
    regime: str = "async",
    serial_links: bool = False,
    link_occupancy: ArrayLike | None = None,
    return_occupancy: float | None = None,
    buffer: int | list[int | None] | None = None,
    rho: float | None = None,
    tau_sampler: Sampler | tuple[str, float | None] | None = None,
    seed: Any = None,
) -> DecodeRun:
    """Runs K micro-batches for `rounds` rounds of closed-loop decode (module doc).

    Options as `simulate`; with serial links the return link is FIFO too, each transfer
    occupying it `return_occupancy` (default d_ret).
    """
    t = as_tau(tau)
    dd = as_d(d, t.size)
    K, r, ret = as_in_flight(K), _rounds(rounds), as_d_ret(d_ret)
    beta = blocked_share(regime, rho)
    occ = as_occupancy(serial_links, link_occupancy, dd)
    o_ret = _return_occupancy(serial_links, return_occupancy, ret)
    buffers = as_buffers(buffer, t.size)
    M = K * r
    p = draw_tau(tau_sampler, t, M, seed)
    p = np.broadcast_to(t, (M, t.size)).copy() if p is None else p
    loop = engine.Loop(K, np.array([ret]), None if o_ret is None else np.array([o_ret]))
    tr = engine.run(p[:, :, None], dd[:, None], None if occ is None else occ[:, None], beta, buffers, loop=loop)
    return DecodeRun(K, r, tr.finish_last[:, 0], tr.returned[:, 0])  # type: ignore[index]


def _return_occupancy(serial_links: bool, o: float | None, d_ret: float) -> float | None:
    if not serial_links:
        if o is not None:
            raise InputError(f"return_occupancy needs serial_links=True (got {o!r})")
        return None
    if o is None:
        return d_ret
    value = as_d_ret(o)
    if value > d_ret:
        raise InputError(f"return_occupancy must be <= d_ret (got {o!r} > {d_ret!r})")
    return value


def decode_period_batch(
    tau: Any, d: Any, K: int, d_ret: Any, *, rounds: int = 64, regime: str = "async",
    rho: float | None = None, buffer: Any = None, serial_links: bool = False,
) -> np.ndarray:
    """Simulated steady-state round time of N configurations at once (deterministic times).

    Measured over the last half of the rounds; exact once the schedule is periodic (a max-plus
    system is after a finite transient: Baccelli et al. 1992, ch. 3, cyclicity).
    """
    t = as_tau_batch(tau)
    N, S = t.shape
    dd = as_d_batch(d, N, S)
    K, r = as_in_flight(K), _rounds(rounds)
    ret = np.broadcast_to(np.asarray(d_ret, dtype=float), (N,)).copy()
    if (~np.isfinite(ret) | (ret < 0)).any():
        raise InputError(f"d_ret must be finite numbers >= 0 (got {d_ret!r})")
    beta = blocked_share(regime, rho)
    loop = engine.Loop(K, ret, ret if serial_links else None)
    p = np.broadcast_to(t.T, (K * r, S, N))
    tr = engine.run(p, dd.T, dd.T if serial_links else None, beta, as_buffers(buffer, S), loop=loop)
    w = max(1, r // 2)
    e = tr.finish_last
    return (e[-K:] - e[-K * (w + 1): -K * w]).mean(axis=0) / w
