"""The serve objective under an engine's device-order rule (solvers.engine_rule.OrderRule in
serving.search): every split it returns is one the engine launches, and it agrees with a brute
force over the launchable splits only (seeded)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from test_serving import _brute_best, _hand_tables

from partitioner.cli import main
from partitioner.errors import InfeasibleError
from partitioner.export.vllm import ray_realises
from partitioner.problem import CostTables, Problem
from partitioner.serving.search import search
from partitioner.solvers.engine_rule import OrderRule

ROOT = Path(__file__).resolve().parents[1]
NODES = ("a", "a", "b")  # two GPUs on node a, one on node b


def _launches(engine: str, t: CostTables, devices: tuple[int, ...]) -> bool:
    """vLLM: contiguous nodes in Ray's rank order (ordinal = position among the node's GPUs);
    SGLang: contiguous nodes with equal stage counts; one node: any order."""
    nodes = [t.node_names[g] for g in devices]
    runs = [n for k, n in enumerate(nodes) if k == 0 or nodes[k - 1] != n]
    if len(set(nodes)) == 1:
        return True
    if len(runs) != len(set(runs)):
        return False
    if engine == "vllm":
        return ray_realises([(t.node_names[g], t.node_names[:g].count(t.node_names[g])) for g in devices], {})
    return len({nodes.count(n) for n in set(nodes)}) == 1


@settings(max_examples=8, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), regime=st.sampled_from(["async", "blocking"]),
       engine=st.sampled_from(["vllm", "sglang"]))
def test_serve_under_the_engine_rule_agrees_with_brute_force(seed, regime, engine):
    rng = np.random.default_rng(seed)
    plain, Bmax = _hand_tables(rng, G=3, L=5)
    tables = {B: dataclasses.replace(t, node_names=NODES) for B, t in plain.items()}
    rule = OrderRule(engine)
    want = _brute_best(tables, regime, keep=lambda t, devices: _launches(engine, t, devices))
    try:
        res = search(tables.__getitem__, list(range(1, Bmax + 1)), regime=regime, order="free", rule=rule)
    except InfeasibleError:
        assert want == 0.0
        return
    best = res.best
    assert _launches(engine, best.problem.tables, best.solution.devices)
    got = best.serving.tokens_per_s
    assert got <= want * (1 + 1e-9)  # a launchable split
    assert res.upper_bound >= want * (1 - 1e-9)
    if res.proven:
        assert got == pytest.approx(want, rel=1e-9)


def test_cli_serve_with_an_engine_prints_a_plan_it_launches(tmp_path: Path) -> None:
    out = tmp_path / "serve.json"
    r = CliRunner().invoke(main, ["plan", str(ROOT / "examples" / "models" / "llama-3.1-8b.yaml"),
                                  str(ROOT / "examples" / "clusters" / "seed.yaml"), "--objective", "serve",
                                  "--engine", "vllm", "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    assert "does not restrict the device order" not in r.output
    e = CliRunner().invoke(main, ["export", str(out), "--to", "vllm", "--strict"])
    assert e.exit_code == 0, e.output  # launchable, and no GPU below vLLM's compute capability 7.0


def test_rule_admits_only_launchable_splits_without_excluded_gpus() -> None:
    rng = np.random.default_rng(0)
    plain, _ = _hand_tables(rng, G=3, L=5)
    t = dataclasses.replace(plain[1], node_names=NODES)
    problem = Problem(t, M=1, objective="throughput")
    sol = dataclasses.replace(_any_solution(), devices=(2, 0, 1), cuts=(0, 1, 3, 5))
    assert OrderRule("vllm").admits(problem, sol)  # b is the driver, then a's GPUs ascending
    assert not OrderRule("vllm").admits(problem, dataclasses.replace(sol, devices=(2, 1, 0)))
    assert not OrderRule("vllm", exclude=(1,)).admits(problem, sol)


def _any_solution():
    from partitioner.problem import Solution

    return Solution((0,), (0, 5), "hand", True, (1.0,), 1.0)
