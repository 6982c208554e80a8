"""`route(request) -> Plan | Deployment`: the one place that decides how a request is planned.

One GPU is a TP group of one, so every request is a deployment: `route` sends the degenerate one
(one replica, no TP groups: `tp` resolves to "off") to the single-pipeline solvers
(partitioner.planning.pipeline: the exact DP / CP-SAT over GPUs, or the serve search), which
answer it faster and with the engine's order rule on single GPUs, and every other one to
partitioner.deploy.plan. The TP mode is resolved here from the engine's record
(presets/engines.yaml `tensor_parallel`): an engine that takes one TP degree for every stage
("uniform": vLLM, SGLang, TensorRT-LLM) turns "auto" into "uniform" (in partitioner.deploy.plan,
which says so in the result's notes), and one that cannot run TP inside its layer split ("none":
llama.cpp) plans with "off". `api.plan` and `partition plan` both call `route`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from partitioner.deploy.deployment import Deployment
from partitioner.planning.request import PlanRequest
from partitioner.result import Plan

__all__ = ["Progress", "route", "resolve_tp", "kind"]


@dataclass(frozen=True)
class Progress:
    """Where a run reports while it searches (each None: silent)."""

    note: Callable[[str], None] | None = None  # one line on what the request's engine changes
    solve: Callable[[float, float, float], None] | None = None  # (incumbent, bound, elapsed s)
    serve: Callable[[int, float, float], None] | None = None  # (batch searched, best tokens/s, elapsed s)
    replicas: Callable[..., None] | None = None  # (solved, total, best tokens/s, bound)


def _node_sizes(cluster: Any) -> set[int]:
    return {sum(1 for d in cluster.devices if d.node == n) for n in {d.node for d in cluster.devices}}


def resolve_tp(request: PlanRequest) -> tuple[str, list[str]]:
    """The request's TP mode ("auto", "uniform", "node" or "off") and notes on what its engine changes."""
    from partitioner.models.engines import resolve_engine

    tp = request.tp or ("auto" if getattr(request.cluster, "tp", None) is not None else "off")
    if request.engine is None:
        return tp, []
    spec = resolve_engine(request.engine)
    if request.tp in (None, "auto") and spec.tensor_parallel == "none" and tp != "off":
        return "off", [f"{spec.name.split(' (')[0]} cannot run tensor parallelism inside its layer split: planning with --tp off "
                       "(one GPU per stage)"]
    if tp == "node" and spec.tensor_parallel == "uniform" and len(sizes := _node_sizes(request.cluster)) > 1:
        return tp, [f"--tp node gives machines with {'/'.join(map(str, sorted(sizes)))} GPUs different TP degrees, "
                    f"which {request.engine} cannot launch (one degree for every stage)"]
    return tp, []


def kind(request: PlanRequest) -> Literal["pipeline", "deployment"]:
    """"pipeline": one replica of single GPUs (module doc); else "deployment"."""
    return "pipeline" if request.replicas == 1 and resolve_tp(request)[0] == "off" else "deployment"


def route(request: PlanRequest, progress: Progress | None = None) -> Plan | Deployment:
    """Plan `request` (module doc): a `Plan` for one pipeline (also of TP groups), else a `Deployment`;
    both carry the plan JSON's input fields (model id, workload, hosts). A deployment request is
    never answered below its floors (partitioner.planning.floors), solved first; the whole-cluster
    floor is the search's whole-cluster replica too (not solved twice)."""
    return _route(request, progress or Progress(), {})


Memo = dict[tuple[int | None, str], Plan | Deployment]


def _route(request: PlanRequest, progress: Progress, memo: Memo) -> Plan | Deployment:
    from partitioner.errors import PartitionerError
    from partitioner.planning.floors import best_of, floor_requests
    from partitioner.planning.pipeline import with_metadata

    tp, notes = resolve_tp(request)
    for line in notes:
        if progress.note is not None:
            progress.note(line)
    model, cluster = request.model, request.cluster
    if tp == "auto" and max(_node_sizes(cluster)) == 1:  # TP groups stay inside a machine: "auto" is "off"
        tp = "off"
    key = (request.replicas, tp)
    if key in memo:
        return memo[key]
    if request.replicas == 1 and tp == "off":
        memo[key] = with_metadata(_pipeline(request, progress), model, cluster)
        return memo[key]
    from partitioner import interrupts
    from partitioner.deploy.plan import SearchStopped, plan_request

    mark = interrupts.count()  # Ctrl-C during the floors: no later floor nor the search starts
    floors: list[tuple[str, Plan | Deployment]] = []
    for label, sub in floor_requests(request, tp):  # solved first, in a fixed order (module doc of floors)
        if interrupts.since(mark) or (floors and _expired(request)):
            break  # Ctrl-C, or the limit spent on earlier floors: no later floor starts (the limit is a cap)
        try:
            floors.append((label, _route(sub, Progress(), memo)))
        except KeyboardInterrupt:
            break
        except PartitionerError:
            continue  # no plan of that kind: no floor
    try:
        if interrupts.since(mark):
            raise KeyboardInterrupt
        whole = next((r for label, r in floors if label == "--replicas 1" and isinstance(r, Plan)), None)
        result = plan_request(dataclasses.replace(request, tp=tp), progress=progress.replicas, known=whole,
                              known_upper=_serve_upper(whole) if tp == "off" else math.inf)
    except KeyboardInterrupt:  # Ctrl-C: the best floor so far, not proven (none: the CLI says so)
        if not floors:
            raise
        result = _stopped(floors, request, None)
    except SearchStopped as exc:  # out of time after the floors: the best floor, with the bound that holds
        if not floors:
            raise
        result = _stopped(floors, request, exc)
    except PartitionerError:
        if not floors:
            raise
        result = floors[0][1]
    if isinstance(result, Deployment):
        result = dataclasses.replace(result, replicas=tuple(with_metadata(p, model, cluster) for p in result.replicas))
    else:
        result = with_metadata(result, model, cluster)
    memo[key] = best_of(result, floors, request.objective == "serve", cluster)
    return memo[key]


