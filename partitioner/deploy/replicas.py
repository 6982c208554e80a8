"""Several pipelines side by side: disjoint replicas maximising the sum of their tokens/s.

Each replica is a set of whole nodes planned as one pipeline exactly as `partition plan` plans
one (over TP groups where they are enabled, partitioner.deploy.groups) and valued by its
closed-loop decode tokens/s (partitioner.serving: K·B/P at the workload's batch B and K in
flight, or its own B and K under the serve objective, partitioner.deploy.serve). Replicas get
disjoint nodes; nodes may stay unused; a lone machine may hold several replicas
(partitioner.deploy.split).

Exactness: nodes of one kind (same GPUs with the same usable memory, same allowed TP degrees)
are interchangeable when links are uniform (no `pairs:` in cluster.yaml), so a replica is a
count vector x over node kinds with value v(x) (one exact single-pipeline solve, memoised on
x), and the best deployment of n nodes is the exact recursion

    f_r(n) = max( f_r'(n),  max_{0 < x <= n, v(x) > 0}  v(x) + f_{r-1}(n - x) )

(any number of replicas for `auto`, exactly r for a fixed count; unused nodes allowed). With
`pairs:` every node is its own kind. The recursion is evaluated lazily by branch and bound
with a cheap bound per vector (no solve, partitioner.deploy.bounds: tokens/s = K·B/P with
P >= K·τ_max and P >= the round trip). Vectors whose memory cannot hold the model are skipped.
When the time limit passes or Ctrl-C is pressed, the best deployment of the replicas solved so
far is returned with the same recursion over the bounds as its upper bound, so the gap is
stated. Beyond MAX_STATES states the search is column generation with an LP bound
(partitioner.deploy.columns); beyond MAX_MASK_KINDS kinds a greedy one under the fluid bound
(partitioner.deploy.greedy). Node kinds are partitioner.deploy.kinds; the result type and the placing
of each replica on its own nodes, partitioner.deploy.replica_result.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from partitioner.deploy.bounds import MAX_MASK_KINDS
from partitioner.deploy.greedy import _greedy
from partitioner.deploy.kinds import NodeKinds
from partitioner.deploy.replica_result import ReplicaSearch, Value, _place, _Stop
from partitioner.errors import InfeasibleError, SolverError
from partitioner.solvers.budget import now

__all__ = ["search_replicas", "MAX_VECTORS"]

MAX_VECTORS = 4000
MAX_STATES = 50_000  # prod(N_k + 1): above it the recursion's states are too many; greedy instead
Progress = Callable[[int, int, float], None]  # (solved, total, best tokens/s)


#: Share of the time limit the joint KV bounds of the vectors may take (the rest solves replicas).


def search_replicas(
    nk: NodeKinds,
    value: Value,
    *,
    replicas: int | None,
    fits: Callable[[list[int]], bool],
    bound: Callable[[list[int]], float],
    fluid: Callable[[list[int]], float] | None = None,
    time_limit_s: float | None = None,
    progress: Progress | None = None,
    max_vectors: int = MAX_VECTORS,
    upper_of: Callable[[Any], float] | None = None,
    cluster: Any = None,
    quick: Callable[[list[int]], Any] | None = None,
    complete: Callable[[Any], bool] | None = None,
    seed: bool = False,
) -> ReplicaSearch:
    """The recursion of the module doc, evaluated lazily by branch and bound: v(x) is solved only
    when bound(x) + F(n - x) could beat the best so far, where bound(x) >= v(x) (cheap, no solve)
    and F is the same recursion over the bounds. Exact whenever it runs to the end. `seed`: the
    per-kind homogeneous replicas (partitioner.deploy.seeds) are solved first, and the answer is
    never below their best deployment (for `replicas="auto"`)."""
    from partitioner import interrupts
    from partitioner.deploy.seeds import kind_seeds

    start = now()
    N = nk.counts
    if time_limit_s is not None and time_limit_s <= 0:  # the command's limit ran out before the search began
        if not fits(nk.devices(N)):  # not even every node together holds the model: that is proven
            raise InfeasibleError("no set of nodes can hold the model as one pipeline")
        raise SolverError("not proven: the search stopped (time_limit) before a replica was solved; raise --time-limit")
    seeds = kind_seeds(N, lambda x: fits(nk.devices(x)) and bound(nk.devices(x)) > 0) if seed and replicas is None else []
    if math.prod(n + 1 for n in N) > MAX_STATES and hasattr(bound, "vectors") and len(N) <= MAX_MASK_KINDS:
        from partitioner.deploy.columns import search_columns

        return search_columns(nk, value, replicas=replicas, bound=bound, upper_of=upper_of or (lambda p: math.inf),
                              time_limit_s=time_limit_s, progress=progress, cluster=cluster, quick=quick,
                              complete=complete, seeds=seeds)
    cap = _cap(N, max_vectors)
    exact = cap == N
    vectors = [x for x in itertools.product(*(range(min(n, c) + 1) for n, c in zip(N, cap, strict=True)))
               if any(x) and fits(nk.devices(x))]
    joint = getattr(bound, "joint", None) if getattr(bound, "memory_aware", False) else None  # the serve bound of deploy.kvbound
    ub = {x: bound(nk.devices(x)) for x in vectors}  # cheap bounds; the memory-aware one lazily (`tight`)
    tightened: set[tuple[int, ...]] = set()

    def tight(x: tuple[int, ...]) -> float:
        """ub[x] with the memory-aware joint bound, computed only for a vector the recursion
        would otherwise solve (the bound of every vector up front took 22 s on cluster24)."""
        if x not in tightened:
            tightened.add(x)
            if joint is not None:
                ub[x] = min(ub[x], joint(nk.devices(x)))
        return ub[x]

    memo: dict[tuple[int, ...], tuple[float, Any]] = {}
    counter = [0]

    def monotone(x: tuple[int, ...], plan: Any, tps: float) -> None:
        """A replica on a subset of x's nodes never beats x's proven bound (a plan on the subset is
        a plan on x leaving nodes unused): cap every such vector's bound by it."""
        if upper_of is None or plan is None:
            return
        cap = max(tps, float(upper_of(plan)))
        if not math.isfinite(cap):
            return
        for y in [y for y, b in ub.items() if b > cap and all(a <= c for a, c in zip(y, x, strict=True))]:
            ub[y] = cap

    def v(x: tuple[int, ...]) -> float:
        if x not in memo:
            if time_limit_s is not None and now() - start > time_limit_s:
                raise _Stop("time_limit")
            mark = interrupts.count()
            try:
                plan = value(nk.devices(x))
                tps = float(plan.serving.tokens_per_s) if plan.feasible and plan.serving is not None else 0.0
            except InfeasibleError:
                plan, tps = None, 0.0
            memo[x] = (tps, plan)
            monotone(x, plan, tps)
            counter[0] += 1
            if progress is not None:
                progress(counter[0], len(vectors), max(t for t, _ in memo.values()))
            if interrupts.since(mark):  # Ctrl-C inside the replica's own search: kept, and the search stops
                raise KeyboardInterrupt
        return memo[x][0]

    if math.prod(n + 1 for n in N) > MAX_STATES:
        return _greedy(nk, N, vectors, ub=ub, v=v, memo=memo, value=value, replicas=replicas, fluid=fluid, start=start,
                       seeds=[x for x in seeds if x in ub])
    F = _recursion(N, ub.__getitem__, list(ub), replicas, None)
    stopped = ""
    try:
        for x in seeds:  # solved first: a stopped search then still holds the seed deployment
            if x in ub:
                v(x)
        total, chosen = _recursion(N, v, sorted(ub, key=lambda x: -ub[x]), replicas, F, ub=tight)(N, _r(N, replicas))
    except _Stop as stop:
        stopped = str(stop)
    except KeyboardInterrupt:
        stopped = "interrupted"
    if stopped:
        solved = [x for x, (t, _) in memo.items() if t > 0]
        total, chosen = _recursion(N, lambda x: memo[x][0], solved, replicas, None)(N, _r(N, replicas))
    if not math.isfinite(total) or not chosen:
        if replicas is not None and stopped:  # out of time is not impossibility
            raise SolverError(f"not proven: the search stopped ({stopped}) after {counter[0]} replica solves "
                              f"before it found {replicas} replicas (gap unknown); raise --time-limit")
        if replicas is not None and vectors:
            # some set holds one, none splits into N (as columns.py): one error type, whatever was solved first
            raise InfeasibleError(f"the cluster cannot hold {replicas} replicas of the model")
        if stopped:  # out of time is not impossibility; the recursion over the bounds still bounds
            err = SolverError(f"not proven: the search stopped ({stopped}) before a replica was solved; "
                              "raise --time-limit")
            err.upper_bound = max(0.0, F(N, _r(N, replicas))[0]) if exact else math.inf  # type: ignore[attr-defined]
            raise err
        raise InfeasibleError("no set of nodes can hold the model as one pipeline")
    order = sorted(chosen, key=lambda x: -memo[x][0])
    plans = [_place(nk, order, k, memo, value, cluster) for k in range(len(order))]
    optimal = exact and not stopped and all(getattr(p, "optimal", False) for p in plans)
    if upper_of is not None:  # solved vectors: their own proven upper bound where it is tighter
        final = dict(ub)
        for x, (t, p) in memo.items():
            if x in final:
                final[x] = min(ub[x], max(t, upper_of(p))) if p is not None else 0.0
        F = _recursion(N, final.__getitem__, list(final), replicas, None)
    top = F(N, _r(N, replicas))[0]
    return ReplicaSearch(
        vectors=order, plans=plans, total=total, optimal=optimal,
        upper_bound=total if optimal else max(top, total), solved=len(memo),
        wall_time_s=now() - start, stopped=stopped,
    )


