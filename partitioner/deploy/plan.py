"""`plan_deployment`: the API entry point of cluster-scale plans (TP groups and replicas).

    >>> from partitioner.deploy.plan import plan_deployment
    >>> d = plan_deployment(model, cluster, replicas="auto", tp="auto")

tp: "off" (one GPU per stage, as `partition plan` always did), "auto" (TP groups of the
cluster's allowed degrees, per stage), "uniform" (one degree for every stage, as vLLM, SGLang
and TensorRT-LLM need), "node" (each machine is one TP group of all its GPUs, as Helix
models its L4x2 / T4x4 machines: one row per node, so each solve is a single exact one);
None: "auto" when cluster.yaml has `tp:`, else "off". replicas: 1 (one pipeline; returns a Plan), N, or "auto" (returns a
Deployment). Every sub-problem is solved by `partitioner.solvers.solve`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

from partitioner.deploy.deployment import Deployment, tp_notes
from partitioner.deploy.groups import MIN_SOLVE_S
from partitioner.deploy.replica_result import ReplicaPlanner
from partitioner.errors import InfeasibleError, InputError, SolverError
from partitioner.planning.request import PlanRequest, parse_replicas
from partitioner.problem import CostTables, Problem, evaluate, objective_key
from partitioner.registry import TP_MODES
from partitioner.result import Plan
from partitioner.serving.run import _d_ret_lb
from partitioner.solvers.budget import now

__all__ = ["plan_request", "plan_deployment", "SearchStopped", "TP_MODES", "parse_replicas"]



class SearchStopped(SolverError):
    """The replica search stopped (time limit, Ctrl-C) before it had an answer; `upper_bound` is
    the fluid bound of every usable device, which no deployment exceeds (partitioner.deploy.bounds)."""

    def __init__(self, message: str, upper_bound: float) -> None:
        super().__init__(message)
        self.upper_bound = upper_bound


def _sizes(tp: str) -> tuple[int, ...] | None:
    if tp not in TP_MODES:
        raise InputError(f"tp must be one of {', '.join(TP_MODES)} (got {tp!r})")
    return (1,) if tp == "off" else None  # "node" is handled by whole_nodes


def replica_planner(model: Any, cluster: Any, *, base: CostTables, make: Callable[[CostTables], Problem],
                    solve: Callable[[Problem], Any], tp: str, sizes: tuple[int, ...] | None, M: int,
                    engine: str | None = None, launch: Any = None) -> ReplicaPlanner:
    """devices -> the replica's Plan for serving (tokens/s = K·B/P, P = max(K·w, R)):

    the exact least-period split over groups ("throughput" at M = K: least w, then least R among
    those); when its P is K·w* it is optimal (no split has P < K·w*). Otherwise also the exact
    "makespan" splits at M = 1 (least Στ + Σd) and at M = K + 1, the best of them; each bounds
    P* >= K·(T*(m) + d_ret_lb)/(K + m − 1) (the Lagrangian bound of partitioner.serving.run,
    "Exactness"), and the plan is proven when its P meets the largest bound.
    """
    from partitioner.deploy.groups import solve_groups, to_plan

    K = base.in_flight

    def run(obj: str, m: int, devices: list[int]) -> Any:
        return solve_groups(model, cluster, lambda t: dataclasses.replace(make(t), objective=obj, M=m), solve,  # type: ignore[arg-type]
                            devices=devices, uniform_tp=tp == "uniform", base=base, sizes=sizes,
                            whole_nodes=tp == "node", engine=engine, launch=launch)

    def period(plan: Any) -> float:
        return float(plan.serving.tpot_s) if plan.serving is not None else math.inf

    def planner(devices: list[int], quick: bool) -> tuple[Any, float, bool]:
        """`quick`: the least-period split alone (one solve), its bound K·w* only."""
        cands = [run("throughput", max(1, K), devices)]
        plans = [to_plan(cands[0], cluster)]
        w_lb = cands[0].lower_bound
        bound = K * w_lb
        d_ret = _d_ret_lb(cands[0].problem.tables) if len(devices) > 1 else 0.0
        for m in () if quick else (1, K + 1):
            if min(period(p) for p in plans) <= bound * (1 + 1e-9) + 1e-15:
                break
            try:
                cands.append(run("makespan", m, devices))
            except InfeasibleError:
                break
            plans.append(to_plan(cands[-1], cluster))
            bound = max(bound, K * (cands[-1].lower_bound + d_ret) / (K + m - 1))
        best = min(range(len(plans)), key=lambda i: period(plans[i]))
        proven = all(gp.proven for gp in cands) and period(plans[best]) <= bound * (1 + 1e-9) + 1e-15
        gp = cands[best]
        problem = dataclasses.replace(gp.problem, M=M, objective="throughput")
        key = objective_key(problem, evaluate(problem, gp.solution.devices, gp.solution.cuts))
        gp = dataclasses.replace(gp, problem=problem, solution=dataclasses.replace(gp.solution, objective=key))
        plan = to_plan(gp, cluster)
        plan = dataclasses.replace(plan, optimal=proven, notes=tuple(tp_notes(plan)))
        return plan, K * base.batch / bound if bound > 0 else math.inf, not (quick and not proven)

    return ReplicaPlanner(planner)


def _launch(engine: str | None, solver: str, order: str, cluster: Any) -> Any:
    """The order rule of an explicitly chosen launch engine (as `api.solve_problem` applies it to
    one-GPU stages), for free order and an exact solver; None otherwise."""
    from partitioner.deploy.launch import Launch
    from partitioner.registry import EXACT_CHOICES, LAUNCH_TARGETS
    from partitioner.solvers.engine_rule import addresses

    if engine not in LAUNCH_TARGETS or solver not in EXACT_CHOICES or order != "free":
        return None
    return Launch(engine, solver, addresses(cluster))


def _unsupported(engine: str | None, base: CostTables, notes: list[str]) -> frozenset[int]:
    """The GPUs an explicitly chosen launch engine cannot run (below its minimum compute capability,
    `engine_sequences.unsupported_devices`), each said in `notes`; the single-pipeline path leaves
    them out the same way (`solvers.engine_rule.order_rule`)."""
    from partitioner.solvers import engine_sequences

    if engine in (None, "generic"):
        return frozenset()
    out = engine_sequences.unsupported_devices(base, engine)
    notes += engine_sequences.unsupported_notes(base, engine, out)
    return frozenset(out)


def _usable(devices: list[int], dropped: frozenset[int], engine: str | None) -> list[int]:
    kept = [g for g in devices if g not in dropped]
    if not kept:
        raise InfeasibleError(f"none of these GPUs runs {engine} (below its minimum compute capability)")
    return kept


def _only_usable(value: Any, dropped: frozenset[int], engine: str | None) -> Any:
    """`value` (a ReplicaPlanner) on the usable devices only."""
    if not dropped:
        return value
    return value.restricted(lambda devices: _usable(devices, dropped, engine))


def plan_deployment(
    model: Any,
    cluster: Any,
    *,
    replicas: int | str | None = 1,
    tp: str | None = None,
    M: int = 8,
    regime: str = "async",
    objective: str = "balanced",
    solver: str = "auto",
    order: str | None = None,
    time_limit_s: float | None = None,
    progress: Callable[..., None] | None = None,
    engine: str | None = None,
    tpot_ms: float | None = None,
    ttft_ms: float | None = None,
    max_batch: int | None = None,
) -> Any:
    """`plan_request` of these arguments (the keyword form older callers use; files loaded)."""
    from partitioner.models import load_cluster, load_model
    from partitioner.planning.request import PlanRequest, ServeLimits
    from partitioner.solvers.budget import Budget

    model = load_model(model) if not hasattr(model, "layers") else model
    cluster = load_cluster(cluster) if not hasattr(cluster, "devices") else cluster
    request = PlanRequest(model, cluster, engine=engine, objective=objective, M=M, regime=regime, solver=solver,
                          order=order, limits=ServeLimits(tpot_ms, ttft_ms, max_batch),
                          replicas=parse_replicas(replicas), tp=tp, budget=Budget(time_limit_s))
    return plan_request(request, progress)


def plan_request(request: PlanRequest, progress: Callable[..., None] | None = None,
                 known: Plan | None = None, known_upper: float = math.inf) -> Plan | Deployment:
    """A Plan (replicas == 1) or a Deployment; module doc. `engine` (presets/engines.yaml)
    overrides the files' `engine:` in the cost model (its overheads), and one that takes a single
    TP degree for every stage (its record's `tensor_parallel: uniform`) turns tp "auto" into "uniform".
    `known`: the whole cluster's one-replica plan of this request, already solved with the budget
    `--replicas 1` gets (partitioner.planning.floors): the search takes it as its whole-cluster
    replica instead of solving that one again with what is left of the budget (serve objective; the
    other objectives value a replica by another inner problem than their one-replica plan), and
    `known_upper` its proven upper bound on tokens/s (inf: none), which caps every subset's bound.

    Time: every solve is limited in work as without a limit; the request's budget (`--time-limit`)
    is a wall-clock cap on the whole command, read from its clock (partitioner.solvers.budget.now),
    and each replica gets what is left of it, the whole-cluster one included (no share of it)."""
    from partitioner import solvers
    from partitioner.costs import build_tables
    from partitioner.costs.tables import select_engine
    from partitioner.deploy.bound_inputs import for_workload
    from partitioner.deploy.groups import solve_groups, to_plan
    from partitioner.deploy.replicas import search_replicas
    from partitioner.deploy.split import Bundle, NodeSplit
    from partitioner.deploy.units import search_family, search_units

    model, cluster, engine, solver, M, regime = (request.model, request.cluster, request.engine, request.solver,
                                                 request.M, request.regime)
    count, objective = request.replicas, request.objective
    tpot_ms, ttft_ms, max_batch = request.limits.tpot_ms, request.limits.ttft_ms, request.limits.max_batch
    tp = request.tp or ("auto" if getattr(cluster, "tp", None) is not None else "off")
    base = build_tables(model, cluster, engine=engine)
    spec = select_engine(model, cluster, engine)
    eng = spec.id
    head: list[str] = []
    if tp == "auto" and spec.tensor_parallel == "uniform":  # its record, presets/engines.yaml
        tp = "uniform"
        head.append(f"{eng} takes one tensor-parallel degree for every stage: planned with uniform TP")
    dropped = _unsupported(engine, base, head)
    sizes = _sizes(tp)
    order_ = request.cluster_order
    serve = objective == "serve"
    if serve:  # the solvers' inner problem of the serve objective (serving.search)
        objective = "throughput"

    budget = request.budget

    def left() -> float | None:
        """What is left of the whole command's wall-clock cap (None: none)."""
        return None if budget.deadline is None else max(0.0, budget.deadline - now())

    def make(t: CostTables) -> Problem:
        """Each solve gets what is left of the whole command's time limit."""
        rest = left()
        return Problem(t, M=M, regime=regime, objective=objective, order=order_,  # type: ignore[arg-type]
                       time_limit_s=None if rest is None else max(MIN_SOLVE_S, rest))

    def solve(p: Problem) -> Any:
        from partitioner import interrupts

        mark = interrupts.count()
        found = solvers.solve(p, solver)
        if interrupts.since(mark):  # the solve kept its plan; the search must stop too (Ctrl-C)
            raise KeyboardInterrupt
        return found

    launch = _launch(engine, solver, order_, cluster)

    def value(devices: list[int]) -> Any:
        devices = _usable(devices, dropped, engine)
        gp = solve_groups(model, cluster, make, solve, devices=devices, uniform_tp=tp == "uniform", base=base,
                          sizes=sizes, whole_nodes=tp == "node", engine=engine, launch=launch)
        plan = to_plan(gp, cluster)
        return dataclasses.replace(plan, notes=(*head, *tp_notes(plan)))

    if serve:  # each replica its own batch and in-flight count (partitioner.deploy.serve)
        from partitioner.deploy.serve import serve_inputs

        serve_value, bound = serve_inputs(model, cluster, tp=tp, engine=engine, regime=regime, order=order_,
                                          solver=solver, tpot_ms=tpot_ms, ttft_ms=ttft_ms, max_batch=max_batch,
                                          left=left, launch=launch)
        serve_value = _only_usable(serve_value, dropped, engine)
        if count == 1:
            plan: Plan = serve_value(list(range(len(cluster.devices))))
            return dataclasses.replace(plan, notes=(*head, *plan.notes))
    elif count == 1:
        one: Plan = value(list(range(len(cluster.devices))))
        return one
    else:
        serve_value = _only_usable(replica_planner(model, cluster, base=base, make=make, solve=solve, tp=tp,
                                                   sizes=sizes, M=M, engine=engine, launch=launch), dropped, engine)
        bound = for_workload(model, cluster, base, tp, engine)
    need = float(bound.need)

    def fits(devices: list[int]) -> bool:
        kept = [g for g in devices if g not in dropped]
        return float(base.capacity_gb[kept].sum()) * (1 + 1e-9) >= need

    if serve and known is not None and known.feasible:  # the whole-cluster floor: the search's whole-cluster replica
        serve_value.know(list(range(len(cluster.devices))), known, known_upper)
    units = search_units(cluster, count, tp, fits)
    if units.note:
        head.append(units.note)
    nk = units.kinds
    split: Any = serve_value if units.gpus or count is not None else NodeSplit(
        nk, cluster, serve_value, bound, getattr(serve_value, "upper", None), fits,
        allowed=lambda node: cluster.tp_sizes(cluster.devices[node[0]].node) if tp == "node" else None,
        cap=known_upper if serve and known is not None else math.inf)

    def run(kinds: Any, gpus: bool) -> Any:  # GPU units: a later replica is planned again on its own GPUs (a
        # relabelled plan could break the listed order or an engine's rank order where GPU kinds interleave)
        return search_replicas(kinds, split.value, replicas=count, fits=units.fits,
                               bound=bound if split is serve_value else split, fluid=bound.fluid,
                               time_limit_s=left(), progress=progress,
                               upper_of=getattr(split, "upper_of", getattr(split, "upper", None)),
                               cluster=None if gpus else cluster,
                               quick=getattr(split, "quick", None), complete=getattr(split, "complete", None),
                               seed=serve)

    method = "replicas over GPU sets" if units.gpus else "replicas"
    try:
        if units.family and count is not None:  # a fixed count above the GPU-set limit (deploy.units)
            usable = [g for g in range(len(cluster.devices)) if g not in dropped]
            found, where = search_family(units, run, count, (len(usable), float(base.capacity_gb[usable].sum()), need))
            method = f"replicas over {where}"
        else:
            found = run(nk, units.gpus)
    except SolverError as exc:  # stopped before an answer: say so with the bound that holds
        usable = [g for g in range(len(cluster.devices)) if g not in dropped]
        raise SearchStopped(str(exc), min(float(bound.fluid(usable)), float(getattr(exc, "upper_bound", math.inf)))) from None
    except InfeasibleError as exc:
        if count is not None or "stopped" not in str(exc):
            raise  # a proof of infeasibility, or a fixed replica count: not a budget that ran out
        if "interrupted" in str(exc):
            raise KeyboardInterrupt from None  # Ctrl-C before any replica: no second solve, the CLI says so
        stopped = "time_limit"
        # the limit (or Ctrl-C) stopped the search before any replica was solved: that proves nothing,
        # so the answer is one pipeline over every device, not proven, never "cannot hold the model"
        one = (serve_value if serve else value)(list(range(len(cluster.devices))))
        used1 = {name for st in one.stages for name in (st.members or (st.device,))}
        return Deployment(
            replicas=(one,), unused=tuple(d.name for d in cluster.devices if d.name not in used1), optimal=False,
            upper_bound_tokens_per_s=math.inf, wall_time_s=0.0, subproblems=1, stopped=stopped,
            notes=(*head, *one.notes, f"search stopped ({stopped}) before any replica was solved: one pipeline over "
                   "every device, not proven (a longer --time-limit searches replica splits)"),
        )
    plans = [p for b in found.plans for p in (b.plans if isinstance(b, Bundle) else (b,))]
    used = {name for p in plans for st in p.stages for name in (st.members or (st.device,))}
    unused = tuple(d.name for d in cluster.devices if d.name not in used)
    notes = [*head, *(f"replica {r}: {n}" for r, p in enumerate(plans) for n in p.notes if n not in head)]
    if found.stopped:
        notes.append(f"search stopped ({found.stopped}) after {found.solved} replica solves: best found so far")
    upper = _finite_bound(found, bound, [g for g in range(len(cluster.devices)) if g not in dropped])
    optimal = found.optimal and all(p.optimal for p in plans)
    if units.family and count is not None:  # the split family: its bound holds for every deployment
        optimal = optimal or found.total >= upper * (1 - 1e-9)
    return Deployment(
        replicas=tuple(plans), unused=unused, optimal=optimal, solver=method,
        upper_bound_tokens_per_s=upper, wall_time_s=found.wall_time_s, subproblems=found.solved,
        stopped=found.stopped, notes=tuple(notes),
    )


def _finite_bound(found: Any, bound: Any, devices: list[int]) -> float:
    """The search's upper bound on total tokens/s, or, where it has none (a quick plan, a stopped
    search), the fluid bound of every usable device: additive over devices, so no deployment of
    disjoint replicas exceeds it (partitioner.deploy.bounds)."""
    upper = float(found.upper_bound)
    if math.isfinite(upper) or not hasattr(bound, "fluid"):
        return upper
    return max(float(found.total), float(bound.fluid(devices)))
