"""Pareto frontier between throughput (1 / period) and first-micro-batch latency (sum tau + sum d).

Why a sweep of M finds it (Thm 2 / Thm 3, docs/theory.md): T(M) = (sum tau + sum d) + (M - 1) * period
is a weighted sum of the two criteria, latency with weight 1 and period with weight M - 1.
A plan minimising T(M) for some M is therefore a *supported* Pareto point (a vertex of the
convex hull of the achievable (period, latency) set). Solving the `makespan` objective for
M = 1, 2, 4, ..., 4096 and keeping the non-dominated results gives these supported points;
non-supported points (inside the hull's concave dents) are not searched for.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence

from partitioner.problem import RTOL, Problem
from partitioner.report.compare import ParetoPoint
from partitioner.report.serving import Workload, serving_numbers
from partitioner.result import Plan

__all__ = ["PARETO_MS", "pareto_Ms", "sweep", "frontier", "dominates"]

PARETO_MS: tuple[int, ...] = tuple(2**k for k in range(13))  # 1, 2, 4, ..., 4096

Solve = Callable[[Problem], Plan]


def pareto_Ms(max_M: int) -> tuple[int, ...]:
    """Powers of two from 1 up to `max_M` (inclusive of `max_M` itself)."""
    out = [1]
    while out[-1] * 2 <= max_M:
        out.append(out[-1] * 2)
    if out[-1] != max_M:
        out.append(max_M)
    return tuple(out)


def _point(M: int, plan: Plan, workload: Workload) -> ParetoPoint:
    sv = serving_numbers(plan, workload)
    return ParetoPoint(
        tokens_per_s=sv.tokens_per_s,
        tpot_s=sv.tpot_s,
        M=M,
        optimal=plan.optimal,
        throughput=plan.throughput,
        first_latency=plan.first_latency,
        tau_max=plan.tau_max,
        devices=tuple(st.device for st in plan.stages),
        layers=tuple((st.start, st.end) for st in plan.stages),
    )


def sweep(problem: Problem, Ms: Sequence[int], solve: Solve, workload: Workload | None = None,
          more: Callable[[], bool] = lambda: True) -> list[ParetoPoint]:
    """argmin T(M) (objective `makespan`) for every M in `Ms`, in `problem`'s regime.

    T(M) = latency + (M - 1) period for every plan (Thm 2 / Thm 3: sum sigma = sum tau + sum d),
    linear in M, so the optimum over M is a concave lower envelope. Two consequences cut the
    solves: a plan optimal at M_a and at M_b is optimal at every M between them (a solver that
    returns another plan there returns one with the same period and latency); and between two
    different optima a and b, a third plan can win somewhere only if it wins where a and b cross,
    M_x = 1 + (lat_b - lat_a) / (period_a - period_b) (T_c - min(T_a, T_b) is convex with its
    kink at M_x). So only the Ms of the grid nearest to each crossing are solved: about 2 per
    pair of neighbouring optima instead of one per M. Unproven plans (a time limit) fall back
    to bisection and nothing between them is inferred. Each point carries its tokens/s at
    `workload` (`serving.serving_numbers`), the unit the report's chart draws. Once `more()` is
    false (the report's time limit or Ctrl-C) no further M is solved: the points so far remain.
    """
    Ms = sorted(dict.fromkeys(int(M) for M in Ms))
    plans: dict[int, Plan | None] = {}

    def at(i: int) -> Plan | None:
        if i not in plans and not more():
            return None  # not solved: nothing is inferred from it
        if i not in plans:
            plan = solve(dataclasses.replace(problem, M=Ms[i], objective="makespan"))
            plans[i] = plan if plan.feasible else None
        return plans[i]

    def fill(i: int, j: int) -> None:
        if j - i < 2:
            return
        a, b = at(i), at(j)
        exact = a is not None and b is not None and a.optimal and b.optimal
        if exact and _same(a, b):  # type: ignore[arg-type]
            for k in range(i + 1, j):
                plans[k] = a
            return
        k = _crossing(a, b, Ms, i, j) if exact else (i + j) // 2
        at(k)
        fill(i, k)
        fill(k, j)

    if Ms:
        at(0)
        at(len(Ms) - 1)
        fill(0, len(Ms) - 1)
    return [_point(Ms[i], p, workload or Workload()) for i, p in sorted(plans.items()) if p is not None]


def _crossing(a: Plan | None, b: Plan | None, Ms: Sequence[int], i: int, j: int) -> int:
    """The index in (i, j) of the grid M nearest below the crossing of T_a and T_b (else above)."""
    assert a is not None and b is not None
    dp = a.period - b.period
    Mx = 1 + (b.first_latency - a.first_latency) / dp if dp > 0 else (Ms[i] + Ms[j]) / 2
    below = [k for k in range(i + 1, j) if Ms[k] <= Mx]
    return below[-1] if below else i + 1


def _same(a: Plan, b: Plan) -> bool:
    return not (_lt(a.throughput, b.throughput) or _lt(b.throughput, a.throughput)
                or _lt(a.first_latency, b.first_latency) or _lt(b.first_latency, a.first_latency))


def _le(a: float, b: float) -> bool:
    return a <= b + RTOL * max(abs(a), abs(b))


def _lt(a: float, b: float) -> bool:
    return a < b - RTOL * max(abs(a), abs(b))


def dominates(p: ParetoPoint, q: ParetoPoint) -> bool:
    """p is at least as good on both criteria and strictly better on one (within RTOL)."""
    better_or_equal = _le(q.throughput, p.throughput) and _le(p.first_latency, q.first_latency)
    strictly = _lt(q.throughput, p.throughput) or _lt(p.first_latency, q.first_latency)
    return better_or_equal and strictly


def frontier(points: Iterable[ParetoPoint]) -> tuple[ParetoPoint, ...]:
    """Non-dominated points, one per distinct (throughput, latency), sorted by rising latency."""
    pts = list(points)
    kept: list[ParetoPoint] = []
    for p in pts:
        if any(dominates(q, p) for q in pts):
            continue
        same = any(not _lt(k.throughput, p.throughput) and not _lt(p.throughput, k.throughput)
                   and not _lt(k.first_latency, p.first_latency)
                   and not _lt(p.first_latency, k.first_latency) for k in kept)
        if not same:
            kept.append(p)
    return tuple(sorted(kept, key=lambda p: (p.first_latency, -p.throughput)))
