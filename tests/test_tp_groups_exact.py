"""One pipeline over disjoint TP groups: the relaxation + configuration search agrees with an
independent brute force over every ordered sequence of pairwise disjoint groups (seeded)."""

from __future__ import annotations

import itertools
import random

import pytest

from partitioner import solvers
from partitioner.costs.groups import candidate_groups, disjoint, group_tables
from partitioner.deploy.groups import solve_groups, to_plan
from partitioner.models.cluster import ClusterSpec
from partitioner.models.llm import ModelSpec
from partitioner.problem import Problem, evaluate, lex_compare, objective_key


def _instance(seed: int) -> tuple[ModelSpec, ClusterSpec]:
    rng = random.Random(seed)
    L = rng.randint(3, 5)
    gpus = ["l4", "t4", "a100-40gb"]
    cost = {}
    for g in gpus:
        c = rng.uniform(1, 5) * 1e-3
        cost[g] = c
        for t in (2, 4):
            if rng.random() < 0.6:
                cost[f"{g}x{t}"] = c / t * rng.uniform(0.8, 1.6)  # measured group keys, some missing
    layers = [{"name": f"l{i}", "cost": {k: v * rng.uniform(0.7, 1.3) for k, v in cost.items()},
               "memory_gb": rng.uniform(3, 9), "out_bytes": rng.choice([1e5, 1e6])} for i in range(L)]
    model = ModelSpec.model_validate({"name": "rand", "layers": layers})
    devices = []
    for n in range(rng.randint(1, 2)):
        kind = rng.choice(gpus)
        for k in range(rng.choice([2, 3, 4]) if n == 0 else rng.choice([1, 2])):
            devices.append({"name": f"n{n}g{k}", "gpu": kind if rng.random() < 0.8 else rng.choice(gpus), "node": f"n{n}"})
    cluster = ClusterSpec.model_validate({"devices": devices, "links": {"intra_node": "pcie4", "inter_node": "10gbe"},
                                          "reserve_gb": 1.0, "tp": rng.choice([[1, 2], [1, 2, 4], [2, 4]])})
    return model, cluster


def _brute(model: ModelSpec, cluster: ClusterSpec, objective: str, uniform: bool = False) -> tuple[float, ...] | None:
    groups = candidate_groups(cluster)
    t = group_tables(model, cluster, groups)
    problem = Problem(t, M=4, objective=objective)  # type: ignore[arg-type]
    best = None
    for S in range(1, min(len(groups), t.L) + 1):
        for seq in itertools.permutations(range(len(groups)), S):
            if not disjoint([groups[r] for r in seq]):
                continue
            if uniform and len({groups[r].t for r in seq}) > 1:
                continue
            for inner in itertools.combinations(range(1, t.L), S - 1):
                m = evaluate(problem, seq, (0, *inner, t.L))
                if not m.fits:
                    continue
                key = objective_key(problem, m)
                if best is None or lex_compare(key, best) < 0:
                    best = key
    return best


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("objective", ["balanced", "throughput"])
def test_groups_agree_with_brute_force(seed: int, objective: str) -> None:
    model, cluster = _instance(seed)
    want = _brute(model, cluster, objective)
    make = lambda t: Problem(t, M=4, objective=objective)  # noqa: E731
    if want is None:
        with pytest.raises(Exception, match=r"needs|fits|fit"):
            solve_groups(model, cluster, make, lambda p: solvers.solve(p, "auto"))
        return
    gp = solve_groups(model, cluster, make, lambda p: solvers.solve(p, "auto"))
    assert gp.proven
    assert lex_compare(gp.solution.objective, want) == 0, (gp.solution.objective, want)
    used = [gp.groups[r] for r in gp.solution.devices]
    assert disjoint(used)
    plan = to_plan(gp, cluster)
    assert plan.optimal and plan.tau_max == pytest.approx(gp.solution.objective[0] if objective == "balanced" else plan.tau_max)
    for st in plan.stages:
        assert st.tp == len(st.members) or (st.tp == 1 and not st.members[1:])


@pytest.mark.parametrize("seed", range(6))
def test_uniform_tp_is_the_best_single_degree(seed: int) -> None:
    model, cluster = _instance(seed)
    make = lambda t: Problem(t, M=4)  # noqa: E731
    solve = lambda p: solvers.solve(p, "auto")  # noqa: E731
    try:
        gp = solve_groups(model, cluster, make, solve, uniform_tp=True)
    except Exception:
        return
    degrees = {gp.groups[r].t for r in gp.solution.devices}
    assert len(degrees) == 1
    want = _brute(model, cluster, "balanced", uniform=True)
    assert want is not None and lex_compare(gp.solution.objective, want) == 0 and gp.proven
    free = solve_groups(model, cluster, make, solve)
    assert lex_compare(free.solution.objective, gp.solution.objective) <= 0
