"""Replicas over many node kinds: column generation with a proven LP bound, CP-SAT on the columns.

When the exact recursion of partitioner.deploy.replicas has too many states (prod(N_k + 1)), the
deployment problem over count vectors x (nodes of each kind in one replica) is

    max Σ_x v(x)·y_x   s.t.  Σ_x y_x·x <= N,  y_x ∈ Z>=0   (and Σ_x y_x = r for a fixed count).

Columns are every x with 1 <= Σx <= c (c as large as MAX_COLUMNS allows), each valued by
u(x) >= v(x): once solved the replica's own upper bound (its tokens/s when proven), else the
cheap bound (partitioner.deploy.bounds); both are capped by monotonicity (a plan on x's nodes is
a plan on any y >= x, so v(x) <= v(y) <= u(y)). The LP relaxation over u is solved by column
generation (GLOP): price every column against the duals, add those with positive reduced cost;
when none is left, solve the unsolved columns the LP uses and repeat until the LP uses solved
columns only. A column is first solved quickly where the replica planner offers it (its
least-period split alone, bounded by K·w*), and solved fully when the LP still uses it. With any duals π >= 0 (μ for the count) every deployment obeys

    Σ_r v(x_r) <= π·N + μ·r + R_max · max(0, max_x (u(x) − π·x − μ))

(R_max: the most replicas that fit), the LP bound, valid whatever GLOP's tolerance; the last term
may be replaced by Σ_k N_k · max(0, max_x (u(x) − π·x − μ) / Σ_k x_k), since the replicas of a
deployment use at most Σ_k N_k nodes between them; replicas of more
than c nodes enter through the tail bound (bounds.ReplicaBound.tail) in the same max (each at most
the tail's reduced cost, beside the per-node term). The deployment
itself is the integer program over the solved columns (CP-SAT, one worker): exact for them; its
gap to the bound is reported. The time limit and Ctrl-C stop the generation and keep what is solved.
The restricted master LP and the tail's reduced cost are partitioner.deploy.pricing; the integer
program, the closing of the gap and the time reserve, partitioner.deploy.closing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from partitioner.deploy import closing
from partitioner.deploy.closing import _close, _integer
from partitioner.deploy.pricing import _Master, _tail
from partitioner.errors import InfeasibleError, SolverError
from partitioner.solvers.budget import now

__all__ = ["search_columns", "MAX_COLUMNS", "count_vectors"]

MAX_COLUMNS = 1_000_000
ADD_PER_ROUND = 48  # columns of positive reduced cost added to the LP per pricing round
TOL = 1e-9
MAX_TIGHTEN = 1500  # columns given the memory-aware bound (a fixed count keeps the search deterministic)


def count_vectors(N: tuple[int, ...], c: int) -> np.ndarray:
    """Every x <= N (componentwise) with 1 <= Σx <= c, as rows of an int array."""
    X = np.zeros((1, 0), dtype=np.int8)
    for n in N:
        parts = []
        s = X.sum(axis=1)
        for v in range(n + 1):
            keep = X[s + v <= c]
            parts.append(np.hstack([keep, np.full((len(keep), 1), v, dtype=np.int8)]))
        X = np.vstack(parts)
    return X[X.sum(axis=1) >= 1]


def _count(N: tuple[int, ...], c: int) -> int:
    """How many x <= N have Σx <= c (polynomial product, truncated at degree c)."""
    poly = np.zeros(c + 1)
    poly[0] = 1
    for n in N:
        nxt = np.zeros(c + 1)
        for v in range(min(n, c) + 1):
            nxt[v:] += poly[: c + 1 - v]
        poly = nxt
    return int(poly.sum())


def _size_cap(N: tuple[int, ...], max_columns: int) -> int:
    c = sum(N)
    while c > 1 and _count(N, c) > max_columns:
        c -= 1
    return c




def search_columns(nk: Any, value: Callable[[list[int]], Any], *, replicas: int | None, bound: Any,
                   upper_of: Callable[[Any], float], time_limit_s: float | None = None,
                   progress: Callable[..., None] | None = None, max_columns: int = MAX_COLUMNS,
                   cluster: Any = None, quick: Callable[[list[int]], Any] | None = None,
                   complete: Callable[[Any], bool] | None = None, seeds: list[tuple[int, ...]] | None = None) -> Any:
    """The deployment of the module doc: a ReplicaSearch (partitioner.deploy.replica_result). `seeds`
    (count vectors, partitioner.deploy.seeds) are solved first and enter the LP at once; the
    answer is never below their per-kind seed deployment."""
    from partitioner import interrupts
    from partitioner.deploy.replica_result import ReplicaSearch, _place
    from partitioner.deploy.seeds import seed_deployment

    start = now()
    N = tuple(nk.counts)
    Nv = np.array(N)
    c = _size_cap(N, max_columns)
    bound.prepare(nk)
    X = count_vectors(N, c)
    u = bound.vectors(X)
    X, u = X[u > 0], u[u > 0]
    Xf = X.astype(float)
    if not len(X):
        raise InfeasibleError("no set of nodes can hold the model as one pipeline")
    size = X.sum(axis=1)
    r_max = replicas if replicas is not None else int(Nv.sum()) // int(size.min())
    n_tail = min(r_max, int(Nv.sum()) // (c + 1))
    solved: dict[int, tuple[float, Any]] = {}
    memo: dict[tuple[int, ...], tuple[float, Any]] = {}
    lp = _Master(N, replicas)
    order = np.argsort(-u / size)
    for i in order[:ADD_PER_ROUND]:
        lp.add(int(i), X[i], u[i])
    best_bound, stopped = math.inf, ""
    last: tuple[np.ndarray, float, float, float, int] | None = None

    refine: set[int] = set()  # columns solved quickly that a full solve may still improve
    joint = bound.joint if getattr(bound, "memory_aware", False) else None  # the serve bound of deploy.kvbound
    tight: set[int] = set()  # columns whose u holds it

    def tighten_one(i: int) -> None:
        u[i] = min(float(u[i]), float(joint(nk.devices(tuple(int(a) for a in X[i])))))  # type: ignore[misc]
        if i in lp.vars:
            lp.set_value(i, float(u[i]))

    def solve(i: int, full: bool = False) -> None:
        mark = interrupts.count()
        x = tuple(int(a) for a in X[i])
        first = quick is not None and i not in solved and not full
        try:
            plan = (quick if first and quick is not None else value)(nk.devices(x))
            if first and complete is not None and not complete(plan):
                refine.add(i)
            else:
                refine.discard(i)
            tps = float(plan.serving.tokens_per_s) if plan.feasible and plan.serving is not None else 0.0
            up = max(tps, min(float(u[i]), upper_of(plan)))
        except InfeasibleError:
            plan, tps, up = None, 0.0, 0.0
        solved[i] = (tps, plan)
        memo[x] = (tps, plan)
        below = np.all(X[i] >= X, axis=1)
        np.minimum(u, np.where(below, up, np.inf), out=u)
        for j in lp.vars:
            if below[j]:
                lp.set_value(j, float(u[j]))
        if progress is not None:
            progress(len(solved), None, max(t for t, _ in solved.values()), best_bound)
        if interrupts.since(mark):  # Ctrl-C inside the replica's own search: its plan is kept, the search stops
            raise KeyboardInterrupt

    seed_rows = [int(j) for x in seeds or () for j in np.flatnonzero(np.all(np.array(x) == X, axis=1))[:1]]
    try:
        for i in seed_rows:  # fully: homogeneous replicas are cheap, and their values are the floor
            if closing._late(start, time_limit_s, closing.RESERVE):
                break
            solve(i, full=True)
            if i not in lp.vars:
                lp.add(i, X[i], u[i])
        while True:
            if closing._late(start, time_limit_s, closing.RESERVE):
                stopped = "time_limit"
                break
            got = lp.solve()
            if got is None:
                raise InfeasibleError(f"the cluster cannot hold {replicas} replicas of the model")
            pi, mu, y = got
            used = [i for i, yi in y.items() if yi > 1e-9 and i not in tight]
            if joint is not None and used and len(tight) < MAX_TIGHTEN:  # the LP's columns: tighter bound first
                for i in used:
                    tight.add(i)
                    tighten_one(i)
                continue
            red = u - Xf @ pi - mu
            top = float(red.max())
            top = max(0.0, top)
            tail = _tail(Nv, c, pi, mu, bound.rates, bound.tail) if n_tail else -math.inf
            per_node = max(0.0, float((red / size).max())) * float(Nv.sum())  # Σ_r red(x_r) <= Σ_r |x_r| · max red/|x|
            best_bound = min(best_bound, float(Nv @ pi) + mu * (replicas or 0)
                             + min(r_max * top + n_tail * max(0.0, tail - top), per_node + n_tail * max(0.0, tail)))
            head = np.argpartition(-red, min(ADD_PER_ROUND, len(red) - 1))[:ADD_PER_ROUND]
            fresh = [int(i) for i in head if red[i] > TOL * max(1.0, u[i]) and int(i) not in lp.vars]
            if fresh:
                for i in fresh:
                    lp.add(i, X[i], u[i])
                continue
            todo = [i for i, yi in y.items() if yi > 1e-9 and (i not in solved or i in refine)]
            if not todo:
                last = (pi, mu, float(Nv @ pi) + mu * (replicas or 0), tail, r_max)
                break
            for i in sorted(todo, key=lambda i: -y[i] * u[i]):
                solve(i)
    except KeyboardInterrupt:
        stopped = "interrupted"
    chosen, total = _integer(X, solved, N, replicas, start, time_limit_s)
    if not stopped and chosen and last is not None:
        try:
            chosen, total, best_bound, stopped = _close(X, u, solved, solve, last, N, replicas, chosen, total,
                                                        best_bound, start, time_limit_s, refine)
        except KeyboardInterrupt:
            stopped = "interrupted"
    seeded = seed_deployment(N, [x for x in seeds or () if x in memo], lambda x: memo[x][0])
    if replicas is None and seeded[0] > total * (1 + 1e-12):
        chosen, total = seeded[1], seeded[0]
    if not chosen:
        if replicas is not None and stopped:  # out of time is not impossibility
            raise SolverError(f"not proven: the search stopped ({stopped}) after {len(solved)} replica solves "
                              f"before it found {replicas} replicas (gap unknown); raise --time-limit")
        if replicas is not None and any(t > 0 for t, _ in solved.values()):
            raise InfeasibleError(f"the cluster cannot hold {replicas} replicas of the model")
        if stopped:  # out of time is not impossibility; the LP bound so far still holds
            err = SolverError(f"not proven: the search stopped ({stopped}) before a replica was solved; "
                              "raise --time-limit")
            err.upper_bound = best_bound  # type: ignore[attr-defined]
            raise err
        raise InfeasibleError("no set of nodes can hold the model as one pipeline")
    ordered = sorted(chosen, key=lambda x: -memo[x][0])
    plans = [_place(nk, ordered, k, memo, value, cluster) for k in range(len(ordered))]
    optimal = not stopped and best_bound <= total * (1 + 1e-9) and all(getattr(p, "optimal", False) for p in plans)
    return ReplicaSearch(vectors=ordered, plans=plans, total=total, optimal=optimal,
                         upper_bound=total if optimal else max(best_bound, total), solved=len(solved),
                         wall_time_s=now() - start, stopped=stopped)
