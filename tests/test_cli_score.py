"""`partition score`: an engine's split or a layout scored with the plan's closed forms."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_plan_metadata import write

from partitioner.cli import main
from partitioner.export import llamacpp


def run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.stdout, r.stderr


def test_vllm_split_scored_by_hand(tmp_path: Path) -> None:
    m, c = write(tmp_path)  # embed 1 ms, 6 blocks of 10 ms, head 2 ms on a T4
    code, out, err = run("score", str(m), str(c), "--split", "vllm:2,4", "--devices", "a0,b0", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert [s["tau"] for s in doc["given"]["stages"]] == pytest.approx([0.021, 0.042])  # embedding on rank 0, head on the last
    assert doc["given"]["tau_max"] == pytest.approx(0.042) and doc["optimal"]["tau_max"] <= 0.042
    code, out, _ = run("score", str(m), str(c), "--split", "vllm:2,4", "--devices", "a0,b0")
    assert code == 0 and "42 ms" in out and "yours" in out and "optimal" in out


def test_layout_yaml_and_llamacpp_ts(tmp_path: Path) -> None:
    m, c = write(tmp_path)
    layout = tmp_path / "layout.yaml"
    layout.write_text("replicas:\n  - stages:\n      - {devices: [b0], layers: [0, 3]}\n      - {devices: [a0], layers: [3, 6]}\n")
    code, out, _ = run("score", str(m), str(c), "--layout", str(layout), "--json")
    assert code == 0 and [s["device"] for s in json.loads(out)["given"]["stages"]] == ["b0", "a0"]
    assert [s["tau"] for s in json.loads(out)["given"]["stages"]] == pytest.approx([0.031, 0.032])
    code, out, _ = run("score", str(m), str(c), "--split", "llamacpp:1,1", "--devices", "a0,b0", "--json")
    counts = llamacpp.replay([1, 1], 6)
    assert code == 0 and [s["decoder_layers"] for s in json.loads(out)["given"]["stages"]] == [counts[0], counts[1] - 1]


def test_score_errors(tmp_path: Path) -> None:
    m, c = write(tmp_path)
    for args, needle in (
        (["--split", "vllm:2,3", "--devices", "a0,b0"], "the counts sum to 5, but the model has 6 decoder layers"),
        (["--split", "vllm:3,3", "--devices", "a0,zz"], "unknown devices ['zz']"),
        (["--split", "ollama:3,3", "--devices", "a0,b0"], "--split takes ENGINE:a,b,..."),
        (["--split", "vllm:6"], "give --split ENGINE:a,b,... with --devices"),
        (["--split", "vllm:3,3", "--devices", "a0"], "2 stages but 1 devices"),
    ):
        code, _, err = run("score", str(m), str(c), *args)
        assert code == 2 and needle in err and err.count("\n") == 1, (args, err)
    bad = tmp_path / "bad.yaml"
    bad.write_text("replicas:\n  - stages:\n      - {devices: [a0], layers: [1, 6]}\n")
    code, _, err = run("score", str(m), str(c), "--layout", str(bad))
    assert code == 2 and "replicas[0].stages[0].layers" in err


def test_engine_of_the_split_restricts_the_optimum_and_flags_an_order_it_would_not_launch(tmp_path: Path) -> None:
    """a0, a1 on node A and b0 on B: a0 -> b0 -> a1 leaves A and comes back, which no multi-host
    engine launches (stages of one node are consecutive); --split vllm: sets --engine vllm."""
    from test_plan_metadata import MODEL

    from partitioner.solvers import engine_sequences

    m = tmp_path / "m.yaml"
    m.write_text(MODEL)
    c = tmp_path / "c.yaml"
    c.write_text("devices:\n  - {name: a0, gpu: t4, node: A}\n  - {name: a1, gpu: t4, node: A}\n"
                 "  - {name: b0, gpu: t4, node: B}\nnodes:\n  A: {address: 10.0.0.1}\n  B: {address: 10.0.0.2}\n")
    code, out, err = run("score", str(m), str(c), "--split", "vllm:2,2,2", "--devices", "a0,b0,a1", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["engine"] == "vllm" and doc["given_launchable"] is False
    assert "note: vllm would not launch the stages in this device order" in err
    names = ["a0", "a1", "b0"]
    from partitioner.api import tables_for

    t = tables_for(str(m), str(c))
    best = [names.index(s["device"]) for s in doc["optimal"]["stages"]]
    assert engine_sequences.realisable("vllm", t, best, {"A": "10.0.0.1", "B": "10.0.0.2"})
    code, out, err = run("score", str(m), str(c), "--split", "vllm:2,2,2", "--devices", "a0,b0,a1", "--engine",
                         "llamacpp", "--json")
    assert code == 0 and json.loads(out)["given_launchable"] is True and "note:" not in err
    code, out, err = run("score", str(m), str(c), "--split", "vllm:3,3", "--devices", "a0,a1", "--json")
    assert code == 0 and json.loads(out)["given_launchable"] is True and "note:" not in err


def test_score_engine_must_be_a_preset(tmp_path: Path) -> None:
    m, c = write(tmp_path)
    code, _, err = run("score", str(m), str(c), "--split", "vllm:3,3", "--devices", "a0,b0", "--engine", "ollama")
    assert code == 2 and "ollama" in err and "vllm" in err


def test_score_prints_the_workloads_decode_beside_the_optimum(tmp_path: Path) -> None:
    """With a workload (the preset model's), both plans' closed-loop decode at its B and K, and TPOT."""
    root = Path(__file__).resolve().parents[1] / "examples"
    code, out, err = run("score", str(root / "models" / "qwen2.5-14b.yaml"), str(root / "clusters" / "seed.yaml"),
                         "--split", "vllm:16,16,16", "--devices", "laptop-5090,node02-3090,node03-3090")
    assert code == 0, err
    line = next(x for x in out.splitlines() if x.startswith("decode B="))
    yours, best = (float(v.replace(",", "")) for v in line.split()[-4::2])
    assert yours > 0 and best > 0  # (the optimum is balanced-optimal, not always the most tokens/s)
    code, js, _ = run("score", str(root / "models" / "qwen2.5-14b.yaml"), str(root / "clusters" / "seed.yaml"),
                      "--split", "vllm:16,16,16", "--devices", "laptop-5090,node02-3090,node03-3090", "--json")
    doc = json.loads(js)
    assert float(doc["given"]["serving"]["tokens_per_s"]) == pytest.approx(yours, rel=1e-3)
    assert "TPOT" in out
