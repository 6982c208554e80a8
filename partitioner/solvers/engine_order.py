"""Plans an engine can launch: the exact solvers on the device orders the engine realises.

An engine does not run every device order (`engine_sequences`: which ones it does, from
the export modules' rules). This wrapper never edits a solver. It solves the problem as given; if that plan is realisable it is the answer
(the restricted optimum cannot be better). Otherwise it enumerates every realisable device
sequence (`engine_sequences.realisable_sequences`) and solves each as a fixed-order sub-problem with
`partitioner.solvers.solve` in which every device must be used (`forced`): layer 0 may only
go to the first device, layer L-1 only to the last, and a link that skips a device costs
`BIG`. Objectives whose first component contains the links (makespan; blocking throughput)
then optimise over cut points of the whole sequence. A tau-first objective may still skip a
slow device (BIG links do not reach tau); such a sequence's optimum is no better than the
skipping plan in the first component; its cuts are then enumerated and scored exactly
(`_whole_sequence`, up to MAX_CUTS cut sets), and beyond that it is reported as not proven
with that bound unless it cannot beat the best plan's first component. When
there are more than `MAX_SUBPROBLEMS` sequences, it falls back to orders that cover every
realisable plan as a subsequence and reports the minimum over those sub-problems as a lower
bound (optimal only when the best launchable plan meets it).

`problem.time_limit_s` bounds the whole search, not each sub-solve, and Ctrl-C stops it: the
best launchable plan so far is returned, not proven, with the unrestricted solve's bound
(`partitioner.solvers.engine_clock`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

import numpy as np

from partitioner.errors import InfeasibleError, InputError
from partitioner.problem import Problem, Solution, evaluate, lex_compare, objective_key, select_rows
from partitioner.registry import LAUNCH_TARGETS
from partitioner.solvers import engine_clock, engine_sequences
from partitioner.solvers.budget import Budget
from partitioner.solvers.engine_clock import Stopped
from partitioner.solvers.engine_sequences import Members

__all__ = ["ENGINE_RULES", "MAX_SUBPROBLEMS", "restrict", "forced", "solve"]

ENGINE_RULES: tuple[str, ...] = (*LAUNCH_TARGETS, "generic")
MAX_SUBPROBLEMS = 20000


def forced(problem: Problem, order: Sequence[int]) -> tuple[Problem, float]:
    """The fixed-order sub-problem on `order` in which every device must hold a stage, and BIG.

    Layer 0 costs BIG on every device but the first, layer L-1 on every device but the last,
    and a link from position i to any position but i+1 has latency BIG: a plan of finite
    cost then uses the whole sequence, and its cost is the real one.
    """
    sub = restrict(problem, order)
    t = sub.tables
    finite = np.isfinite(t.latency_s)
    big = 1e6 * (float(np.sum(t.cost)) + float(np.sum(t.latency_s[finite])) + 1.0)
    cost = np.array(t.cost, dtype=float)
    latency = np.array(t.latency_s, dtype=float)
    k = len(order)
    if k > 1:
        cost[1:, 0] = big
        cost[:-1, t.L - 1] = big
        for i in range(k):
            for j in range(k):
                if j != i + 1:
                    latency[i, j] = big
    return replace(sub, tables=replace(t, cost=cost, latency_s=latency)), big


def restrict(problem: Problem, order: Sequence[int]) -> Problem:
    """The fixed-order sub-problem on devices `order` (in that order): every per-row field sliced
    (`select_rows`: the engine's KV pool and prefill costs too), the serving fields kept."""
    return replace(problem, tables=select_rows(problem.tables, list(order)), order="fixed")


def solve(
    problem: Problem, engine: str, solver: str = "auto", address: Mapping[str, str] | None = None,
    exclude: Sequence[int] = (), members: Members | None = None,
) -> Solution:
    """The best plan `engine` can launch without devices `exclude` (GPUs it does not support);
    see the module docstring for exactness. `members`: each row is a TP group of one degree
    (partitioner.deploy.groups), ranked by its GPUs."""
    from partitioner import solvers

    if engine not in ENGINE_RULES:
        raise InputError(f"unknown engine {engine!r}; valid engines: {', '.join(ENGINE_RULES)}")
    keep = [g for g in range(problem.G) if g not in set(exclude)]
    if not keep:
        raise InfeasibleError(f"{engine} supports none of the cluster's GPUs")
    clock = Budget(problem.time_limit_s)  # one budget for the base solve and every sub-solve
    kept = replace(restrict(problem, keep), order=problem.order)
    base0 = solvers.solve(kept, solver)
    base = replace(base0, devices=tuple(keep[i] for i in base0.devices))
    if engine_sequences.realisable(engine, problem.tables, base.devices, address, members):
        return base
    if problem.order == "fixed":  # the launchable plans that keep the listed order (engine_listed)
        from partitioner.solvers import engine_listed

        n = engine_listed.listed_count(engine, problem.tables)
        if n > MAX_SUBPROBLEMS:
            raise InputError(
                f"--engine {engine} --order fixed: {n:,} device sequences in the listed order, too many to "
                f"search (limit {MAX_SUBPROBLEMS:,}); list fewer devices or use order: free"
            )
        listed = engine_listed.listed_sequences(engine, problem.tables, address, members)
        return _exact(problem, engine, solver, address, keep, clock, base, members, sequences=listed)
    if base0.status == "INTERRUPTED":
        clock.stopped = "INTERRUPTED"
    groups = engine_sequences.by_node(problem.tables)
    if engine_sequences.ray_order(engine) and all(sum(1 for g in devs if g in keep) <= 1 for devs in groups.values()):
        return _one_gpu_per_node(problem, solver, address, keep, clock, base)
    if engine_sequences.sequence_count(engine, groups, problem.L) <= MAX_SUBPROBLEMS:
        return _exact(problem, engine, solver, address, keep, clock, base, members)
    return _covered(problem, engine, solver, address, keep, base=base, clock=clock, members=members)


def _exact(problem: Problem, engine: str, solver: str, address: Mapping[str, str] | None, keep: Sequence[int],
           clock: Budget, base: Solution, members: Members | None = None,
           sequences: Iterable[tuple[int, ...]] | None = None) -> Solution:
    """The best realisable plan: every realisable sequence (or only `sequences`) solved with all of
    its devices used."""
    best: Solution | None = None
    exact = True
    doubts: list[float] = []  # first objective component of sequences whose forced solve skipped a device
    allowed = set(keep)
    seen: set[bytes] = set()
    t = problem.tables
    for seq in engine_sequences.realisable_sequences(engine, problem.tables, address) if sequences is None else sequences:
        if not set(seq) <= allowed or (members is not None and not engine_sequences.realisable(engine, t, seq, address, members)):
            continue
        idx = list(seq)
        signature = b"|".join(a.tobytes() for a in (
            t.cost[idx], t.capacity_gb[idx], t.latency_s[idx][:, idx], t.bandwidth_Bps[idx][:, idx]))
        if signature in seen:  # interchangeable devices: the same sub-problem scores the same
            continue
        seen.add(signature)
        sub_problem, big = forced(problem, seq)
        try:
            sub = engine_clock.solve(clock, sub_problem, solver)
        except InfeasibleError:
            continue
        except Stopped:
            break
        exact = exact and sub.optimal
        if len(sub.devices) != len(seq) or sub.objective[0] >= big / 2:
            # BIG links reach sigma and T but not tau: a tau-first objective may still skip a slow
            # device; every plan using the whole sequence is then no better in the first component
            if sub.objective[0] < big / 2:
                whole = _whole_sequence(problem, seq)
                if whole is None:
                    doubts.append(sub.objective[0])
                elif whole.cuts and (best is None or lex_compare(whole.objective, best.objective) < 0):
                    best = replace(sub, devices=whole.devices, cuts=whole.cuts, objective=whole.objective)
            continue
        devices = tuple(seq[i] for i in sub.devices)
        key = objective_key(problem, evaluate(problem, devices, sub.cuts))
        if best is None or lex_compare(key, best.objective) < 0:
            best = replace(sub, devices=devices, objective=key)
        if clock.stopped:
            break
    stopped = engine_clock.finish(clock, best, base, engine)
    if stopped is not None:
        return stopped
    if best is None:
        if doubts and sequences is None:
            return _covered(problem, engine, solver, address, keep, base=base, clock=clock, members=members)
        raise InfeasibleError(f"no plan that {engine} can launch fits the devices")
    top = best.objective[0]
    open_doubts = [x for x in doubts if x <= top * (1 + 1e-9) + 1e-12]
    proven = exact and not open_doubts
    lower = min([top, *open_doubts])
    return replace(best, solver=f"{best.solver}+{engine}-order", optimal=proven,
                   lower_bound=top if proven else lower, status="OPTIMAL" if proven else "FEASIBLE")


MAX_CUTS = 20000


def _one_gpu_per_node(problem: Problem, solver: str, address: Mapping[str, str] | None, keep: Sequence[int],
                      clock: Budget, base: Solution) -> Solution:
    """vLLM with one GPU per node: the driver's, then the others by IP string. Every subsequence of
    such an order is one Ray realises, so one fixed-order solve per driver is exact."""
    addr = dict(address or {})
    t = problem.tables
    best: Solution | None = None
    exact = True
    for head in keep:
        rest = sorted((g for g in keep if g != head), key=lambda g: addr.get(t.node_names[g], t.node_names[g]))
        order = [head, *rest]
        try:
            sub = engine_clock.solve(clock, restrict(problem, order), solver)
        except InfeasibleError:
            continue
        except Stopped:
            break
        exact = exact and sub.optimal
        devices = tuple(order[i] for i in sub.devices)
        if best is None or lex_compare(sub.objective, best.objective) < 0:
            best = replace(sub, devices=devices)
        if clock.stopped:
            break
    stopped = engine_clock.finish(clock, best, base, "vllm")
    if stopped is not None:
        return stopped
    if best is None:
        raise InfeasibleError("no plan that vllm can launch fits the devices")
    return replace(best, solver=f"{best.solver}+vllm-order", optimal=exact, lower_bound=best.objective[0] if exact else best.lower_bound)


def _whole_sequence(problem: Problem, seq: Sequence[int]) -> Solution | None:
    """The best cuts using every device of `seq`, by enumerating them (None: more than MAX_CUTS;
    a Solution without cuts: none fits)."""
    L, k = problem.L, len(seq)
    if math.comb(L - 1, k - 1) > MAX_CUTS:
        return None
    best: tuple[tuple[float, ...], tuple[int, ...]] | None = None
    for inner in itertools.combinations(range(1, L), k - 1):
        cuts = (0, *inner, L)
        m = evaluate(problem, tuple(seq), cuts)
        if m.fits:
            key = objective_key(problem, m)
            if best is None or lex_compare(key, best[0]) < 0:
                best = (key, cuts)
    if best is None:
        return Solution(tuple(seq), (), "enumerate", True, (), 0.0)
    return Solution(tuple(seq), best[1], "enumerate", True, best[0], best[0][0])


def _covered(
    problem: Problem, engine: str, solver: str, address: Mapping[str, str] | None, keep: Sequence[int], *, base: Solution,
    clock: Budget, members: Members | None = None,
) -> Solution:
    """Too many sequences: orders covering every realisable plan, with a lower bound."""
    groups = engine_sequences.by_node(problem.tables)
    if engine_sequences.count(engine, groups) > MAX_SUBPROBLEMS:
        raise InputError(
            f"--engine {engine}: the {len(groups)} nodes can be launched in {engine_sequences.count(engine, groups):,} "
            f"device orders, too many to search (limit {MAX_SUBPROBLEMS:,}); list the devices in cluster.yaml in the "
            f"order {engine} launches them (each node's GPUs together) and plan with --order fixed, which searches "
            "only the splits of that order"
        )
    best: Solution | None = None
    bound_key: tuple[float, ...] | None = None  # min over sub-problems of their (exact) optima
    bound, exact = math.inf, True
    for full in engine_sequences.candidate_orders(engine, problem.tables):
        order = [g for g in full if g in keep]
        if not order:
            continue
        try:
            sub = engine_clock.solve(clock, restrict(problem, order), solver)
        except InfeasibleError:
            continue
        except Stopped:
            break
        exact = exact and sub.optimal
        bound = min(bound, sub.lower_bound)
        if bound_key is None or lex_compare(sub.objective, bound_key) < 0:
            bound_key = sub.objective
        devices = tuple(order[i] for i in sub.devices)
        if engine_sequences.realisable(engine, problem.tables, devices, address, members) and (best is None or lex_compare(sub.objective, best.objective) < 0):
            best = replace(sub, devices=devices)
        if clock.stopped:
            break
    stopped = engine_clock.finish(clock, best, base, engine)
    if stopped is not None:
        return stopped
    if best is None:
        raise InfeasibleError(f"no plan that {engine} can launch fits the devices")
    proven = exact and bound_key is not None and lex_compare(best.objective, bound_key) == 0
    lower = max(base.lower_bound, bound) if math.isfinite(bound) else base.lower_bound
    return replace(
        best,
        solver=f"{best.solver}+{engine}-order",
        optimal=proven,
        lower_bound=best.objective[0] if proven else min(lower, best.objective[0]),
        status="OPTIMAL" if proven else "FEASIBLE",
    )
