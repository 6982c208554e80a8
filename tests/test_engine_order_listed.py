"""`plan --engine` when the engine's device orders are too many to search: the CLI says so in
one line and offers `--order fixed`, and that advice works: under `--order fixed` the plan is
the best the engine launches in the listed order (partitioner.solvers.engine_listed), equal to a
brute force over every ascending device sequence the engine realises."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_engine_order import tables

from partitioner.cli import main
from partitioner.problem import Problem, evaluate, lex_compare, objective_key
from partitioner.solvers import engine_listed, engine_order, engine_sequences

MODEL = Path(__file__).resolve().parents[1] / "examples" / "models" / "llama-3.1-8b.yaml"


def _cluster(tmp_path: Path) -> Path:
    """Five hosts with an L4 and a T4 each and a sixth with one L4: 6!·2^5 + 11 = 23,051 orders."""
    rows = [f"  - {{name: n{n}-{gpu}, gpu: {gpu}, node: n{n}}}\n" for n in range(6) for gpu in ("l4", "t4")
            if (n, gpu) != (5, "t4")]
    path = tmp_path / "hosts.yaml"
    path.write_text("devices:\n" + "".join(rows) + "links: {intra_node: pcie4, inter_node: 10gbe}\norder: free\n")
    return path


def test_too_many_orders_is_one_line_offering_order_fixed(tmp_path: Path) -> None:
    cluster = _cluster(tmp_path)
    args = ["plan", str(MODEL), str(cluster), "--engine", "sglang", "--objective", "balanced"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2, r.output
    lines = [x for x in r.output.splitlines() if x.strip()]
    assert lines == [
        "error: --engine sglang: the 6 nodes can be launched in 23,051 device orders, too many to search "
        "(limit 20,000); list the devices in cluster.yaml in the order sglang launches them (each node's GPUs "
        "together) and plan with --order fixed, which searches only the splits of that order"
    ]
    # the advice works: the listed order is searched for plans SGLang launches
    out = tmp_path / "plan.json"
    ok = CliRunner().invoke(main, [*args, "--order", "fixed", "--json", "--out", str(out)])
    assert ok.exit_code == 0, ok.output
    doc = json.loads(out.read_text())
    names = [st["device"] for st in doc["stages"]]
    listed = [f"n{n}-{gpu}" for n in range(6) for gpu in ("l4", "t4") if (n, gpu) != (5, "t4")]
    assert [listed.index(x) for x in names] == sorted(listed.index(x) for x in names)  # the listed order
    per_node = [sum(1 for x in names if x.startswith(f"n{n}-")) for n in range(6)]
    assert len({c for c in per_node if c}) == 1  # SGLang: the same number of stages on every node used
    assert doc["optimal"]


def _brute_listed(problem: Problem, engine: str) -> tuple[float, ...] | None:
    best = None
    L, G = problem.L, problem.G
    for S in range(1, min(G, L) + 1):
        for devices in itertools.combinations(range(G), S):
            if not engine_sequences.realisable(engine, problem.tables, devices, {}):
                continue
            for inner in itertools.combinations(range(1, L), S - 1):
                m = evaluate(problem, devices, (0, *inner, L))
                if m.fits:
                    key = objective_key(problem, m)
                    if best is None or lex_compare(key, best) < 0:
                        best = key
    return best


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_listed_order_plan_equals_brute_force(seed: int, engine: str) -> None:
    t = tables(seed)
    problem = Problem(t, M=4, order="fixed")
    seqs = list(engine_listed.listed_sequences(engine, t))
    assert len(seqs) == len(set(seqs)) and all(list(s) == sorted(s) for s in seqs)
    assert len(seqs) <= engine_listed.listed_count(engine, t)
    want = _brute_listed(problem, engine)
    if want is None:
        with pytest.raises(Exception, match="launch|fits"):
            engine_order.solve(problem, engine)
        return
    sol = engine_order.solve(problem, engine)
    assert list(sol.devices) == sorted(sol.devices)
    assert engine_sequences.realisable(engine, t, sol.devices, {})
    assert lex_compare(sol.objective, want) == 0