def _expired(request: PlanRequest) -> bool:
    """Whether the request's wall-clock cap has passed (never without one)."""
    return request.budget.deadline is not None and request.budget.left(1.0) <= 0.0


def _serve_upper(plan: Plan | None) -> float:
    """The tokens/s no plan beats, of a one-pipeline serve plan (`_pipeline`: its lower bound is
    the seconds per token of the serve search's upper bound, partitioner.serving.points); inf
    where there is none."""
    if plan is None or plan.objective != "serve" or plan.serving is None or not plan.lower_bound > 0:
        return math.inf
    return max(1.0 / float(plan.lower_bound), float(plan.serving.tokens_per_s))


def _stopped(floors: list[tuple[str, Plan | Deployment]], request: PlanRequest, exc: Any) -> Plan | Deployment:
    """The best floor as the answer of a search stopped before its own (`exc` its SearchStopped, or
    None for Ctrl-C), not proven, with the search's fluid bound (every deployment's, hence finite
    and valid) where it asked for replicas (none known after Ctrl-C)."""
    from partitioner.planning.floors import as_deployment, better

    best = floors[0][1]
    for _, r in floors[1:]:
        if better(r, best, request.objective == "serve"):
            best = r
    if request.replicas == 1:
        return _floor_plan(best, request, exc) if isinstance(best, Plan) and request.objective != "serve" else best
    bound = math.inf if exc is None else float(exc.upper_bound)
    shell = Deployment(replicas=(), unused=(), optimal=False, upper_bound_tokens_per_s=bound)
    dep = as_deployment(best, shell, request.cluster)
    if not isinstance(dep, Deployment):
        return dep
    ub = max(bound, dep.tokens_per_s)
    why = "interrupted (Ctrl-C)" if exc is None else str(exc)
    return dataclasses.replace(dep, optimal=False, upper_bound_tokens_per_s=ub,
                               stopped="interrupted" if exc is None or "interrupted" in str(exc) else "time_limit",
                               notes=(*dep.notes, f"search stopped after its floors: {why}"))


def _floor_plan(best: Plan, request: PlanRequest, exc: Any) -> Plan:
    """A floor (--tp node, --tp off) as the answer of a TP search stopped before its own: the floor's
    bound holds only in its smaller space, so the answer carries the fluid bound over every TP group
    (partitioner.deploy.groups.groups_bound; on tau_max, so 0 for makespan) and is not proven."""
    from partitioner.errors import PartitionerError

    lb = 0.0
    if request.objective != "makespan" and best.objective_value:
        from partitioner.deploy.groups import groups_bound

        try:
            lb = min(best.objective_value[0], groups_bound(request.model, request.cluster, request.engine))
        except PartitionerError:
            lb = 0.0
    return dataclasses.replace(best, optimal=False, lower_bound=lb,
                               status="INTERRUPTED" if exc is None else "TIME_LIMIT")


def _pipeline(request: PlanRequest, progress: Progress) -> Plan:
    """One pipeline of single GPUs: the serve search, or one solve of the lexicographic objective."""
    from partitioner.planning.pipeline import build_problem, serve_plan, solve_problem

    lim = request.limits
    if request.objective == "serve":
        return serve_plan(request.model, request.cluster, regime=request.regime, solver=request.solver,
                          order=request.order, time_limit_s=request.time_limit_s, tpot_ms=lim.tpot_ms,
                          ttft_ms=lim.ttft_ms, max_batch=lim.max_batch, progress=progress.serve,
                          engine=request.engine)
    problem = build_problem(request.model, request.cluster, M=request.M, regime=request.regime,
                            objective=request.objective, order=request.order, time_limit_s=request.time_limit_s,
                            engine=request.engine)
    if request.max_stages is not None:
        import dataclasses

        problem = dataclasses.replace(problem, max_stages=request.max_stages)
    if progress.note is not None:
        for line in engine_notes(problem, request.solver, request.engine):
            progress.note(line)
    return solve_problem(problem, request.solver, progress.solve, engine=request.engine, cluster=request.cluster)


def engine_notes(problem: Any, solver: str, engine: str | None) -> list[str]:
    """What --engine changes for one pipeline (moved from partitioner.cli.plan): baselines are not
    restricted; GPUs below the engine's minimum compute capability are left out
    (partitioner.solvers.engine_sequences)."""
    from partitioner.registry import EXACT_CHOICES

    if engine in (None, "generic"):
        return []
    if solver not in EXACT_CHOICES:
        return [f"--solver {solver} replays an engine's own split; --engine {engine} does not restrict it"]
    from partitioner.solvers import engine_sequences

    dropped = engine_sequences.unsupported_devices(problem.tables, engine)
    return [f"--engine {line}" for line in engine_sequences.unsupported_notes(problem.tables, engine, dropped)]
