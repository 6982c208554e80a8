"""Free-order sigma and sum steps by decremental state-space relaxation over device classes.

The exact lattice step (`banded`) counts the devices used of every class (count vector v <= m).
Here only the classes in a set K are counted; the others may be used any number of times
(decremental state-space relaxation, Righini & Salani, "New dynamic programming algorithms for
the resource constrained elementary shortest path problem", Networks 51(3), 2008):

    state (v_K, t, j): the counts v_K of the classes in K used so far, the last device is of
    class t and its stage starts at layer j; transitions and values as in `banded`
    (docs/algorithms.md §3c): a stage [j, j') on t then the link (t, u) cut after layer j' - 1,
        max mode (sigma step):  U' = max(U, C_t(j, j') + d(t, u, j'))
        sum mode (T step):      U' = U + C_t(j, j') + d(t, u, j'),  only if C + d <= sigma_cap
    and the last stage [j, L) closes with C_t(j, L) (Thm 3: sigma = tau there).

Every real plan is a relaxed plan with the same value, so the relaxed optimum is a lower bound;
when the relaxed optimal plan uses at most m_t devices of every class it is a real plan, hence
optimal. Otherwise the most over-used class joins K and the step is repeated. K only grows (the
caller keeps it between steps), and with K = every class the relaxation is the exact lattice DP,
so the loop always ends with the exact optimum. Devices of one class are interchangeable
(`tables.classes`), so a class sequence maps to a device sequence (listed order within a class).

Cost per pass: O(L * w * N_K * T^2) time and O(L * N_K * T) memory, N_K = prod_{t in K} (m_t + 1),
w the longest stage under the caps, T the number of classes; at most T passes per step. In the
clusters this is built for only the classes that memory or speed make scarce bind (measured: the
fastest one or two), so N_K stays in the tens to hundreds while the full lattice has 10^5 points.
`Unaffordable` is raised when N_K would exceed the caller's state cap.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from partitioner.solvers.dp.tables import DPTables

__all__ = ["relaxed_stages", "relaxed_bound", "affordable", "Unaffordable", "MAX_STATES"]

INF = float(np.inf)
MAX_STATES = 30_000_000  # (L+1) * N_K * T: relaxed states one pass may hold
MAX_BLOCK = 6_000_000  # w * N_K * T^2: elements of one position's temporary


class Unaffordable(Exception):
    """The relaxation needs more counted classes than the state cap allows."""


def relaxed_stages(
    T: DPTables, classes: tuple[tuple[int, ...], ...], mode: str, tau_cap: float, sigma_cap: float, *,
    bound: float = INF, K: set[int] | None = None, check: Callable[[], None] | None = None,
    max_states: int = MAX_STATES,
) -> tuple[float, tuple[int, ...], tuple[int, ...]]:
    """Exact min of max sigma ("max") or of sum sigma ("sum") over free-order plans on `classes`
    with every tau <= tau_cap, (sum mode) every sigma <= sigma_cap and (max mode) value <= bound;
    (inf, (), ()) when none exists. `K` (updated in place) is the set of counted classes to start
    from. Raises Unaffordable when the counted lattice would exceed `max_states`."""
    K = set() if K is None else K
    m = np.array([len(c) for c in classes], dtype=np.int64)
    while True:
        if check is not None:
            check()
        value, seq, cuts = _pass(T, classes, m, sorted(K), mode, tau_cap, sigma_cap, bound, max_states)
        if not seq:
            return INF, (), ()
        over = np.bincount(np.array(seq), minlength=len(m)) - m
        if (over <= 0).all():
            return value, _devices(classes, seq), cuts
        t = int(over.argmax())
        if not affordable(T, classes, K | {t}, tau_cap, max_states):
            raise Unaffordable(f"relaxed lattice over classes {sorted(K | {t})}")
        K.add(t)


def relaxed_bound(
    T: DPTables, classes: tuple[tuple[int, ...], ...], mode: str, tau_cap: float, sigma_cap: float, *,
    bound: float = INF, K: set[int],
) -> tuple[float, tuple[int, ...], tuple[int, ...]]:
    """One relaxed pass with the classes K counted: (a lower bound on the step's optimum, and
    when its plan uses at most m_t devices of every class that plan, which is then optimal;
    else ()). Raises Unaffordable when K's lattice exceeds the state cap."""
    m = np.array([len(c) for c in classes], dtype=np.int64)
    value, seq, cuts = _pass(T, classes, m, sorted(K), mode, tau_cap, sigma_cap, bound, MAX_STATES)
    if seq and (np.bincount(np.array(seq), minlength=len(m)) <= m).all():
        return value, _devices(classes, seq), cuts
    return value, (), ()


