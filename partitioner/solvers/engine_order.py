"""Plans an engine can launch: the exact solvers on the device orders the engine realises.

An engine does not run every device order: vLLM's Ray executor ranks the GPUs of several
hosts by (driver's node first, nodes with fewer workers, IP string) and by ascending GPU id
within a node; SGLang and TensorRT-LLM need the same number of consecutive stages on every
node (rules and sources: partitioner/export/vllm.py, sglang.py, trtllm.py). This wrapper never
edits a solver. It solves the problem as given; if that plan is realisable it is the answer
(the restricted optimum cannot be better). Otherwise it enumerates every realisable device
sequence (`realisable_sequences`) and solves each as a fixed-order sub-problem with
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
bound (optimal only when the best launchable plan meets it). A device's ordinal is its
position among its node's devices in the cluster file (the export default).

`problem.time_limit_s` bounds the whole search, not each sub-solve, and Ctrl-C stops it: the
best launchable plan so far is returned, not proven, with the unrestricted solve's bound
(`partitioner.solvers.engine_clock`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace

import numpy as np

from partitioner.errors import InfeasibleError, InputError
from partitioner.problem import CostTables, Problem, Solution, evaluate, lex_compare, objective_key
from partitioner.registry import LAUNCH_TARGETS
from partitioner.solvers.engine_clock import SearchClock, Stopped

__all__ = [
    "ENGINE_RULES", "MAX_SUBPROBLEMS", "realisable", "realisable_sequences", "candidate_orders", "restrict", "forced",
    "solve", "unsupported_devices",
]

ENGINE_RULES: tuple[str, ...] = (*LAUNCH_TARGETS, "generic")
MAX_SUBPROBLEMS = 20000


def _ordinal(t: CostTables, g: int) -> int:
    return t.node_names[:g].count(t.node_names[g])


def _contiguous(nodes: Sequence[str]) -> bool:
    runs = [n for k, n in enumerate(nodes) if k == 0 or nodes[k - 1] != n]
    return len(runs) == len(set(runs))


Members = Sequence[Sequence[int]]  # per row of the tables: its GPUs (a TP group's), in ascending ordinal order


def _gpus(t: CostTables, devices: Sequence[int], members: Members | None) -> list[tuple[str, int]]:
    """(node, ordinal) of every GPU of the plan in rank order (global rank = pp_rank·tp + tp_rank)."""
    if members is None:
        return [(t.node_names[g], _ordinal(t, g)) for g in devices]
    return [(t.node_names[g], int(o)) for g in devices for o in members[g]]


def realisable(engine: str, t: CostTables, devices: Sequence[int], address: Mapping[str, str] | None = None,
               members: Members | None = None) -> bool:
    """Whether `engine` runs stage s on row devices[s] (a GPU, ordinals as listed in the cluster,
    or with `members` a TP group of those GPUs: any numbers ordered as the GPU ids are)."""
    nodes = [t.node_names[g] for g in devices]
    if engine in ("llamacpp", "generic") or len(set(nodes)) == 1:
        return True
    if not _contiguous(nodes):
        return False
    if engine == "vllm":
        from partitioner.export.vllm import ray_realises

        return ray_realises(_gpus(t, devices, members), dict(address or {}))
    counts = {n: nodes.count(n) for n in nodes}
    return len(set(counts.values())) == 1


def unsupported_devices(t: CostTables, engine: str) -> list[int]:
    """Devices whose catalogue GPU is below `engine`'s minimum compute capability (export rule modules)."""
    import importlib

    from partitioner.export.base import compute_capability

    if engine not in LAUNCH_TARGETS:
        return []
    minimum = importlib.import_module(f"partitioner.export.{engine}").MIN_CC
    if minimum is None:
        return []
    return [g for g, gpu in enumerate(t.gpu_names) if (cc := compute_capability(gpu)) is not None and cc < minimum]


def _by_node(t: CostTables) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for g, n in enumerate(t.node_names):
        out.setdefault(n, []).append(g)
    return out


