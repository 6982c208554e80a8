"""Makespans of N configurations at once: the recurrence iterated over (m, s), numpy over N.

For sweeps and the closed-form validation (benchmarks/validate_closed_forms.py). Same engine
and semantics as `simulate` (docs/theory.md recurrences (1)/(2), plus serial links, buffers and
partial overlap), deterministic stage times only. M may differ per configuration: the run goes
to max(M) and reads T(M_i) = C[M_i - 1][S-1], exact because micro-batch m depends only on
micro-batches <= m (assumptions A1, A3: no backward dependency, in-order).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from partitioner.analysis.inputs import as_d_batch, as_M_batch, as_tau_batch
from partitioner.errors import InputError
from partitioner.simulate import engine
from partitioner.simulate.extended import as_buffers, blocked_share

__all__ = ["simulate_batch"]

_CHUNK_CELLS = 4_000_000  # floats kept per chunk when buffer history is needed (~32 MB)


def _occupancy_batch(serial_links: bool, link_occupancy: Any, d: np.ndarray) -> np.ndarray | None:
    if not serial_links:
        if link_occupancy is not None:
            raise InputError(f"link_occupancy needs serial_links=True (got {link_occupancy!r})")
        return None
    if link_occupancy is None:
        return d
    o = as_d_batch(link_occupancy, d.shape[0], d.shape[1] + 1)
    if (o > d).any():
        i = tuple(int(x) for x in np.argwhere(o > d)[0])
        raise InputError(f"link_occupancy must be <= d (got {float(o[i])!r} > {float(d[i])!r} at {list(i)})")
    return o


def simulate_batch(
    tau: Any,
    d: Any = None,
    M: Any = 1,
    regime: str = "async",
    *,
    serial_links: bool = False,
    link_occupancy: Any = None,
    buffer: Any = None,
    rho: float | None = None,
) -> np.ndarray:
    """Simulated makespans T(M), shape (N,), for tau (N, S), d (N, S-1), M int or (N,)."""
    t = as_tau_batch(tau)
    N, S = t.shape
    dd = as_d_batch(d, N, S)
    Mv = as_M_batch(M, N)
    beta = blocked_share(regime, rho)
    occ = _occupancy_batch(serial_links, link_occupancy, dd)
    buffers = as_buffers(buffer, S)
    M_run = int(Mv.max())
    chunk = N if buffers is None else max(1, _CHUNK_CELLS // (M_run * S))
    out = np.empty(N)
    for lo in range(0, N, chunk):
        sl = slice(lo, lo + chunk)
        tc = t[sl].T
        p = np.broadcast_to(tc, (M_run, *tc.shape))
        tr = engine.run(p, dd[sl].T, None if occ is None else occ[sl].T, beta, buffers)
        out[sl] = tr.finish_last[Mv[sl] - 1, np.arange(tc.shape[1])]
    return out
