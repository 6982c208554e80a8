"""TP-group plans restricted to the orders an engine launches (partitioner.deploy.launch): the
group search under vLLM's Ray rank rule and SGLang's equal-stages-per-node rule agrees with an
independent brute force over every ordered sequence of disjoint groups of one degree (seeded),
and the CLI's `--engine`/`--export` on the TP path prints a plan the engine runs as planned."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from partitioner.cli import main
from partitioner.costs.groups import candidate_groups, disjoint, group_tables
from partitioner.deploy.groups import solve_groups
from partitioner.deploy.launch import Launch
from partitioner.errors import InfeasibleError
from partitioner.export.vllm import ray_realises
from partitioner.models.cluster import ClusterSpec
from partitioner.models.llm import ModelSpec
from partitioner.problem import Problem, evaluate, lex_compare, objective_key

ROOT = Path(__file__).resolve().parents[1]


def _instance(seed: int) -> tuple[ModelSpec, ClusterSpec]:
    rng = random.Random(seed)
    L = rng.randint(3, 5)
    gpus = ["l4", "t4", "a100-40gb"]
    cost = {g: rng.uniform(1, 5) * 1e-3 for g in gpus}
    cost |= {f"{g}x2": c / 2 * rng.uniform(0.8, 1.4) for g, c in list(cost.items())}
    layers = [{"name": f"l{i}", "cost": {k: v * rng.uniform(0.7, 1.3) for k, v in cost.items()},
               "memory_gb": rng.uniform(3, 9), "out_bytes": 1e6} for i in range(L)]
    model = ModelSpec.model_validate({"name": "rand", "layers": layers})
    devices = [{"name": f"n{n}g{k}", "gpu": rng.choice(gpus), "node": f"n{n}"}
               for n in range(rng.randint(2, 3)) for k in range(rng.choice([1, 2, 2, 4]))]
    cluster = ClusterSpec.model_validate({"devices": devices, "links": {"intra_node": "pcie4", "inter_node": "10gbe"},
                                          "reserve_gb": 1.0, "tp": [1, 2]})
    return model, cluster


def _launches(engine: str, nodes: list[str], gpus: list[tuple[str, int]]) -> bool:
    """The engines' rules, written out again: vLLM's Ray rank order (export.vllm.ray_realises on
    every GPU, rank = pp_rank·tp + tp_rank); SGLang: contiguous nodes with equal stage counts."""
    runs = [n for k, n in enumerate(nodes) if k == 0 or nodes[k - 1] != n]
    if len(runs) != len(set(runs)):
        return len(set(nodes)) == 1
    if engine == "vllm":
        return len(set(nodes)) == 1 or ray_realises(gpus, {})
    return len({nodes.count(n) for n in set(nodes)}) == 1


def _brute(model: ModelSpec, cluster: ClusterSpec, engine: str) -> tuple[float, ...] | None:
    groups = candidate_groups(cluster)
    t = group_tables(model, cluster, groups)
    problem = Problem(t, M=4, objective="balanced")
    best = None
    for S in range(1, min(len(groups), t.L) + 1):
        for seq in itertools.permutations(range(len(groups)), S):
            chosen = [groups[r] for r in seq]
            if not disjoint(chosen) or len({g.t for g in chosen}) > 1:
                continue
            if not _launches(engine, [g.node for g in chosen], [(g.node, m) for g in chosen for m in g.members]):
                continue
            for inner in itertools.combinations(range(1, t.L), S - 1):
                m = evaluate(problem, seq, (0, *inner, t.L))
                if m.fits:
                    key = objective_key(problem, m)
                    if best is None or lex_compare(key, best) < 0:
                        best = key
    return best


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
@pytest.mark.parametrize("seed", range(10))
def test_launchable_group_plans_agree_with_brute_force(seed: int, engine: str) -> None:
    from partitioner import solvers

    model, cluster = _instance(seed)
    want = _brute(model, cluster, engine)

    def make(t):
        return Problem(t, M=4, objective="balanced")

    def solve(p):
        return solvers.solve(p, "auto")

    launch = Launch(engine, "auto")
    if want is None:
        with pytest.raises(InfeasibleError):
            solve_groups(model, cluster, make, solve, uniform_tp=True, launch=launch)
        return
    gp = solve_groups(model, cluster, make, solve, uniform_tp=True, launch=launch)
    got = objective_key(gp.problem, evaluate(gp.problem, gp.solution.devices, gp.solution.cuts))
    assert lex_compare(got, want) == 0, (got, want)
    chosen = [gp.groups[r] for r in gp.solution.devices]
    assert _launches(engine, [g.node for g in chosen], [(g.node, m) for g in chosen for m in g.members])
    assert gp.lower_bound <= want[0] * (1 + 1e-9)


def test_engine_on_the_tp_path_prints_a_plan_vllm_runs_as_planned(tmp_path: Path) -> None:
    model = str(ROOT / "examples" / "models" / "llama-3.1-8b.yaml")
    cluster = str(ROOT / "examples" / "clusters" / "a100-l4-t4.yaml")
    runner = CliRunner()
    free, launched = tmp_path / "free.json", tmp_path / "vllm.json"
    r = runner.invoke(main, ["plan", model, cluster, "--objective", "balanced", "--tp", "uniform", "--out", str(free), "--json"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(main, ["export", str(free), "--to", "vllm", "--strict"])
    assert r.exit_code == 5 and "vLLM's Ray executor" in r.output  # the fixture: Ray reorders it
    r = runner.invoke(main, ["plan", model, cluster, "--objective", "balanced", "--tp", "uniform", "--export", "vllm"])
    assert r.exit_code == 0 and "cannot express" not in r.output, r.output
    r = runner.invoke(main, ["plan", model, cluster, "--objective", "balanced", "--tp", "uniform", "--engine", "vllm", "--out", str(launched),
                             "--json"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(main, ["export", str(launched), "--to", "vllm", "--strict"])
    assert r.exit_code == 0 and "cannot express" not in r.output, r.output


@pytest.mark.parametrize("seed", range(6))
def test_serve_replica_keeps_to_the_launch_order(seed: int) -> None:
    """Each replica's serve search (partitioner.deploy.serve) under vLLM's rule: the plan it
    returns is launchable, and never beats the same search without the rule."""
    from partitioner.deploy.serve import serve_inputs

    model, cluster = _instance(seed)
    devices = list(range(len(cluster.devices)))
    kw = dict(tp="uniform", engine=None, regime="async", order="free", solver="auto", tpot_ms=None, ttft_ms=None,
              max_batch=4, deadline=None)
    free, _ = serve_inputs(model, cluster, **kw)
    ruled, _ = serve_inputs(model, cluster, launch=Launch("vllm"), **kw)
    try:
        want = free(devices)
    except InfeasibleError:
        return
    try:
        got = ruled(devices)
    except InfeasibleError:
        return  # nothing launchable fits: allowed, the free plan is not one vLLM runs
    gpus = [(st.node, cluster.devices.index(next(d for d in cluster.devices if d.name == m)))
            for st in got.stages for m in (st.members or (st.device,))]
    assert _launches("vllm", [st.node for st in got.stages], gpus)
    assert got.serving.tokens_per_s <= want.serving.tokens_per_s * (1 + 1e-9)
