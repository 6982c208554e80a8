"""The greedy replica search: many node kinds, beyond the exact recursion and column generation.

When the exact recursion has more than MAX_STATES states and column generation cannot run (more
than MAX_MASK_KINDS kinds, or a bound without a count-vector form; partitioner.deploy.replicas,
bounds), replicas are taken one at a time by their tokens/s per GPU, then by tokens/s, the better
of the two kept, and never below the per-kind seed deployment (partitioner.deploy.seeds). Not
proven: the upper bound is the fluid bound of the whole cluster, B·Σ_g r_g / L_dec
(partitioner.deploy.bounds, additive over disjoint replicas).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from partitioner.deploy.kinds import NodeKinds
from partitioner.deploy.replica_result import ReplicaSearch, Value, _place, _Stop
from partitioner.errors import InfeasibleError, SolverError
from partitioner.solvers.budget import now

GREEDY_WIDTH = 12


def _greedy(nk: NodeKinds, N: tuple[int, ...], vectors: list[tuple[int, ...]], *, ub: dict[tuple[int, ...], float],
            v: Callable[[tuple[int, ...]], float], memo: dict[tuple[int, ...], tuple[float, Any]], value: Value,
            replicas: int | None, fluid: Callable[[list[int]], float] | None, start: float,
            seeds: list[tuple[int, ...]] | None = None) -> ReplicaSearch:
    """Too many node kinds for the exact recursion: take replicas one at a time, each the best
    tokens/s per GPU among the GREEDY_WIDTH vectors of highest bound per GPU that still fit, until
    none is left (or `replicas` are placed); again by tokens/s itself; keep the better. Not proven; the upper bound is the fluid bound of
    the whole cluster (B·Σ_g r_g / L_dec, additive over replicas)."""
    gpus = {x: len(nk.devices(x)) for x in vectors}
    stopped = ""
    best: list[tuple[int, ...]] = []

    partial: list[tuple[int, ...]] = []

    def run(per_gpu: bool) -> list[tuple[int, ...]]:
        n, out = N, partial
        out.clear()
        while replicas is None or len(out) < replicas:
            fit = [x for x in vectors if ub[x] > 0 and all(a <= b for a, b in zip(x, n, strict=True))]
            fit.sort(key=lambda x: -ub[x] / (gpus[x] if per_gpu else 1))
            scored = [(v(x) / (gpus[x] if per_gpu else 1), x) for x in fit[:GREEDY_WIDTH]]
            scored = [sx for sx in scored if sx[0] > 0]
            if not scored:
                break
            x = max(scored)[1]
            out.append(x)
            n = tuple(b - a for a, b in zip(x, n, strict=True))
        return out

    def total_of(xs: list[tuple[int, ...]]) -> float:
        return math.fsum(memo[x][0] for x in xs)

    try:
        for x in seeds or ():  # the per-kind seed deployment (partitioner.deploy.seeds) is a candidate too
            v(x)
        for per_gpu in (True, False):  # two greedy rules: tokens/s per GPU, then tokens/s
            got = list(run(per_gpu))
            if (replicas is None or len(got) == replicas) and total_of(got) > total_of(best):
                best = got
    except _Stop as stop:
        stopped = str(stop)
    except KeyboardInterrupt:
        stopped = "interrupted"
    if stopped and total_of(partial) > total_of(best) and (replicas is None or len(partial) == replicas):
        best = list(partial)  # the interrupted rule's replicas so far
    if seeds and replicas is None:
        from partitioner.deploy.seeds import seed_deployment

        seed_total, seeded = seed_deployment(N, [x for x in seeds if x in memo], lambda x: memo[x][0])
        if seed_total > total_of(best):
            best = seeded
    chosen = best
    if stopped and (not chosen or (replicas is not None and len(chosen) < replicas)):  # out of time
        raise SolverError(f"not proven: the greedy replica search placed {len(chosen)} replicas before it stopped "
                          f"({stopped}); raise --time-limit")
    if not chosen or (replicas is not None and len(chosen) < replicas):
        raise InfeasibleError(f"the greedy replica search placed {len(chosen)} replicas"
                              + (f" before it stopped ({stopped})" if stopped else ""))
    plans = [_place(nk, chosen, k, memo, value) for k in range(len(chosen))]
    total = math.fsum(memo[x][0] for x in chosen)
    every = [g for k, nodes in enumerate(nk.kinds) for node in nodes for g in node]
    top = fluid(every) if fluid is not None else math.inf
    return ReplicaSearch(vectors=chosen, plans=plans, total=total, optimal=False, upper_bound=max(top, total),
                         solved=len(memo), wall_time_s=now() - start, stopped=stopped or "greedy")
