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
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from partitioner.errors import InfeasibleError, InputError

__all__ = ["search_columns", "MAX_COLUMNS", "count_vectors"]

MAX_COLUMNS = 1_000_000
ADD_PER_ROUND = 48  # columns of positive reduced cost added to the LP per pricing round
TOL = 1e-9
CLOSE_ROUNDS = 40  # integer programs over the filtered columns (each followed by the solves it asks for)
MAX_IP_COLUMNS = 50_000
IP_SECONDS = 10.0
MAX_TIGHTEN = 1500  # columns given the memory-aware bound (a fixed count keeps the search deterministic)
RESERVE = 0.04  # of the time limit, kept for the last integer program and the replicas' placing


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


class _Master:
    """The restricted LP: max Σ u_i y_i, Σ y_i x_i <= N, (Σ y_i = r)."""

    def __init__(self, N: tuple[int, ...], replicas: int | None) -> None:
        from ortools.linear_solver import pywraplp

        self.lp = pywraplp.Solver.CreateSolver("GLOP")
        inf = self.lp.infinity()
        self.rows = [self.lp.Constraint(-inf, float(n)) for n in N]
        self.count = None if replicas is None else self.lp.Constraint(float(replicas), float(replicas))
        self.obj = self.lp.Objective()
        self.obj.SetMaximization()
        self.vars: dict[int, Any] = {}

    def add(self, i: int, x: np.ndarray, u: float) -> None:
        var = self.lp.NumVar(0.0, self.lp.infinity(), "")
        for k, xk in enumerate(x):
            if xk:
                self.rows[k].SetCoefficient(var, float(xk))
        if self.count is not None:
            self.count.SetCoefficient(var, 1.0)
        self.obj.SetCoefficient(var, float(u))
        self.vars[i] = var

    def set_value(self, i: int, u: float) -> None:
        self.obj.SetCoefficient(self.vars[i], float(u))

    def solve(self) -> tuple[np.ndarray, float, dict[int, float]] | None:
        if self.lp.Solve() != 0:  # OPTIMAL
            return None
        pi = np.maximum(0.0, np.array([c.dual_value() for c in self.rows]))
        mu = 0.0 if self.count is None else float(self.count.dual_value())
        return pi, mu, {i: v.solution_value() for i, v in self.vars.items()}


def _best_linear(N: np.ndarray, m: int, coef: np.ndarray) -> float:
    """max coef·x over integer x <= N with Σx = m (greedy: the m largest coefficients)."""
    total, need = 0.0, m
    for k in np.argsort(-coef):
        take = min(int(N[k]), need)
        total += float(coef[k]) * take
        need -= take
        if need == 0:
            return total
    return -math.inf


def _tail(N: np.ndarray, c: int, pi: np.ndarray, mu: float, rates: np.ndarray, cap: Callable[[int], float]) -> float:
    """max over x <= N with Σx = m > c of min(rates·x, cap(m)) − π·x − μ, the reduced cost of a
    replica that uses m > c nodes (cap(m): bounds.ReplicaBound.tail). For each m, by LP duality on
    the min, it is at most λ·max(rates·x − π·x / λ ...) : max_x (λ·rates − π)·x + (1 − λ)·cap(m) for
    every λ in [0, 1]; the least over a grid of λ is taken (each one is a valid bound)."""
    worst = -math.inf
    for m in range(c + 1, int(N.sum()) + 1):
        cm = cap(m - 1)
        best = min(_best_linear(N, m, lam * rates - pi) + (1.0 - lam) * cm for lam in np.linspace(0.0, 1.0, 21))
        worst = max(worst, best - mu)
    return worst


