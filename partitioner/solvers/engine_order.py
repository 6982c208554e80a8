"""Plans an engine can launch: the exact solvers on the device orders the engine realises.

An engine does not run every device order: vLLM's Ray executor ranks the GPUs of several
hosts by (driver's node first, nodes with fewer workers, IP string) and by ascending GPU id
within a node; SGLang and TensorRT-LLM need the same number of consecutive stages on every
node (rules and sources: partitioner/export/vllm.py, sglang.py, trtllm.py). This wrapper
never edits a solver. It solves the problem as given; if that plan is realisable it is the
answer (the restricted optimum cannot be better). Otherwise it enumerates orders that cover
every realisable plan as a subsequence (every order of one node's devices; vLLM: a driver
node then a permutation of the other nodes, each node's devices by ascending ordinal; SGLang/TensorRT-LLM: node permutations and
per-node device permutations), solves each as a fixed-order sub-problem with
`partitioner.solvers.solve`, keeps the best realisable answer and reports the minimum over
the sub-problems as the lower bound: the plan is proven optimal when the two agree, else
`optimal=False` with that bound (a sub-problem's best subsequence may itself not be
realisable). A device's ordinal is its position among its node's devices in the cluster file
(the export default).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace

from partitioner.errors import InfeasibleError, InputError
from partitioner.problem import CostTables, Problem, Solution, lex_compare

__all__ = ["ENGINE_RULES", "MAX_SUBPROBLEMS", "realisable", "candidate_orders", "restrict", "solve", "unsupported_devices"]

ENGINE_RULES: tuple[str, ...] = ("vllm", "sglang", "trtllm", "llamacpp", "generic")
MAX_SUBPROBLEMS = 5040


def _ordinal(t: CostTables, g: int) -> int:
    return t.node_names[:g].count(t.node_names[g])


def _contiguous(nodes: Sequence[str]) -> bool:
    runs = [n for k, n in enumerate(nodes) if k == 0 or nodes[k - 1] != n]
    return len(runs) == len(set(runs))


def realisable(engine: str, t: CostTables, devices: Sequence[int], address: Mapping[str, str] | None = None) -> bool:
    """Whether `engine` runs stage s on device devices[s] (ordinals as listed in the cluster)."""
    nodes = [t.node_names[g] for g in devices]
    if engine in ("llamacpp", "generic") or len(set(nodes)) == 1:
        return True
    if not _contiguous(nodes):
        return False
    if engine == "vllm":
        from partitioner.export.vllm import ray_realises

        return ray_realises([(t.node_names[g], _ordinal(t, g)) for g in devices], dict(address or {}))
    counts = {n: nodes.count(n) for n in nodes}
    return len(set(counts.values())) == 1


def unsupported_devices(t: CostTables, engine: str) -> list[int]:
    """Devices whose catalogue GPU is below `engine`'s minimum compute capability (export rule modules)."""
    import importlib

    from partitioner.export.base import compute_capability

    if engine not in ("vllm", "sglang", "trtllm", "llamacpp"):
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
    exclude: Sequence[int] = (),
) -> Solution:
    """The best plan `engine` can launch without devices `exclude` (GPUs it does not support);
    see the module docstring for exactness."""
    from partitioner import solvers

    if engine not in ENGINE_RULES:
        raise InputError(f"unknown engine {engine!r}; valid engines: {', '.join(ENGINE_RULES)}")
    keep = [g for g in range(problem.G) if g not in set(exclude)]
    if not keep:
        raise InfeasibleError(f"{engine} supports none of the cluster's GPUs")
    kept = replace(restrict(problem, keep), order=problem.order)
    base0 = solvers.solve(kept, solver)
    base = replace(base0, devices=tuple(keep[i] for i in base0.devices))
    if realisable(engine, problem.tables, base.devices, address):
        return base
    if problem.order == "fixed":
        raise InputError(
            f"the best plan in the listed device order is not one {engine} can launch; use order: free "
            "so that the planner may reorder devices"
        )
    groups = _by_node(problem.tables)
    if _count(engine, groups) > MAX_SUBPROBLEMS:
        raise InputError(f"--engine {engine}: {_count(engine, groups)} device orders to search (limit {MAX_SUBPROBLEMS})")
    best: Solution | None = None
    bound_key: tuple[float, ...] | None = None  # min over sub-problems of their (exact) optima
    bound, exact = math.inf, True
    for full in candidate_orders(engine, problem.tables):
        order = [g for g in full if g in keep]
        if not order:
            continue
        try:
            sub = solvers.solve(restrict(problem, order), solver)
        except InfeasibleError:
            continue
        exact = exact and sub.optimal
        bound = min(bound, sub.lower_bound)
        if bound_key is None or lex_compare(sub.objective, bound_key) < 0:
            bound_key = sub.objective
        devices = tuple(order[i] for i in sub.devices)
        if realisable(engine, problem.tables, devices, address) and (best is None or lex_compare(sub.objective, best.objective) < 0):
            best = replace(sub, devices=devices)
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
