"""The schedule recurrence, vectorised over N configurations (docs/theory.md recurrences (1), (2)).

Legend: m micro-batch (0..M-1, in order), s stage (0..S-1), link s joins stage s to s+1.
For every (m, s), with all micro-batches ready at t = 0 and arrays over N configurations:

    A[m][s]  = 0 if s == 0 else F_send[m][s-1]            arrival at stage s
    B[m][s]  = max(A[m][s], R[m-1][s]) ; C = B + p[m][s]  compute start / end
    D[m][s]  = max(C[m][s], R[m-K_s-1][s+1])              departure (blocking after service)
    L[m][s]  = max(D[m][s], L[m-1][s] + o_s) if serial    send start (FIFO link, occupancy o_s)
               D[m][s]                       otherwise     (pure delay, docs/theory.md §2)
    F_send   = L[m][s] + d_s                               arrival at stage s+1
    R[m][s]  = D + beta (F_send - D)                       release of stage s for m+1

beta is the blocked share of each send: 0 async (recurrence 1), 1 blocking (recurrence 2),
1-rho partial overlap (Errors 3). The last stage sends nothing: D = R = C. T(M) = C[M-1][S-1].
With beta in {0, 1}, no serial links and no buffers this is exactly (1) / (2).

Bounded buffers (K_s slots in front of stage s+1; None = infinite, assumption A2) follow the
classic blocking-after-service recurrence for tandem queues, D_j(n) >= D_{j+1}(n - B_{j+1} - 1)
(Dallery & Gershwin 1992, "Manufacturing flow line systems", Queueing Systems 12, §2.3): stage
s+1 owns at most K_s + 1 micro-batches (in flight to it, waiting, or holding it), and a
micro-batch owned by s+1 is given up when s+1 releases it (R).

Closed loop (decode, partitioner.analysis.closed_loop): with `loop = Loop(K, d_ret, o_ret)` job
m is step m // K of micro-batch m % K. The last stage sends the sampled tokens back over the
return link like any other send (the same beta; FIFO with occupancy o_ret when links are
serial), and job m arrives at stage 0 when job m - K's return lands: A[m][0] = F_ret[m-K]
(0 for the first K jobs). The return link has no buffer bound: at most K jobs exist.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Trace", "Loop", "run"]


@dataclass(frozen=True, eq=False)
class Trace:
    """Engine output; arrays are (M, S, N) / (M, S-1, N), or None unless `record` was set."""

    finish_last: np.ndarray  # (M, N): C[m][S-1], the exit time of each micro-batch
    start: np.ndarray | None
    finish: np.ndarray | None
    release: np.ndarray | None
    send_start: np.ndarray | None
    send_finish: np.ndarray | None
    returned: np.ndarray | None = None  # (M, N): closed loop, arrival of job m's tokens at stage 0


@dataclass(frozen=True, eq=False)
class Loop:
    """Closed-loop decode: K jobs circulate; the return link has latency d_ret (N,), occupancy o_ret."""

    K: int
    d_ret: np.ndarray
    o_ret: np.ndarray | None = None


def _alloc(record: bool, shape: tuple[int, ...]) -> np.ndarray | None:
    return np.empty(shape) if record else None


def _send(
    m: int,
    s: int,
    c: np.ndarray,
    *,
    d: np.ndarray,
    occupancy: np.ndarray | None,
    link_free: np.ndarray,
    beta: float,
    k: int | None,
    release: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(D, L, F_send, R) of micro-batch m leaving stage s after compute end c (module legend)."""
    dep = c
    if k is not None and m - k - 1 >= 0:
        dep = np.maximum(c, release[m - k - 1, s + 1])  # type: ignore[index]
    ls = dep
    if occupancy is not None:
        ls = np.maximum(dep, link_free[s])
        link_free[s] = ls + occupancy[s]
    arrival = ls + d[s]
    rel = dep if beta == 0 else arrival if beta == 1 else dep + beta * (arrival - dep)
    return dep, ls, arrival, rel


def run(
    p: np.ndarray,
    d: np.ndarray,
    occupancy: np.ndarray | None,
    beta: float,
    buffers: tuple[int | None, ...] | None,
    *,
    record: bool = False,
    loop: Loop | None = None,
) -> Trace:
    """Runs the recurrence. p (M, S, N) stage times; d, occupancy (S-1, N); beta in [0, 1].

    occupancy None: links are pure delays; else each link is FIFO and busy o_s per transfer.
    buffers None: infinite; else S-1 capacities (None entries = infinite).
    loop None: open (the paper's model); else closed-loop decode (module legend).
    """
    M, S, N = p.shape
    caps = buffers if buffers is not None else (None,) * (S - 1)
    release = np.empty((M, S, N)) if record or any(k is not None for k in caps) else None
    start, finish = _alloc(record, (M, S, N)), _alloc(record, (M, S, N))
    send_start, send_finish = _alloc(record, (M, S - 1, N)), _alloc(record, (M, S - 1, N))
    finish_last = np.empty((M, N))
    free = np.zeros((S, N))  # R[m-1][s]
    link_free = np.zeros((max(S - 1, 0), N))  # L[m-1][s] + o_s
    returned = np.empty((M, N)) if loop is not None else None
    ret_free = np.zeros(N)
    for m in range(M):
        arrival = np.zeros(N)
        if loop is not None and m >= loop.K:
            arrival = returned[m - loop.K]  # type: ignore[index]
        for s in range(S):
            b = np.maximum(arrival, free[s])
            c = rel = b + p[m, s]
            if s < S - 1:
                _, ls, arrival, rel = _send(m, s, c, d=d, occupancy=occupancy, link_free=link_free, beta=beta,
                                            k=caps[s], release=release)
                if record:
                    send_start[m, s], send_finish[m, s] = ls, arrival  # type: ignore[index]
            elif loop is not None:
                rel, ret_free = _return(c, loop, ret_free=ret_free, beta=beta, returned=returned, m=m)  # type: ignore[arg-type]
            free[s] = rel
            if release is not None:
                release[m, s] = rel
            if record:
                start[m, s], finish[m, s] = b, c  # type: ignore[index]
        finish_last[m] = c
    return Trace(finish_last, start, finish, release, send_start, send_finish, returned)


def _return(
    c: np.ndarray, loop: Loop, *, ret_free: np.ndarray, beta: float, returned: np.ndarray, m: int
) -> tuple[np.ndarray, np.ndarray]:
    """Closed loop: job m's tokens leave the last stage at c; (release of the last stage, link free)."""
    ls = c if loop.o_ret is None else np.maximum(c, ret_free)
    free = ret_free if loop.o_ret is None else ls + loop.o_ret
    returned[m] = ls + loop.d_ret
    rel = c if beta == 0 else returned[m] if beta == 1 else c + beta * (returned[m] - c)
    return rel, free
