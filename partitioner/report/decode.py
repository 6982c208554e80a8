"""The report's decode comparison: the serve objective's plan beside each engine's split at the
same batch B and in-flight count K.

The plans the report optimises (balanced, throughput, makespan) are scored at the workload's
batch B and in-flight count K (model.yaml `workload:`). Decode is a closed loop (docs/theory.md §4): tokens/s =
K·B / P with P = max(K·τ_max, Στ + Σd + d_ret), and the KV cache of K·B sequences must fit beside
every stage's weights. At a small K a long pipeline's round trip binds, so the plan with the least
τ_max need not give the most tokens/s. `--objective serve` (partitioner.serving.search) chooses
the split, B and K together; here its plan is shown with the engines' own splits (even, memory,
params, speed: `partitioner.solvers.baselines`) solved on the very same problem, so each ratio
compares splits at one (B, K) and one memory budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from partitioner.report.compare import PlanRow, infeasible_row, plan_row
from partitioner.report.serving import Workload

__all__ = ["Decode", "decode_comparison"]


@dataclass(frozen=True)
class Decode:
    """The serve plan ("serve") and each baseline at its batch and in-flight count."""

    batch: int
    in_flight: int
    rows: tuple[PlanRow, ...]  # "serve" first, then the baselines in registry order
    frontier: tuple[dict[str, Any], ...]  # the serve search's tokens/s-vs-TPOT points
    gains: tuple[tuple[str, float | None], ...] = ()  # per baseline: serve tokens/s / its tokens/s (None: no fit)
    plans: tuple[Any, ...] = ()  # the Plan of each row (None: no plan), for the headline's command

    def row(self, name: str) -> PlanRow:
        return next(r for r in self.rows if r.name == name)


def _gains(rows: Sequence[PlanRow]) -> tuple[tuple[str, float | None], ...]:
    serve = rows[0].metrics
    out: list[tuple[str, float | None]] = []
    for r in rows[1:]:
        m = r.metrics
        fits = serve is not None and r.feasible and m is not None and m.tokens_per_s > 0
        out.append((r.name, serve.tokens_per_s / m.tokens_per_s if fits and serve and m else None))
    return tuple(out)


def _baseline_rows(problem: Any, Ms: Sequence[int], workload: Workload) -> tuple[list[PlanRow], list[Any]]:
    from partitioner import solvers
    from partitioner.errors import PartitionerError
    from partitioner.registry import BASELINES
    from partitioner.result import Plan

    rows: list[PlanRow] = []
    plans: list[Any] = []
    for name in BASELINES:
        try:
            plan = Plan.from_solution(problem, solvers.solve(problem, name))
        except PartitionerError as exc:
            rows.append(infeasible_row(name, "baseline", str(exc)))
            plans.append(None)
            continue
        rows.append(plan_row(name, "baseline", plan, Ms, workload))
        plans.append(plan)
    return rows, plans


def decode_comparison(model: Any, cluster: Any, *, regime: str, order: str | None, budget: Any,
                      Ms: Sequence[int], engine: str | None = None, tpot_ms: float | None = None,
                      ttft_ms: float | None = None, progress: Any = None) -> Decode:
    """Search the serve objective within `budget` (partitioner.solvers.budget.Budget: its work
    limit, deadline and Ctrl-C; it is charged with the search's work) and the TPOT/TTFT limits,
    then solve every baseline at its (B, K)."""
    from partitioner.api import serve_plan
    from partitioner.costs import build_tables
    from partitioner.problem import Problem
    from partitioner.serving.points import with_in_flight

    served = serve_plan(model, cluster, regime=regime, order=order, engine=engine, budget=budget,
                        tpot_ms=tpot_ms, ttft_ms=ttft_ms, progress=progress)
    s = served.serving
    assert s is not None  # serve_plan always scores its plan
    B, K = int(s.batch), int(s.in_flight)
    tables = with_in_flight(build_tables(model.with_batch(B, 1), cluster, engine=engine), K)
    problem = Problem(tables, M=K, regime=regime, objective="throughput",  # type: ignore[arg-type]
                      order=order or str(getattr(cluster, "order", "free")))  # type: ignore[arg-type]
    workload = Workload(batch=B)
    base_rows, base_plans = _baseline_rows(problem, Ms, workload)
    rows = [plan_row("serve", "optimal", served, Ms, workload), *base_rows]
    return Decode(B, K, tuple(rows), tuple(served.frontier), _gains(rows), (served, *base_plans))
