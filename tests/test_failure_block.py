"""What one machine's loss costs on explicit requests (partitioner.planning.failure): `--objective
serve|balanced|…`, `--replicas N|auto` and `--tp` runs on several machines show the block the
default answer shows, in the console and in --json, built by the same `failure_of`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_default_answer import PAIR

from partitioner.api import load_inputs
from partitioner.cli import main
from partitioner.deploy.kinds import node_kinds
from partitioner.planning.failure import request_failure, without_node
from partitioner.planning.pipeline import serve_plan
from partitioner.planning.request import PlanRequest
from partitioner.planning.serving import failure_of

MODEL = "examples/models/llama-3.1-8b.yaml"


@pytest.fixture
def pair(tmp_path: Path) -> Path:
    path = tmp_path / "pair.yaml"
    path.write_text(PAIR)
    return path


def _json(args: list[str]) -> dict:
    got = CliRunner().invoke(main, ["plan", *args, "--json"])
    assert got.exit_code == 0, got.output
    return json.loads(got.output[got.output.index("{"):])


def test_objective_serve_loses_to_the_serve_plan_of_the_machine_left(pair: Path) -> None:
    """One pipeline over both machines; without either, the serve search on the other alone."""
    doc = _json([MODEL, str(pair), "--objective", "serve"])
    m, c = load_inputs(MODEL, pair)
    alone = serve_plan(m, without_node(c, "n2")).serving.tokens_per_s
    f = doc["failure"]
    assert f["tokens_per_s"] == pytest.approx(doc["serving"]["tokens_per_s"])
    assert f["worst"] == {"kind": "a100-80gb", "machines": ["n1", "n2"], "tokens_per_s": pytest.approx(alone)}
    assert 0 < alone < f["tokens_per_s"]


def test_objective_balanced_loses_to_the_same_request_on_the_machine_left(pair: Path) -> None:
    """A τ objective: the same request (its workload's batch and in-flight count) planned again on
    the machine left, in --json and on the console; a loss the request no longer fits says so."""
    from partitioner.api import plan

    doc = _json([MODEL, str(pair), "--objective", "balanced"])
    m, c = load_inputs(MODEL, pair)
    alone = plan(m, without_node(c, "n2"), objective="balanced").serving.tokens_per_s
    f = doc["failure"]
    assert f["tokens_per_s"] == pytest.approx(doc["serving"]["tokens_per_s"])
    assert f["worst"]["tokens_per_s"] == pytest.approx(alone)
    out = CliRunner().invoke(main, ["plan", MODEL, str(pair), "--objective", "balanced"]).output
    assert f"one machine lost: worst case {alone:,.4g} tokens/s" in out
    from partitioner.cli._failure import failure_lines
    from partitioner.planning.serving import Failure, Loss

    lost = Loss(kind="a100-80gb", machines=("n1", "n2"), tokens_per_s=0.0)
    lines = failure_lines(Failure(tokens_per_s=100.0, losses=(lost,)))
    assert lines[1].endswith("0 tokens/s (the same request no longer fits)")


def test_replicas_n_keeps_the_replicas_that_survive(pair: Path) -> None:
    """--replicas 2 on two identical machines: without one, the one replica left (half)."""
    runner = CliRunner()
    got = runner.invoke(main, ["plan", MODEL, str(pair), "--replicas", "2"])
    assert got.exit_code == 0, got.output
    assert "one machine lost: worst case" in got.output and "(−50.0%)" in got.output
    doc = _json([MODEL, str(pair), "--replicas", "2"])
    total = sum(r["serving"]["tokens_per_s"] for r in doc["replicas"])
    assert doc["failure"]["worst"]["tokens_per_s"] == pytest.approx(total / 2)


def test_tp_groups_on_one_machine_show_no_block(tmp_path: Path) -> None:
    """One machine: nothing to lose, no block and no `failure` key (as before)."""
    one = tmp_path / "one.yaml"
    one.write_text(PAIR.replace("node: n2", "node: n1"))
    doc = _json([MODEL, str(one), "--tp", "uniform", "--objective", "serve"])
    assert "failure" not in doc


def test_without_node_drops_devices_pairs_nodes_and_tp(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("""name: c
devices:
  - {name: a0, gpu: l4, node: A}
  - {name: a1, gpu: l4, node: A}
  - {name: b0, gpu: l4, node: B}
nodes: {A: {address: 10.0.0.1}, B: {address: 10.0.0.2}}
pairs:
  - {from: a0, to: b0, latency_ms: 0.01, bandwidth_gb_s: 10}
  - {from: a0, to: a1, latency_ms: 0.01, bandwidth_gb_s: 10}
tp: {default: [1], A: [1, 2]}
""")
    _, c = load_inputs(MODEL, path)
    left = without_node(c, "B")
    assert [d.name for d in left.devices] == ["a0", "a1"] and list(left.nodes) == ["A"]
    assert [(p.from_, p.to) for p in left.pairs] == [("a0", "a1")] and "B" not in left.tp
    assert [d.name for d in without_node(c, "A").devices] == ["b0"] and c.devices[2].name == "b0"


def test_failure_of_names_every_kind_and_takes_the_least() -> None:
    """Hand-made: kinds of 2 and 1 machines; `without` sees each kind's count drop by one."""
    from partitioner.deploy.kinds import NodeKinds

    nk = NodeKinds(kinds=(((0,), (1,)), ((2, 3),)), labels=("l4", "2×t4"))
    seen = []

    def without(fewer: tuple[int, ...]) -> float:
        seen.append(fewer)
        return {(1, 1): 70.0, (2, 0): 40.0}[fewer]

    f = failure_of(nk, 100.0, lambda g: f"m{g}", without)
    assert seen == [(1, 1), (2, 0)]
    assert [(x.kind, x.machines, x.tokens_per_s) for x in f.losses] == [("l4", ("m0", "m1"), 70.0),
                                                                        ("2×t4", ("m2",), 40.0)]
    assert f.worst.kind == "2×t4" and f.to_dict()["worst"]["tokens_per_s"] == 40.0


def test_request_failure_is_none_on_one_machine_or_without_tokens(pair: Path, tmp_path: Path) -> None:
    m, c = load_inputs(MODEL, pair)
    one = without_node(c, "n2")
    plan = serve_plan(m, one)
    assert request_failure(PlanRequest(m, one, objective="serve"), plan) is None
    assert request_failure(PlanRequest(m, c, objective="serve"), None) is None
    assert node_kinds(c).counts == (2,)


def test_tp_node_serve_loses_to_the_same_request_on_the_machine_left(tmp_path: Path) -> None:
    import partitioner

    path = tmp_path / "quad.yaml"
    path.write_text("""name: quad
devices:
  - {name: a0, gpu: l4, node: n1}
  - {name: a1, gpu: l4, node: n1}
  - {name: b0, gpu: l4, node: n2}
  - {name: b1, gpu: l4, node: n2}
links:
  intra_node: pcie4
  inter_node: 10gbe
""")
    got = CliRunner().invoke(main, ["plan", MODEL, str(path), "--tp", "node", "--objective", "serve"])
    assert got.exit_code == 0, got.output
    assert "one machine lost: worst case" in got.output
    doc = _json([MODEL, str(path), "--tp", "node", "--objective", "serve"])
    m, c = load_inputs(MODEL, path)
    alone = partitioner.plan(m, without_node(c, "n2"), objective="serve", tp="node").serving.tokens_per_s
    assert doc["failure"]["worst"]["tokens_per_s"] == pytest.approx(alone)
    assert doc["failure"]["tokens_per_s"] == pytest.approx(doc["serving"]["tokens_per_s"])


def test_no_block_after_ctrl_c(pair: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while the answer was planned: the block's extra plans do not start."""
    from partitioner import interrupts
    from partitioner.planning import failure

    m, c = load_inputs(MODEL, pair)
    one = serve_plan(m, without_node(c, "n2"))
    mark = interrupts.count()
    monkeypatch.setattr(interrupts, "_seen", [interrupts._seen[0] + 1])  # what count_sigints' handler does
    monkeypatch.setattr(failure, "failure_of", lambda *a: pytest.fail("planned after Ctrl-C"))
    assert request_failure(PlanRequest(m, c, objective="serve"), one, mark) is None


def test_no_block_once_the_time_limit_is_spent(pair: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--time-limit spent by the answer: no extra plans, no partial block."""
    from partitioner.planning import routing
    from partitioner.solvers.budget import Budget

    m, c = load_inputs(MODEL, pair)
    one = serve_plan(m, without_node(c, "n2"))
    monkeypatch.setattr(routing, "route", lambda *a, **k: pytest.fail("planned with no time left"))
    assert request_failure(PlanRequest(m, c, objective="serve", budget=Budget(0.0)), one) is None


def test_console_says_when_the_block_was_not_planned() -> None:
    from partitioner.cli._failure import request_failure_lines

    assert request_failure_lines(None) == []
    assert request_failure_lines((None,)) == ["one machine lost: not planned (no time left under --time-limit, or Ctrl-C)"]