def _r(N: tuple[int, ...], replicas: int | None) -> int:
    return replicas if replicas is not None else 1 << 30


Rec = Callable[[tuple[int, ...], int], tuple[float, tuple[tuple[int, ...], ...]]]


def _recursion(N: tuple[int, ...], val: Callable[[tuple[int, ...]], float], xs: list[tuple[int, ...]],
               replicas: int | None, F: Rec | None = None, *,
               ub: Callable[[tuple[int, ...]], float] | None = None) -> Rec:
    """f(n, r) = max(0 if auto, max_x val(x) + f(n - x, r - 1)); with F (an upper bound of f)
    the candidates x are pruned when bound(x) + F(n - x) cannot beat the best (xs sorted by
    bound, descending, so the loop stops at the first such x)."""
    cache: dict[tuple[tuple[int, ...], int], tuple[float, tuple[tuple[int, ...], ...]]] = {}
    X = np.array(xs, dtype=np.int64).reshape(len(xs), len(N))  # the candidates that fit n, found at once

    def f(n: tuple[int, ...], r: int) -> tuple[float, tuple[tuple[int, ...], ...]]:
        if r == 0:
            return (0.0, ())
        if replicas is None:
            r = 1 << 30  # auto: any number of replicas, so the count is not part of the state
        elif sum(n) < r:  # each replica takes a unit at least
            return (-math.inf, ())
        key = (n, r)
        if key in cache:
            return cache[key]
        best: tuple[float, tuple[tuple[int, ...], ...]] = (0.0, ()) if replicas is None else (-math.inf, ())
        for i in np.flatnonzero((np.array(n) >= X).all(axis=1)).tolist():
            x = xs[i]
            rest_n = tuple(b - a for a, b in zip(x, n, strict=True))
            if F is not None:
                top = F(rest_n, r - 1)[0]
                if (ub(x) if ub is not None else math.inf) + top <= best[0] * (1 + 1e-12):
                    continue
            vx = val(x)
            if vx <= 0:
                continue
            if F is not None and vx + F(rest_n, r - 1)[0] <= best[0] * (1 + 1e-12):
                continue
            rest = f(rest_n, r - 1)
            if vx + rest[0] > best[0] * (1 + 1e-12) + 1e-15:
                best = (vx + rest[0], (x, *rest[1]))
        cache[key] = best
        return best

    return f


def _cap(N: tuple[int, ...], max_vectors: int) -> tuple[int, ...]:
    """Per-kind caps on a replica's nodes so that prod(cap_k + 1) <= max_vectors (N if it fits)."""
    cap = list(N)
    while math.prod(c + 1 for c in cap) > max_vectors:
        k = int(np.argmax(cap))
        cap[k] = max(1, cap[k] - 1) if cap[k] > 1 else 0
        if all(c <= 1 for c in cap) and math.prod(c + 1 for c in cap) > max_vectors:
            break
    return tuple(cap)