def search_columns(nk: Any, value: Callable[[list[int]], Any], *, replicas: int | None, bound: Any,
                   upper_of: Callable[[Any], float], time_limit_s: float | None = None,
                   progress: Callable[..., None] | None = None, max_columns: int = MAX_COLUMNS,
                   cluster: Any = None, quick: Callable[[list[int]], Any] | None = None,
                   complete: Callable[[Any], bool] | None = None, seeds: list[tuple[int, ...]] | None = None) -> Any:
    """The deployment of the module doc: a ReplicaSearch (partitioner.deploy.replica_result). `seeds`
    (count vectors, partitioner.deploy.seeds) are solved first and enter the LP at once; the
    answer is never below their per-kind seed deployment."""
    from partitioner.deploy.replica_result import ReplicaSearch, _place
    from partitioner.deploy.seeds import seed_deployment

    start = time.perf_counter()
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

    seed_rows = [int(j) for x in seeds or () for j in np.flatnonzero(np.all(np.array(x) == X, axis=1))[:1]]
    try:
        for i in seed_rows:  # fully: homogeneous replicas are cheap, and their values are the floor
            if _late(start, time_limit_s, RESERVE):
                break
            solve(i, full=True)
            if i not in lp.vars:
                lp.add(i, X[i], u[i])
        while True:
            if _late(start, time_limit_s, RESERVE):
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
        if replicas is not None and any(t > 0 for t, _ in solved.values()):
            raise InputError(f"the cluster cannot hold {replicas} replicas of the model")
        raise InfeasibleError("no replica was solved before the search stopped" if stopped
                              else "no set of nodes can hold the model as one pipeline")
    ordered = sorted(chosen, key=lambda x: -memo[x][0])
    plans = [_place(nk, ordered, k, memo, value, cluster) for k in range(len(ordered))]
    optimal = not stopped and best_bound <= total * (1 + 1e-9) and all(getattr(p, "optimal", False) for p in plans)
    return ReplicaSearch(vectors=ordered, plans=plans, total=total, optimal=optimal,
                         upper_bound=total if optimal else max(best_bound, total), solved=len(solved),
                         wall_time_s=time.perf_counter() - start, stopped=stopped)


def _close(X: np.ndarray, u: np.ndarray, solved: dict[int, tuple[float, Any]], solve: Callable[[int], None],
           last: tuple[np.ndarray, float, float, float, int], N: tuple[int, ...], replicas: int | None,
           chosen: list[tuple[int, ...]], total: float, best_bound: float, start: float,
           time_limit_s: float | None, refine: set[int]) -> tuple[list[tuple[int, ...]], float, float, str]:
    """Close the LP gap by reduced-cost filtering: with the final duals (π, μ) and P0 = π·N + μ·r,
    a deployment holding column j is worth at most P0 + red_j + (R_max − 1)·max(0, max red), so
    one that beats the incumbent uses only columns with red_j above total − P0 − (R_max − 1)·max red
    (and no replica of more than c nodes unless the tail passes the same test). The integer
    program over those columns valued by u (CP-SAT) bounds every better deployment; the unsolved
    columns its answer uses are solved and it is run again, until its answer is all solved."""
    pi, mu, p0, tail, r_max = last
    Xf = X.astype(float)
    for _ in range(CLOSE_ROUNDS):
        if best_bound <= total * (1 + 1e-9) or _late(start, time_limit_s, RESERVE):
            break
        red = u - Xf @ pi - mu
        top = max(0.0, float(red.max()))
        thr = total - p0 - (r_max - 1) * top
        if tail > thr:
            break  # a replica of more than c nodes might be part of a better deployment
        cand = np.flatnonzero(red > thr - 1e-9 * max(1.0, total))
        if len(cand) > MAX_IP_COLUMNS:
            break
        res = _ip(X[cand], u[cand], N, replicas, start, time_limit_s)
        if res is None:
            break
        ys, ip_bound, proven = res
        best_bound = min(best_bound, max(total, ip_bound))
        used = {int(cand[j]): y for j, y in enumerate(ys) if y > 0}
        new = [i for i in used if i not in solved or i in refine]
        if not new:
            value = math.fsum(solved[i][0] * y for i, y in used.items())
            if value > total:
                chosen = [tuple(int(a) for a in X[i]) for i, y in used.items() for _ in range(y)]
                total = value
            if proven:
                best_bound = min(best_bound, max(total, math.fsum(u[i] * y for i, y in used.items())))
            break
        for i in new:
            solve(i)
        better, value = _integer(X, solved, N, replicas, start, time_limit_s)
        if value > total:
            chosen, total = better, value
    return chosen, total, best_bound, "time_limit" if _late(start, time_limit_s, RESERVE) else ""


