"""The answer `partition plan` gives with no --objective (and `partitioner.plan(objective=None)`).

    >>> from partitioner.planning.answer import default_answer
    >>> a = default_answer(model, cluster)
    >>> a.choice.line(), a.result.serving_totals() if hasattr(a.result, "replicas") else a.result.serving

A decode workload gets the serving answer (partitioner.planning.objective): on one machine the
serve search of `partition plan --objective serve` (partitioner.api.serve_plan); on several, the
best of one pipeline and the per-kind separate pipelines, each replica with its own split, batch
and in-flight count (partitioner.planning.serving), with what one machine's loss costs
(`failure`) and the paper's least-τ_max plan beside it (`paper`). Other workloads get `balanced`.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

from partitioner.planning.objective import Choice, default_objective
from partitioner.planning.serving import Failure, Ruled, Values, failure, launchable, layouts

__all__ = ["Answer", "default_answer", "serve_answer", "machines"]


@dataclass(frozen=True)
class Answer:
    """The plan (a Plan or a Deployment), why its objective ran, the paper's plan, the failure block."""

    result: Any
    choice: Choice
    paper: Any = None  # the least-τ_max plan (`balanced`) when the answer is the serve one, else None
    failure: Failure | None = None
    tpot_limit_s: float | None = None  # --tpot-ms in seconds (the paper's plan may exceed it)


def machines(cluster: Any) -> int:
    return len({d.node for d in cluster.devices})


def default_answer(model: Any, cluster: Any, *, objective: str | None = None, M: int = 8, regime: str = "async",
                   solver: str = "auto", order: str | None = None, time_limit_s: float | None = None,
                   tpot_ms: float | None = None, ttft_ms: float | None = None, max_batch: int | None = None,
                   engine: str | None = None, tp: str | None = None, max_machines: int | None = None) -> Answer:
    """The objective of the workload (or `objective`), planned; module doc."""
    from partitioner.errors import PartitionerError
    from partitioner.planning.pipeline import build_problem, launch_engine, solve_problem

    choice = default_objective(model, objective)
    launch = launch_engine(model, cluster, engine)
    if choice.objective != "serve":
        problem = build_problem(model, cluster, M=M, regime=regime, objective=choice.objective, order=order,
                                time_limit_s=time_limit_s, engine=engine)
        return Answer(solve_problem(problem, solver, engine=launch, cluster=cluster), choice)
    result, fail = serve_answer(model, cluster, regime=regime, solver=solver, order=order, time_limit_s=time_limit_s,
                                tpot_ms=tpot_ms, ttft_ms=ttft_ms, max_batch=max_batch, engine=engine, tp=tp,
                                max_machines=max_machines)
    paper: Any = None
    try:
        problem = build_problem(model, cluster, M=M, regime=regime, objective="balanced", order=order,
                                time_limit_s=time_limit_s, engine=engine)
        paper = solve_problem(problem, solver, engine=launch, cluster=cluster)
    except PartitionerError as exc:  # the comparison line only; the answer stands without it
        paper = str(exc)
    return Answer(result, choice, paper, fail, None if tpot_ms is None else tpot_ms / 1e3)


def serve_answer(model: Any, cluster: Any, *, regime: str = "async", solver: str = "auto", order: str | None = None,
                 time_limit_s: float | None = None, tpot_ms: float | None = None, ttft_ms: float | None = None,
                 max_batch: int | None = None, engine: str | None = None, tp: str | None = None,
                 max_machines: int | None = None) -> tuple[Any, Failure | None]:
    """(Plan or Deployment, failure block or None): module doc."""
    from partitioner.planning.pipeline import serve_plan
    from partitioner.planning.request import PlanRequest, parse_replicas
    from partitioner.planning.routing import kind

    if machines(cluster) == 1:
        if kind(PlanRequest(None, cluster, replicas=parse_replicas(1), tp=tp)) == "deployment":
            from partitioner.deploy.plan import plan_deployment

            return plan_deployment(model, cluster, replicas=1, tp=tp, regime=regime, objective="serve", solver=solver,
                                   order=order, time_limit_s=time_limit_s, engine=engine, tpot_ms=tpot_ms,
                                   ttft_ms=ttft_ms, max_batch=max_batch), None
        return serve_plan(model, cluster, regime=regime, solver=solver, order=order, time_limit_s=time_limit_s,
                          tpot_ms=tpot_ms, ttft_ms=ttft_ms, max_batch=max_batch, engine=engine), None
    return _several(model, cluster, regime=regime, solver=solver, order=order, tpot_ms=tpot_ms, ttft_ms=ttft_ms,
                    max_batch=max_batch, engine=engine, tp=tp, max_machines=max_machines, time_limit_s=time_limit_s)