def _count(engine: str, groups: Mapping[str, list[int]]) -> int:
    N = len(groups)
    one_host = sum(math.factorial(len(v)) for v in groups.values())
    if engine == "vllm":
        return math.factorial(N) + one_host
    return math.factorial(N) * math.prod(math.factorial(len(v)) for v in groups.values()) + one_host


def candidate_orders(engine: str, t: CostTables) -> Iterator[list[int]]:
    """Device orders whose subsequences include every plan `engine` realises."""
    groups = _by_node(t)
    names = list(groups)
    for n in names:  # one host: every engine runs any order (CUDA_VISIBLE_DEVICES)
        if len(groups[n]) > 1 or len(names) == 1:
            yield from (list(p) for p in itertools.permutations(groups[n]))
    if engine == "vllm":
        for head in names:
            for rest in itertools.permutations([n for n in names if n != head]):
                yield [g for n in (head, *rest) for g in groups[n]]
        return
    for perm in itertools.permutations(names):
        for inner in itertools.product(*(itertools.permutations(groups[n]) for n in perm)):
            yield [g for block in inner for g in block]


def _subsets(devices: Sequence[int]) -> list[tuple[int, ...]]:
    return [c for r in range(1, len(devices) + 1) for c in itertools.combinations(devices, r)]


def _elementary(weights: Sequence[int]) -> list[int]:
    """e_0..e_N: sums over k-subsets of the product of their weights."""
    e = [1] + [0] * len(weights)
    for w in weights:
        for k in range(len(weights), 0, -1):
            e[k] += e[k - 1] * w
    return e


def _sequence_count(engine: str, groups: Mapping[str, list[int]], L: int) -> int:
    """How many sequences `realisable_sequences` yields (before the L cap), in closed form."""
    sizes = [len(v) for v in groups.values()]
    total = sum(math.perm(n, j) for n in sizes for j in range(1, min(n, L) + 1))
    if engine == "vllm":
        e = _elementary([2**n - 1 for n in sizes])
        return total + sum(k * e[k] for k in range(2, len(sizes) + 1))
    for c in range(1, max(sizes) + 1):
        e = _elementary([math.perm(n, c) for n in sizes])
        total += sum(math.factorial(k) * e[k] for k in range(2, len(sizes) + 1))
    return total


