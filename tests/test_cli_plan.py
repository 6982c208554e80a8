"""`partition plan` end to end on the bundled examples (issue 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from partitioner.cli import main

ROOT = Path(__file__).resolve().parents[1]
MODEL = str(ROOT / "examples/models/qwen2.5-14b.yaml")
SEED = str(ROOT / "examples/clusters/seed.yaml")


def run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.stdout, r.stderr


def test_seed_plan_table() -> None:
    code, out, err = run("plan", MODEL, SEED, "--objective", "balanced")
    assert code == 0, err
    for text in ("laptop-5090", "τ_max", "T_async", "T_block", "GPipe estimate", "gain over even (vLLM)",
                 "solver dp: proven optimal"):
        assert text in out


def test_json_is_byte_identical_and_beats_every_feasible_baseline() -> None:
    code, first, _ = run("plan", MODEL, SEED, "--objective", "balanced", "--json")
    _, second, _ = run("plan", MODEL, SEED, "--objective", "balanced", "--json")
    assert code == 0 and first == second
    plan = json.loads(first)
    assert plan["optimal"] is True and plan["solver"] == "dp"
    assert plan["lower_bound"] == pytest.approx(plan["tau_max"])
    assert [s["start"] for s in plan["stages"]][0] == 0 and plan["stages"][-1]["end"] == plan["num_layers"]
    for baseline in ("even", "memory", "params", "speed"):
        _, text, _ = run("plan", MODEL, SEED, "--objective", "balanced", "--json", "--solver", baseline)
        other = json.loads(text)
        assert other["optimal"] is False
        if other["feasible"]:
            assert plan["tau_max"] <= other["tau_max"] * (1 + 1e-9)
    even = json.loads(run("plan", MODEL, SEED, "--objective", "balanced", "--json", "--solver", "even")[1])
    assert not even["feasible"] and "gtx-1070" in even["reason"]  # vLLM's even split overflows the 1070


def test_fixed_order_never_beats_free_order() -> None:
    free = json.loads(run("plan", MODEL, SEED, "--objective", "balanced", "--json")[1])
    fixed = json.loads(run("plan", MODEL, SEED, "--objective", "balanced", "--json", "--order", "fixed")[1])
    assert free["tau_max"] <= fixed["tau_max"] * (1 + 1e-9)
    names = [s["device"] for s in fixed["stages"]]
    listed = ["laptop-5090", "node02-3090", "node03-3090", "node03-1070"]
    assert names == [n for n in listed if n in names]


def test_blocking_makespan_objective() -> None:
    code, out, _ = run("plan", MODEL, SEED, "--json", "--regime", "blocking", "--objective", "makespan", "--M", "32")
    plan = json.loads(out)
    assert code == 0 and plan["regime"] == "blocking" and plan["M"] == 32
    assert plan["objective_value"] == [pytest.approx(plan["T_block"])]


def test_out_writes_plan_and_refuses_to_clobber(tmp_path: Path) -> None:
    target = tmp_path / "plan.json"
    code, _, _ = run("plan", MODEL, SEED, "--objective", "balanced", "--out", str(target))
    assert code == 0 and json.loads(target.read_text())["format"] == "partitioner.plan/1"
    assert run("plan", MODEL, SEED, "--objective", "balanced", "--out", str(target))[0] == 0  # its own file may be refreshed
    mine = tmp_path / "notes.json"
    mine.write_text("my notes")
    code, _, err = run("plan", MODEL, SEED, "--objective", "balanced", "--out", str(mine))
    assert code == 2 and "not written by partitioner" in err and mine.read_text() == "my notes"
    code, _, err = run("plan", MODEL, SEED, "--objective", "balanced", "--out", MODEL)
    assert code == 2 and "refusing to overwrite an input file" in err


def test_export_option_prints_engine_config() -> None:
    code, out, _ = run("plan", MODEL, SEED, "--objective", "balanced", "--export", "vllm")
    assert code == 0
    import re

    # one `vllm serve` per node (its multi-node launch), each with the same partition
    [part] = set(re.findall(r"^(?:\S+=\S+ )*VLLM_PP_LAYER_PARTITION=([0-9,]+) ", out, re.M))
    counts = [int(c) for c in part.split(",")]
    assert sum(counts) == 48  # Qwen2.5-14B has 48 decoder layers; vLLM checks the sum
    assert "gtx-1070" not in out  # --export vllm plans without the GPU vLLM cannot run (CC 6.1 < 7.0)


def test_model_that_cannot_fit_exits_3(tmp_path: Path) -> None:
    cluster = tmp_path / "small.yaml"
    cluster.write_text("devices:\n  - {name: old, gpu: gtx-1070}\n  - {name: older, gpu: gtx-1070}\n")
    code, out, err = run("plan", MODEL, str(cluster), "--objective", "balanced")
    assert code == 3 and out == ""
    assert len(err.strip().splitlines()) == 1 and "GB" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("plan", MODEL, "missing.yaml"), "missing.yaml"),
        (("plan", MODEL, SEED, "--M", "0"), "--M"),
        (("plan", MODEL, SEED, "--solver", "greedy"), "--solver"),
        (("plan", MODEL, SEED, "--time-limit", "-1"), "--time-limit"),
        (("plan", SEED, SEED), "seed.yaml"),
    ],
)
def test_bad_input_exits_2_with_one_line(args: tuple[str, ...], needle: str) -> None:
    code, _, err = run(*args)
    assert code == 2 and needle in err and "Traceback" not in err


def test_python_api_matches_cli() -> None:
    import partitioner

    plan = partitioner.plan(MODEL, SEED, objective="balanced")
    doc = json.loads(run("plan", MODEL, SEED, "--objective", "balanced", "--json")[1])
    assert doc.pop("failure")["tokens_per_s"] == pytest.approx(plan.serving.tokens_per_s)  # the CLI's loss block
    assert json.loads(plan.to_json()) == doc
    assert plan.analysis(M=8).T_async == pytest.approx(plan.T_async)
    model, cluster = partitioner.load_model(MODEL), partitioner.load_cluster(SEED)
    assert partitioner.plan(model, cluster, objective="balanced", solver="cpsat", time_limit_s=5).tau_max == pytest.approx(
        plan.tau_max, rel=1e-6
    )


def test_time_limit_counts_from_the_start_of_the_command() -> None:
    """--time-limit bounds the whole command: the solvers get what loading the inputs left."""
    import time

    from partitioner.cli.plan import _time_left

    assert _time_left(None, time.monotonic()) is None
    left = _time_left(5.0, time.monotonic() - 2.0)
    assert left is not None and 2.9 < left <= 3.0
    assert _time_left(1.0, time.monotonic() - 10.0) == 1e-3  # spent: the solvers return their first plan