def _several(model: Any, cluster: Any, *, regime: str, solver: str, order: str | None, tpot_ms: float | None,
             ttft_ms: float | None, max_batch: int | None, engine: str | None, tp: str | None,
             max_machines: int | None, time_limit_s: float | None = None) -> tuple[Any, Failure | None]:
    """Several machines: the best layout of partitioner.planning.serving, its replicas placed."""
    from partitioner.costs import build_tables
    from partitioner.costs.tables import select_engine
    from partitioner.deploy.deployment import UNIFORM_TP_ENGINES, Deployment
    from partitioner.deploy.kinds import node_kinds
    from partitioner.deploy.plan import _launch, _only_usable, _unsupported
    from partitioner.deploy.replica_result import _place
    from partitioner.deploy.serve import seconds_left, serve_planner
    from partitioner.errors import InfeasibleError
    from partitioner.planning.pipeline import launch_engine
    from partitioner.planning.serve_limits import serve_limits

    tp = tp or ("auto" if getattr(cluster, "tp", None) is not None else "off")
    if tp == "auto" and select_engine(model, cluster, engine).id in UNIFORM_TP_ENGINES:
        tp = "uniform"
    order_ = order or str(getattr(cluster, "order", "free"))
    deadline = None if time_limit_s is None else time.monotonic() + time_limit_s
    limits, batches = serve_limits(model, tpot_ms, ttft_ms, max_batch)
    launch_id = launch_engine(model, cluster, engine)
    launch = _launch(launch_id, solver, order_, cluster)

    def inputs(rule: Any) -> Any:  # the planner of serve_inputs, without its bound (never used here)
        return serve_planner(model, cluster, tp=tp, engine=engine, regime=regime, order=order_, solver=solver,
                             limits=limits, batches=batches, launch=rule, left=seconds_left(deadline))

    base = build_tables(model.with_batch(1, 1), cluster, engine=engine)
    need = float((base.memory_gb if base.weight_gb is None else base.weight_gb).sum())
    notes: list[str] = []
    dropped = _unsupported(launch_id, base, notes)  # GPUs the launch engine cannot run, as plan_deployment
    planner = _only_usable(inputs(None), dropped, launch_id)
    ruled = None if launch is None else Ruled(lambda: _only_usable(inputs(launch), dropped, launch_id),
                                              lambda plan: launchable(plan, launch.engine, base, cluster))

    def fits(devices: list[int]) -> bool:
        kept = [g for g in devices if g not in dropped]
        return bool(kept) and float(base.capacity_gb[kept].sum()) * (1 + 1e-9) >= need

    nk = node_kinds(cluster)
    values = Values(nk, planner, fits, lambda g: str(cluster.devices[g].node), ruled)
    try:
        cands = layouts(nk.counts, values, max_machines)
    except InfeasibleError as exc:  # say what the model needs at the workload's batch, and the nearest fix
        from partitioner.problem import explain_infeasible

        raise InfeasibleError(f"{exc}: {explain_infeasible(build_tables(model, cluster, engine=engine))}") from None
    layout = max(cands, key=lambda c: (c.tokens_per_s, -len(c.vectors)))
    plans = [_place(nk, list(layout.vectors), k, values.memo, planner, cluster) for k in range(len(layout.vectors))]
    values.deadline = deadline  # the answer's own layouts are all planned; the failure block only in time
    fail: Failure | None = failure(nk.counts, layout, values, max_machines)
    if values.skipped:  # a loss valued 0 only because the time limit ran out: no block rather than a wrong one
        fail = None
        notes.append("the time limit ran out before the failure block (one machine lost) was computed")
    if len(plans) == 1:
        return dataclasses.replace(plans[0], notes=(*notes, *plans[0].notes)), fail
    used = {name for p in plans for st in p.stages for name in (st.members or (st.device,))}
    return Deployment(
        replicas=tuple(plans), unused=tuple(d.name for d in cluster.devices if d.name not in used), optimal=False,
        upper_bound_tokens_per_s=float("inf"), solver="separate pipelines", subproblems=len(values.memo),
        notes=(*notes, f"{layout.family} (per-kind replicas and one pipeline compared; `--replicas auto` searches every "
               "layout)",),
    ), fail
