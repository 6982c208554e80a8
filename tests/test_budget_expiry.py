"""A time limit that expires is never a proof: `--replicas auto` stopped before any replica was
solved answers one pipeline over every device, "not proven", exit 0 (it said "no set of nodes can
hold the model", exit 3). The limit here (1 ms) is spent before the first replica solve, whatever
the machine's load, so the test needs no clock."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from partitioner.cli import main

REPO = Path(__file__).resolve().parents[1]
MODEL = REPO / "examples/models/llama2-70b-helix-profile.yaml"
CLUSTER = REPO / "examples/clusters/helix-a100-l4-t4.yaml"


@pytest.mark.parametrize("objective", ["balanced", "serve"])
def test_replica_search_stopped_by_the_limit_is_not_proven_not_infeasible(objective: str) -> None:
    res = CliRunner().invoke(main, ["plan", str(MODEL), str(CLUSTER), "--objective", objective, "--replicas", "auto",
                                    "--time-limit", "0.001", "--json"])
    assert res.exit_code == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["optimal"] is False and doc["stopped"] == "time_limit" and len(doc["replicas"]) == 1
    assert all(r["feasible"] for r in doc["replicas"])


def test_a_real_infeasibility_is_still_exit_3(tmp_path: Path) -> None:
    small = tmp_path / "c.yaml"
    small.write_text("devices:\n  - {name: a, gpu: t4, node: n0}\n  - {name: b, gpu: t4, node: n1}\n")
    res = CliRunner().invoke(main, ["plan", str(MODEL), str(small), "--replicas", "auto", "--time-limit", "0.001"])
    assert res.exit_code == 3, res.stderr


@pytest.mark.parametrize("objective", ["balanced", "serve"])
def test_ctrl_c_caught_inside_a_replica_solve_stops_the_whole_search(objective: str,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A sub-solve turns Ctrl-C into its plan so far (it may even be proven); the replica search
    must stop there with the best deployment so far, not run on and report "optimal". The SIGINT
    is simulated where the CLI's handler counts it (partitioner.interrupts), at the 3rd solve."""
    from partitioner import interrupts, solvers

    real = solvers.solve
    calls = [0]

    def solve_then_sigint(problem, name="auto", *a, **k):  # type: ignore[no-untyped-def]
        calls[0] += 1
        try:
            return real(problem, name, *a, **k)
        finally:  # also when the solve raises (a bisection's solve at a batch that does not fit)
            if calls[0] == 3:
                interrupts._seen[0] += 1  # what count_sigints' handler does on Ctrl-C

    monkeypatch.setattr(solvers, "solve", solve_then_sigint)
    res = CliRunner().invoke(main, ["plan", str(REPO / "examples/models/llama-3.1-8b.yaml"),
                                    str(REPO / "examples/clusters/l4x8.yaml"), "--objective", objective,
                                    "--replicas", "auto", "--json"])
    assert calls[0] <= 4  # nothing but the solve in progress ran after the interrupt
    if res.exit_code == 130:  # stopped before a whole replica was solved: one line, no second solve
        assert [ln for ln in res.stderr.splitlines() if ln.strip()] == ["error: interrupted (Ctrl-C) before the command had a result; nothing was written"]
        return
    assert res.exit_code == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["stopped"] == "interrupted" and doc["optimal"] is False


def test_after_ctrl_c_no_new_exact_solve_starts_so_a_report_stops(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """`report` runs many solves; the one running at Ctrl-C returns its plan, and no later one
    starts (partitioner.interrupts.no_new_solve), so the command ends within one solve's check
    interval (it ran 80 s on after a SIGINT), and writes the report of what it has, naming what
    Ctrl-C cut. Simulated at the first exact solve."""
    from partitioner import interrupts
    from partitioner.solvers import dp

    real = dp.solve
    solved = [0]

    def solve_then_sigint(*a, **k):  # type: ignore[no-untyped-def]
        found = real(*a, **k)  # after the Ctrl-C: KeyboardInterrupt before any work
        solved[0] += 1
        if solved[0] == 1:
            interrupts._seen[0] += 1  # what count_sigints' handler does on Ctrl-C
        return found

    monkeypatch.setattr(dp, "solve", solve_then_sigint)
    out = tmp_path / "r.json"
    res = CliRunner().invoke(main, ["report", str(REPO / "examples/models/llama-3.1-8b.yaml"),
                                    str(REPO / "examples/clusters/l4x8.yaml"), "--pareto-max-M", "2",
                                    "--json", str(out)])
    assert res.exit_code == 0 and solved[0] == 1, (res.exit_code, solved, res.stderr[-300:])
    data = json.loads(out.read_text())
    assert data["plans"]["balanced"]["optimal"] and data["headline"] is not None
    assert any(c.endswith("cut short by Ctrl-C") for c in data["cut"]) and "Cut short" in res.output


def test_no_new_solve_outside_a_command_is_inert() -> None:
    from partitioner import interrupts

    interrupts.no_new_solve()  # no handler installed, nothing counted: no effect on the Python API
    restore = interrupts.count_sigints()
    interrupts._seen[0] += 1
    with pytest.raises(KeyboardInterrupt):
        interrupts.no_new_solve()
    restore()
    interrupts.no_new_solve()  # the command ended: inert again
