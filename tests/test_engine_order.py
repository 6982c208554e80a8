"""`plan --engine`: the restricted plan against brute force over every plan the engine realises."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from partitioner.problem import CostTables, Problem, evaluate, lex_compare, objective_key
from partitioner.solvers import engine_order, engine_sequences


def tables(seed: int) -> CostTables:
    rng = np.random.default_rng(seed)
    nodes = [("A", "A", "B", "C"), ("A", "B", "B", "C", "C"), ("A", "A", "B", "B")][seed % 3]
    G, L = len(nodes), 5
    speed = rng.uniform(0.5, 3.0, size=G)
    lat = rng.uniform(0.0, 0.4, size=(G, G))
    for g in range(G):
        for h in range(G):
            if nodes[g] == nodes[h]:
                lat[g, h] = 0.01
    return CostTables(
        cost=np.outer(speed, rng.uniform(0.5, 1.5, size=L)), memory_gb=np.ones(L), cut_bytes=np.zeros(L),
        capacity_gb=rng.integers(2, 5, size=G).astype(float), latency_s=lat, bandwidth_Bps=np.full((G, G), np.inf),
        layer_names=tuple(f"l{i}" for i in range(L)), device_names=tuple(f"d{g}" for g in range(G)),
        gpu_names=("t4",) * G, node_names=nodes,
    )


def brute(problem: Problem, engine: str, address: dict[str, str]) -> tuple[float, ...] | None:
    best = None
    L, G = problem.L, problem.G
    for S in range(1, min(G, L) + 1):
        for inner in itertools.combinations(range(1, L), S - 1):
            cuts = (0, *inner, L)
            for devices in itertools.permutations(range(G), S):
                if not engine_sequences.realisable(engine, problem.tables, devices, address):
                    continue
                m = evaluate(problem, devices, cuts)
                if m.fits:
                    key = objective_key(problem, m)
                    if best is None or lex_compare(key, best) < 0:
                        best = key
    return best


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_restricted_plan_equals_brute_force(seed: int, engine: str) -> None:
    rng = random.Random(seed)
    t = tables(seed)
    problem = Problem(t, M=rng.choice([1, 4, 8]), regime=rng.choice(["async", "blocking"]), objective=rng.choice(["balanced", "throughput", "makespan"]))
    names = sorted(set(t.node_names))
    address = dict(zip(names, (f"10.0.0.{k}" for k in rng.sample(range(1, 20), len(names))), strict=True)) if seed % 2 else {}
    want = brute(problem, engine, address)
    sol = engine_order.solve(problem, engine, address=address)
    assert engine_sequences.realisable(engine, t, sol.devices, address)
    assert sol.optimal and lex_compare(objective_key(problem, evaluate(problem, sol.devices, sol.cuts)), want) == 0  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_covering_fallback_gives_a_valid_bound(seed: int, engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_sequences, "sequence_count", lambda *a: engine_order.MAX_SUBPROBLEMS + 1)
    rng = random.Random(seed)
    t = tables(seed)
    problem = Problem(t, M=rng.choice([1, 4, 8]), regime=rng.choice(["async", "blocking"]), objective=rng.choice(["balanced", "throughput"]))
    names = sorted(set(t.node_names))
    address = dict(zip(names, (f"10.0.0.{k}" for k in rng.sample(range(1, 20), len(names))), strict=True)) if seed % 2 else {}
    want = brute(problem, engine, address)
    assert want is not None
    sol = engine_order.solve(problem, engine, address=address)
    assert engine_sequences.realisable(engine, t, sol.devices, address)
    got = objective_key(problem, evaluate(problem, sol.devices, sol.cuts))
    assert lex_compare(got, want) >= 0  # a realisable plan cannot beat the realisable optimum
    assert sol.lower_bound <= want[0] * (1 + 1e-9)
    if sol.optimal:
        assert lex_compare(got, want) == 0


def test_vllm_restriction_changes_the_plan_when_ray_would_reorder() -> None:
    # node B's GPU 1 is fast and GPU 0 is slow; the free optimum wants them in the order Ray refuses
    nodes = ("A", "B", "B")
    cost = np.array([[1.0, 1, 1, 1, 1, 1], [9, 9, 9, 9, 9, 9], [1, 1, 1, 1, 1, 1]])
    t = CostTables(
        cost=cost, memory_gb=np.ones(6), cut_bytes=np.zeros(6), capacity_gb=np.array([2.0, 2.0, 2.0]),
        latency_s=np.zeros((3, 3)), bandwidth_Bps=np.full((3, 3), np.inf), layer_names=tuple("abcdef"),
        device_names=("a0", "b0", "b1"), gpu_names=("t4",) * 3, node_names=nodes,
    )
    problem = Problem(t, order="free")
    sol = engine_order.solve(problem, "vllm")
    assert engine_sequences.realisable("vllm", t, sol.devices, {})
    assert t.node_names[sol.devices[0]] in ("A", "B")
    assert lex_compare(sol.objective, brute(problem, "vllm", {})) == 0  # type: ignore[arg-type]


def test_forced_subproblem_uses_every_device() -> None:
    t = tables(0)
    problem = Problem(t, M=4, objective="makespan")  # the links are in the first component
    seq = (3, 0, 1)
    sub_problem, big = engine_order.forced(problem, seq)
    sol = __import__("partitioner.solvers", fromlist=["solve"]).solve(sub_problem, "dp")
    assert sol.devices == (0, 1, 2) and sol.objective[0] < big / 2
    # and it is the best split over cut points of the whole sequence (brute force over the cuts)
    best = min(
        (objective_key(problem, evaluate(problem, seq, (0, *c, problem.L))) for c in itertools.combinations(range(1, problem.L), 2)
         if evaluate(problem, seq, (0, *c, problem.L)).fits),
        key=lambda k: k,
    )
    assert lex_compare(objective_key(problem, evaluate(problem, seq, sol.cuts)), best) == 0


def test_plan_engine_flag_end_to_end(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from click.testing import CliRunner

    from partitioner.cli import main
    from partitioner.export import render

    out = tmp_path / "plan.json"
    r = CliRunner().invoke(main, ["plan", "examples/models/qwen2.5-14b.yaml", "examples/clusters/seed.yaml", "--engine", "vllm",
                                  "--objective", "balanced", "--json", "--out", str(out)])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(out.read_text())
    assert "gtx-1070" not in [s["gpu"] for s in doc["stages"]] and "leaves out 'node03-1070'" in r.stderr
    exported = render(doc, "vllm")
    assert exported.problems() == [] and doc["optimal"]


@pytest.mark.parametrize("seed", range(8))
def test_one_gpu_per_node_vllm_is_exact(seed: int) -> None:
    rng = np.random.default_rng(seed)
    G, L = 4, 5
    lat = rng.uniform(0.0, 0.5, size=(G, G))
    t = CostTables(
        cost=np.outer(rng.uniform(0.5, 3.0, size=G), rng.uniform(0.5, 1.5, size=L)), memory_gb=np.ones(L),
        cut_bytes=np.zeros(L), capacity_gb=rng.integers(2, 5, size=G).astype(float), latency_s=lat,
        bandwidth_Bps=np.full((G, G), np.inf), layer_names=tuple(f"l{i}" for i in range(L)),
        device_names=tuple(f"d{g}" for g in range(G)), gpu_names=("t4",) * G, node_names=("n3", "n1", "n2", "n0"),
    )
    problem = Problem(t, M=4, objective="balanced")
    sol = engine_order.solve(problem, "vllm")
    assert sol.optimal and engine_sequences.realisable("vllm", t, sol.devices, {})
    assert lex_compare(objective_key(problem, evaluate(problem, sol.devices, sol.cuts)), brute(problem, "vllm", {})) == 0  # type: ignore[arg-type]