def realisable_sequences(engine: str, t: CostTables, address: Mapping[str, str] | None = None) -> Iterator[tuple[int, ...]]:
    """Every device sequence of at most L devices that `engine` launches as stage order."""
    groups, L = _by_node(t), t.L
    addr = dict(address or {})
    for devs in groups.values():  # one host: any order
        for j in range(1, min(len(devs), L) + 1):
            yield from itertools.permutations(devs, j)
    names = list(groups)
    for k in range(2, len(names) + 1):
        for used in itertools.combinations(names, k):
            if engine == "vllm":
                for choice in itertools.product(*(_subsets(groups[n]) for n in used)):
                    if sum(map(len, choice)) > L:
                        continue
                    chosen = dict(zip(used, choice, strict=True))
                    for head in used:
                        rest = sorted((n for n in used if n != head), key=lambda n: (len(chosen[n]), addr.get(n, n)))
                        yield tuple(g for n in (head, *rest) for g in chosen[n])
            else:
                top = min(len(groups[n]) for n in used)
                for c in range(1, min(top, L // k) + 1):
                    for perm in itertools.permutations(used):
                        for inner in itertools.product(*(itertools.permutations(groups[n], c) for n in perm)):
                            yield tuple(g for block in inner for g in block)


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
    """The fixed-order sub-problem on devices `order` (in that order)."""
    t, idx = problem.tables, list(order)
    sub = CostTables(
        cost=t.cost[idx], memory_gb=t.memory_gb, cut_bytes=t.cut_bytes, capacity_gb=t.capacity_gb[idx],
        latency_s=t.latency_s[idx][:, idx], bandwidth_Bps=t.bandwidth_Bps[idx][:, idx],
        layer_names=t.layer_names, device_names=tuple(t.device_names[g] for g in idx),
        gpu_names=tuple(t.gpu_names[g] for g in idx), node_names=tuple(t.node_names[g] for g in idx),
        layer_kinds=t.layer_kinds, params=t.params, tied_gb=t.tied_gb, model_name=t.model_name,
    )
    return replace(problem, tables=sub, order="fixed")


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
    clock = SearchClock(problem.time_limit_s)  # one budget for the base solve and every sub-solve
    kept = replace(restrict(problem, keep), order=problem.order)
    base0 = solvers.solve(kept, solver)
    base = replace(base0, devices=tuple(keep[i] for i in base0.devices))
    if realisable(engine, problem.tables, base.devices, address, members):
        return base
    if problem.order == "fixed":
        raise InputError(
            f"the best plan in the listed device order is not one {engine} can launch; use order: free "
            "so that the planner may reorder devices"
        )
    if base0.status == "INTERRUPTED":
        clock.stopped = "INTERRUPTED"
    groups = _by_node(problem.tables)
    if engine == "vllm" and all(sum(1 for g in devs if g in keep) <= 1 for devs in groups.values()):
        return _one_gpu_per_node(problem, solver, address, keep, clock, base)
    if _sequence_count(engine, groups, problem.L) <= MAX_SUBPROBLEMS:
        return _exact(problem, engine, solver, address, keep, clock, base, members)
    return _covered(problem, engine, solver, address, keep, base=base, clock=clock, members=members)


def _exact(problem: Problem, engine: str, solver: str, address: Mapping[str, str] | None, keep: Sequence[int],
           clock: SearchClock, base: Solution, members: Members | None = None) -> Solution:
    """The best realisable plan: every realisable sequence solved with all of its devices used."""
    best: Solution | None = None
    exact = True
    doubts: list[float] = []  # first objective component of sequences whose forced solve skipped a device
    allowed = set(keep)
    seen: set[bytes] = set()
    t = problem.tables
    for seq in realisable_sequences(engine, problem.tables, address):
        if not set(seq) <= allowed or (members is not None and not realisable(engine, t, seq, address, members)):
            continue
        idx = list(seq)
        signature = b"|".join(a.tobytes() for a in (
            t.cost[idx], t.capacity_gb[idx], t.latency_s[idx][:, idx], t.bandwidth_Bps[idx][:, idx]))
        if signature in seen:  # interchangeable devices: the same sub-problem scores the same
            continue
        seen.add(signature)
        sub_problem, big = forced(problem, seq)
        try:
            sub = clock.solve(sub_problem, solver)
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
    stopped = clock.finish(best, base, engine)
    if stopped is not None:
        return stopped
    if best is None:
        if doubts:
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
                      clock: SearchClock, base: Solution) -> Solution:
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
            sub = clock.solve(restrict(problem, order), solver)
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
    stopped = clock.finish(best, base, "vllm")
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
    clock: SearchClock, members: Members | None = None,
) -> Solution:
    """Too many sequences: orders covering every realisable plan, with a lower bound."""
    groups = _by_node(problem.tables)
    if _count(engine, groups) > MAX_SUBPROBLEMS:
        raise InputError(
            f"--engine {engine}: {_count(engine, groups)} device orders to search (limit {MAX_SUBPROBLEMS}); "
            f"list the devices in an order {engine} launches and plan with --order fixed"
        )
    best: Solution | None = None
    bound_key: tuple[float, ...] | None = None  # min over sub-problems of their (exact) optima
    bound, exact = math.inf, True
    for full in candidate_orders(engine, problem.tables):
        order = [g for g in full if g in keep]
        if not order:
            continue
        try:
            sub = clock.solve(restrict(problem, order), solver)
        except InfeasibleError:
            continue
        except Stopped:
            break
        exact = exact and sub.optimal
        bound = min(bound, sub.lower_bound)
        if bound_key is None or lex_compare(sub.objective, bound_key) < 0:
            bound_key = sub.objective
        devices = tuple(order[i] for i in sub.devices)
        if realisable(engine, problem.tables, devices, address, members) and (best is None or lex_compare(sub.objective, best.objective) < 0):
            best = replace(sub, devices=devices)
        if clock.stopped:
            break
    stopped = clock.finish(best, base, engine)
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
