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