def _late(start: float, time_limit_s: float | None, reserve: float = 0.0) -> bool:
    """Past the time limit, less `reserve` of it kept for the final integer program and placing."""
    return time_limit_s is not None and time.perf_counter() - start > time_limit_s * (1 - reserve)


def _ip(X: np.ndarray, u: np.ndarray, N: tuple[int, ...], replicas: int | None, start: float,
        time_limit_s: float | None) -> tuple[list[int], float, bool] | None:
    """max Σ u_i y_i over Σ y_i x_i <= N (Σ y_i = r) by CP-SAT with u rounded up: (y, an upper
    bound of the optimum, proven)."""
    from ortools.sat.python import cp_model

    scale = 1e6 / float(u.max())
    m = cp_model.CpModel()
    ys = [m.new_int_var(0, min(int(N[k] // x[k]) for k in range(len(N)) if x[k] > 0), "") for x in X]
    for k in range(len(N)):
        terms = [int(x[k]) * y for x, y in zip(X, ys, strict=True) if x[k]]
        if terms:
            m.add(sum(terms) <= N[k])
    if replicas is not None:
        m.add(sum(ys) == replicas)
    m.maximize(sum(math.ceil(float(ui) * scale) * y for ui, y in zip(u, ys, strict=True)))
    sat = cp_model.CpSolver()
    sat.parameters.num_workers = 1
    left = 10.0 if time_limit_s is None else time_limit_s - (time.perf_counter() - start)
    sat.parameters.max_time_in_seconds = max(0.5, min(IP_SECONDS, left))
    status = sat.solve(m)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    return [sat.value(y) for y in ys], sat.best_objective_bound / scale, status == cp_model.OPTIMAL


def _integer(X: np.ndarray, solved: dict[int, tuple[float, Any]], N: tuple[int, ...], replicas: int | None,
             start: float, time_limit_s: float | None) -> tuple[list[tuple[int, ...]], float]:
    """The best deployment over the solved columns (CP-SAT, one worker, proven for them)."""
    from ortools.sat.python import cp_model

    cols = [(i, t) for i, (t, _) in solved.items() if t > 0]
    if not cols:
        return [], 0.0
    scale = 1e6 / max(t for _, t in cols)
    m = cp_model.CpModel()
    ys = []
    for i, _ in cols:
        hi = min(int(N[k] // X[i][k]) for k in range(len(N)) if X[i][k] > 0)
        ys.append(m.new_int_var(0, hi, ""))
    for k in range(len(N)):
        m.add(sum(int(X[i][k]) * y for (i, _), y in zip(cols, ys, strict=True) if X[i][k]) <= N[k])
    if replicas is not None:
        m.add(sum(ys) == replicas)
    m.maximize(sum(round(t * scale) * y for (_, t), y in zip(cols, ys, strict=True)))
    sat = cp_model.CpSolver()
    sat.parameters.num_workers = 1
    left = 10.0 if time_limit_s is None else max(0.2, time_limit_s - (time.perf_counter() - start))
    sat.parameters.max_time_in_seconds = min(10.0, left)
    if sat.solve(m) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return [], 0.0
    chosen = [tuple(int(a) for a in X[i]) for (i, _), y in zip(cols, ys, strict=True) for _ in range(sat.value(y))]
    return chosen, math.fsum(solved[i][0] for (i, _), y in zip(cols, ys, strict=True) for _ in range(sat.value(y)))