def affordable(T: DPTables, classes: tuple[tuple[int, ...], ...], K: set[int], tau_cap: float,
               max_states: int = MAX_STATES) -> bool:
    """Whether a pass counting the classes K fits the state caps."""
    N = int(np.prod([len(classes[t]) + 1 for t in K])) if K else 1
    n = len(classes)
    w = max(T.band(c[0], tau_cap).shape[1] for c in classes)
    return (T.L + 1) * N * n <= max_states and w * N * n * n <= MAX_BLOCK


def _devices(classes: tuple[tuple[int, ...], ...], seq: list[int]) -> tuple[int, ...]:
    used = [0] * len(classes)
    out = []
    for t in seq:
        out.append(classes[t][used[t]])
        used[t] += 1
    return tuple(out)


def _delays(T: DPTables, classes: tuple[tuple[int, ...], ...]) -> np.ndarray:
    """D[t, u, j]: delay of the class link (t, u) at cut j; +inf for t = u on a one-device class."""
    n = len(classes)
    D = np.full((n, n, T.L + 1), INF)
    for t, a in enumerate(classes):
        for u, b in enumerate(classes):
            if t != u:
                D[t, u] = T.delay(a[0], b[0])
            elif len(a) >= 2:
                D[t, u] = T.delay(a[0], a[1])
    return D


def one_link(T: DPTables, classes: tuple[tuple[int, ...], ...]) -> np.ndarray | None:
    """d (L+1,): the delay of a cut at j when every allowed class pair has that same delay there
    (one node), else None."""
    D = _delays(T, classes)[:, :, 1:T.L]
    finite = np.isfinite(D)
    if T.L < 2 or not finite.any():
        return None
    d = np.where(finite, D, -INF).max(axis=(0, 1))
    if not bool(np.all(np.where(finite, D, d) == d)):
        return None
    return np.concatenate(([INF], d, [INF]))


