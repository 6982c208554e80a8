"""The one vectorised relaxation shared by every stage DP (docs/algorithms.md §3c, §3d).

A stage on device (class) t that starts at layer i with accumulated value U[i] ends at j; the
next stage starts at j. In "max" mode the value is the largest sigma so far (the sigma step,
E[j] = min_i max(U[i], C_t(i, j) + d(t, u, j))); in "sum" mode it is the sum of stage times
sigma_s = tau_s + d_s (the makespan step, g(t) = min sum subject to caps), with stages whose
sigma exceeds `sigma_cap` forbidden. Period caps on tau are already applied to C, which is
given in band form Cb[j, k-1] = C_t(j-k, j) (`DPTables.band`): memory and period caps bound
the stage length k, so the work is O(L w) rather than O(L^2).
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["relax", "relax_links", "finish", "sources", "CHUNK"]

CHUNK = 4_000_000  # elements per temporary (n x J x w) block


@functools.lru_cache(maxsize=64)
def sources(J: int, w: int) -> np.ndarray:
    """i = j - k for the band entry (j, k-1), clipped at 0 (the band is +inf there)."""
    out = np.clip(np.arange(J)[:, None] - np.arange(1, w + 1)[None, :], 0, None)
    out.flags.writeable = False
    return out


def relax(
    U: np.ndarray, Cb: np.ndarray, D: np.ndarray, mode: str, sigma_cap: float
) -> tuple[np.ndarray, np.ndarray]:
    """For start values U (n, J), banded stage costs Cb (J, w) and delays D (J,): the best value
    W (n, J) at every next start j and the start i (n, J) that achieves it (-1 where unreachable)."""
    n, J = U.shape
    w = Cb.shape[1]
    S = Cb + D[:, None]
    if mode != "max":
        S = np.where(sigma_cap >= S, Cb, np.inf)
    src = sources(J, w)
    W = np.empty((n, J))
    A = np.empty((n, J), dtype=np.int64)
    step = max(1, CHUNK // (J * w))
    for lo in range(0, n, step):
        Ug = U[lo:lo + step][:, src]
        V = np.maximum(Ug, S) if mode == "max" else Ug + S
        a = V.argmin(axis=2)
        v = V.min(axis=2)
        if mode != "max":
            v += D
        W[lo:lo + step] = v
        A[lo:lo + step] = np.where(v < np.inf, np.arange(J) - 1 - a, -1)
    return W, A


def relax_links(
    u: np.ndarray, Cb: np.ndarray, Ds: np.ndarray, mode: str, sigma_cap: float
) -> tuple[np.ndarray, np.ndarray]:
    """`relax` for one start row u (J,) through several links at once, Ds (m, J) -> W, A (m, J).
    In sum mode without a sigma cap the minimum over starts does not depend on the link, so it
    is computed once: min_i (u[i] + C(i, j)) + d(j)."""
    J, w = Cb.shape
    Ug = u[sources(J, w)]
    if mode != "max" and sigma_cap == np.inf:
        V = Ug + Cb
        a = V.argmin(axis=1)
        v = V[np.arange(J), a]
        W = v[None, :] + Ds
        return W, np.where(np.inf > W, np.arange(J) - 1 - a, -1)
    S = Cb[None, :, :] + Ds[:, :, None]
    V = np.maximum(Ug[None], S) if mode == "max" else Ug[None] + np.where(sigma_cap >= S, Cb[None], np.inf)
    a = V.argmin(axis=2)
    W = V.min(axis=2)
    if mode != "max":
        W += Ds
    return W, np.where(np.inf > W, np.arange(J) - 1 - a, -1)


def finish(U: np.ndarray, Cb: np.ndarray, mode: str, sigma_cap: float) -> tuple[np.ndarray, np.ndarray]:
    """Close the pipeline: the last stage [i, L) has sigma = tau (Thm 3). Returns the best final
    value (n,) and its start i (n,)."""
    J = U.shape[1]
    w = Cb.shape[1]
    last = Cb[-1]
    if mode != "max":
        last = np.where(last <= sigma_cap, last, np.inf)
    Ug = U[:, sources(J, w)[-1]]
    V = np.maximum(Ug, last[None, :]) if mode == "max" else Ug + last[None, :]
    a = V.argmin(axis=1)
    return V[np.arange(U.shape[0]), a], (J - 2 - a).astype(np.int64)
