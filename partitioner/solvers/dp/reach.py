"""Reachability over the count-vector lattice under a stage bound B (docs/algorithms.md §3b).

A stage of class t may hold [i, j) when C_t(i, j) <= B (memory included: C is +inf where the
layers do not fit). Because such intervals are closed under shrinking from either end (costs
and memory are non-negative), the greedy longest stage is exact:

    forward   R(0) = 0,  R(v) = max_t next_t[R(v - e_t)]   farthest cut a subset of v reaches
    backward  Q(0) = L,  Q(v) = min_t prev_t[Q(v - e_t)]   earliest start a subset of v finishes from

with next_t[j] the farthest end from j (j if none) and prev_t[j] the earliest start ending at j.
(The single whole-model stage with tied embeddings is the one interval that is not closed under
shrinking; it only ever starts at 0 with an empty prefix, where the argument still holds.)
A plan whose stages all satisfy the bound, whose prefix uses devices v and whose suffix uses
w <= m - v, has its cut j in [Q(w), R(v)]: these windows are what the sigma and sum steps
search (`banded`). Each pass costs O(|lattice| * T); `tau_plan` backtracks R into a plan.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from partitioner.solvers.dp.lattice import Lattice
from partitioner.solvers.dp.tables import DPTables, cap

__all__ = ["next_far", "prev_far", "forward", "backward", "tau_plan", "lattice_tau", "Plan"]

Plan = tuple[float, tuple[int, ...], tuple[int, ...]]


def _class_matrix(T: DPTables, lat: Lattice, t: int) -> np.ndarray:
    return T.C[int(T.cost_id[lat.classes[t][0]])]


def _per_class(
    T: DPTables, lat: Lattice, B: float, reach: Callable[[np.ndarray], np.ndarray], last: float | None = None
) -> np.ndarray:
    """reach(C_t <= B) for every class t, computed once per distinct cost row; with `last`, the
    stages that end at L are held to C_t <= last instead."""
    out = np.zeros((lat.T, T.L + 1), dtype=np.int64)
    cache: dict[int, np.ndarray] = {}
    for t in range(lat.T):
        c = int(T.cost_id[lat.classes[t][0]])
        if c not in cache:
            C = _class_matrix(T, lat, t)
            ok = C <= B
            if last is not None:
                ok[:, T.L] = C[:, T.L] <= last
            cache[c] = reach(ok)
        out[t] = cache[c]
    return out


def next_far(T: DPTables, lat: Lattice, B: float, last: float | None = None) -> np.ndarray:
    """next_t[j]: the farthest end of a stage of class t from j with C_t(j, .) <= B (j if none);
    a stage ending at L may instead meet `last` >= B (non-decreasing in j either way)."""
    cols = np.arange(T.L + 1)
    return _per_class(T, lat, B, lambda ok: np.maximum(np.where(ok, cols[None, :], -1).max(axis=1), cols), last)


def prev_far(T: DPTables, lat: Lattice, B: float, last: float | None = None) -> np.ndarray:
    """prev_t[j]: the earliest start of a stage of class t that ends at j with C_t(., j) <= B (j if
    none); at j = L the bound is `last` when given."""
    J = T.L + 1
    rows = np.arange(J)
    return _per_class(T, lat, B, lambda ok: np.minimum(np.where(ok, rows[:, None], J).min(axis=0), rows), last)


def forward(lat: Lattice, nxt: np.ndarray, L: int, early: bool = False) -> tuple[bool, np.ndarray]:
    """R over the lattice, level by level; with `early`, stops at the first level that reaches L
    (later levels stay 0). Returns (some subset reaches L, R)."""
    R = np.zeros(lat.coords.shape[0], dtype=np.int64)
    for idx in lat.levels[1:]:
        best = np.zeros(idx.size, dtype=np.int64)
        for t in range(lat.T):
            has = lat.coords[idx, t] >= 1
            prev = R[idx - lat.stride[t] * has]
            best = np.maximum(best, np.where(has, nxt[t][prev], 0))
        R[idx] = best
        if early and (best >= L).any():
            return True, R
    return bool((R >= L).any()), R


def backward(lat: Lattice, prv: np.ndarray, L: int) -> np.ndarray:
    """Q over the lattice: the earliest layer from which a subset of v's devices covers [Q, L)."""
    Q = np.full(lat.coords.shape[0], L, dtype=np.int64)
    for idx in lat.levels[1:]:
        best = np.full(idx.size, L, dtype=np.int64)
        for t in range(lat.T):
            has = lat.coords[idx, t] >= 1
            prev = Q[idx - lat.stride[t] * has]
            best = np.minimum(best, np.where(has, prv[t][prev], L))
        Q[idx] = best
    return Q


def tau_plan(T: DPTables, lat: Lattice, B: float) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """A plan whose every stage has C <= B, backtracked from R (fewest devices first); ((), ())
    when none exists. Devices of a class are taken in listed order."""
    nxt = next_far(T, lat, B)
    ok, R = forward(lat, nxt, T.L, early=True)
    if not ok:
        return (), ()
    v = int(np.flatnonzero(R >= T.L)[0])
    seq: list[int] = []
    cuts = [T.L]
    while v:
        for t in range(lat.T):
            if lat.coords[v, t] >= 1 and nxt[t][R[v - lat.stride[t]]] == R[v]:
                break
        else:  # pragma: no cover - R(v) is the max over t by construction
            raise AssertionError("reach backtrack lost its predecessor")
        u = v - int(lat.stride[t])
        if R[u] < R[v]:
            seq.append(t)
            cuts.append(int(R[u]))
        v = u
    return lat.devices(seq[::-1]), tuple(reversed(cuts))


def lattice_tau(T: DPTables, lat: Lattice) -> tuple[float, int]:
    """Minimum tau_max over free-order plans: bisection over the candidate values (every finite
    interval sum C_t(i, j)), each probe one early-exit `forward` pass; returns (tau*, probes)."""
    ids = sorted({int(T.cost_id[c[0]]) for c in lat.classes})
    cand = np.unique(np.concatenate([T.C[i][np.isfinite(T.C[i])] for i in ids]))
    # a plan is one whole-model stage, or every stage holds each of its layers alone (closed
    # under shrinking), so tau* >= min(min_t C_t(0, L), max_l min_t C_t(l, l+1)): no probe below
    J = np.arange(T.L)
    alone = float(np.min([T.C[i][J, J + 1] for i in ids], axis=0).max())
    floor = min(alone, *(float(T.C[i][0, T.L]) for i in ids))
    cand = cand[cand >= floor]
    if cand.size == 0 or not forward(lat, next_far(T, lat, cap(float(cand[-1]))), T.L, True)[0]:
        return float(np.inf), 1
    lo, hi, probes = 0, cand.size - 1, 1
    while lo < hi:
        mid = (lo + hi) // 2
        probes += 1
        if forward(lat, next_far(T, lat, cap(float(cand[mid]))), T.L, True)[0]:
            hi = mid
        else:
            lo = mid + 1
    return float(cand[lo]), probes