def _pass(
    T: DPTables, classes: tuple[tuple[int, ...], ...], m: np.ndarray, K: list[int], mode: str,
    tau_cap: float, sigma_cap: float, bound: float, max_states: int,
) -> tuple[float, list[int], tuple[int, ...]]:
    """One relaxed DP with the classes K counted: (value, class sequence, cuts). S[j, t, v] is
    the state (v, t, j); the forward pass keeps values only and the plan is backtracked by
    recomputing each state's candidates."""
    n, L, J = len(classes), T.L, T.L + 1
    if not affordable(T, classes, set(K), tau_cap, max_states):
        raise Unaffordable(f"relaxed lattice over classes {K}")
    radix = [int(m[t]) + 1 for t in K]
    N = int(np.prod(radix)) if K else 1
    bands = [T.band(c[0], tau_cap) for c in classes]
    w = max(b.shape[1] for b in bands)
    stride = np.zeros(n, dtype=np.int64)
    s = 1
    for t, r in zip(reversed(K), reversed(radix), strict=True):
        stride[t] = s
        s *= r
    A = np.full((J, w, n), INF)  # A[j, k-1, t] = C_t(j-k, j) under the tau cap
    for t, b in enumerate(bands):
        A[:, : b.shape[1], t] = b
    D = np.ascontiguousarray(np.moveaxis(_delays(T, classes), 2, 0))  # D[j, t, u]
    S = np.full((J, n, N), INF)
    for t in range(n):
        S[0, t, stride[t]] = 0.0
    moves = []  # (u, where S[j, u] takes v + e_u, where the new values hold v): one more device of u
    for u in range(n):
        to, of = [slice(None)] * len(K), [slice(None)] * len(K)
        if u in K:
            to[K.index(u)], of[K.index(u)] = slice(1, None), slice(None, -1)
        moves.append((u, tuple(to), tuple(of)))
    capped = mode != "max" and sigma_cap < INF
    finite = np.isfinite(D[1:L])
    one = finite.any() and bool(np.all(np.where(finite, D[1:L], 0.0) == np.where(finite, D[1:L], 0.0).max(
        axis=(1, 2), keepdims=True)))  # one link: every allowed (t, u) has the same delay at each cut
    allowed = np.where(np.isfinite(D[1]) if L > 1 else True, 0.0, INF)  # (t, u): 0, or inf
    d = np.where(finite, D[1:L], -INF).max(axis=(1, 2)) if one else None  # d[j - 1]: that delay
    every = d is not None and not allowed.any()  # any class may follow any: one min over t
    buf = np.empty((w, n, N))
    for j in range(1, L):
        lo = max(0, j - w)
        Gs = S[lo:j][::-1]  # (k, t, N): start i = j - k, k = 1..j-lo
        stage = A[j, : j - lo]  # (k, t)
        if d is not None:  # the link does not depend on (t, u): reduce over k once per t
            dj = float(d[j - 1])
            V = buf[: j - lo]
            if mode == "max":
                np.maximum(Gs, (stage + dj)[:, :, None], out=V)
            else:
                np.add(Gs, (np.where(stage + dj <= sigma_cap, stage, INF) if capped else stage)[:, :, None], out=V)
            Z = np.minimum(V[0], V[1]) if V.shape[0] == 2 else V.min(axis=0)  # (t, N)
            if mode == "max":
                Z[bound < Z] = INF
            elif every:  # the delay after the min over t: min_t (Z_t + d) = min_t Z_t + d
                Y = (Z.min(axis=0) + dj).reshape(radix)
                Sj = S[j].reshape(n, *radix)
                for u, dst, src in moves:
                    Sj[(u, *dst)] = Y[src]
                continue
            else:
                Z += dj
            if every:
                Y = Z.min(axis=0).reshape(radix)
                Sj = S[j].reshape(n, *radix)
                for u, dst, src in moves:
                    Sj[(u, *dst)] = Y[src]
                continue
            X = Z[:, None, :] + allowed[:, :, None]  # (t, u, N)
        elif mode == "max":
            X = np.maximum(Gs[:, :, None, :], (stage[:, :, None] + D[j])[:, :, :, None]).min(axis=0)
            X[bound < X] = INF
        elif capped:
            st = np.where(stage[:, :, None] + D[j] <= sigma_cap, stage[:, :, None], INF)
            X = (Gs[:, :, None, :] + st[:, :, :, None]).min(axis=0) + D[j][:, :, None]
        else:
            X = (Gs + stage[:, :, None]).min(axis=0)[:, None, :] + D[j][:, :, None]
        Yu = X.min(axis=0).reshape(n, *radix)  # (u, counts)
        Sj = S[j].reshape(n, *radix)
        for u, dst, src in moves:  # each (v + e_u, u) has the one source (v, u)
            Sj[(u, *dst)] = Yu[(u, *src)]
    lo = max(0, L - w)
    last = A[L, : L - lo][::-1]  # (i - lo, t): the last stage [i, L)
    if mode != "max":
        last = np.where(last <= sigma_cap, last, INF)
    Gs = S[lo:L]
    F = np.maximum(Gs, last[:, :, None]) if mode == "max" else Gs + last[:, :, None]
    flat = int(F.argmin())
    value = float(F.flat[flat])
    if not np.isfinite(value):
        return INF, [], ()
    i, t, v = (int(x) for x in np.unravel_index(flat, F.shape))
    seq, cuts = [t], [L, i + lo]
    j = i + lo
    while j > 0:  # the (k, t') whose candidate attains S[j, t, v], recomputed as the pass did
        u, v = t, v - int(stride[t])
        lo = max(0, j - w)
        Gs = S[lo:j][::-1][:, :, v]  # (k, t')
        stage = A[j, : j - lo]
        if mode == "max":
            V = np.maximum(Gs, stage + D[j][:, u])
        elif capped:
            V = Gs + np.where(stage + D[j][:, u] <= sigma_cap, stage, INF) + D[j][:, u]
        else:
            V = Gs + stage + D[j][:, u]
        k, t = (int(x) for x in np.unravel_index(int(V.argmin()), V.shape))
        j -= k + 1
        seq.append(t)
        cuts.append(j)
    return value, seq[::-1], tuple(reversed(cuts))
