"""`partition calibrate bench`: a vLLM benchmark result read back into cluster.yaml, and the
benchmark command a plan prints (partitioner.calibrate.bench, bench_command)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from partitioner.calibrate.bench import Measured, read_bench, time_scale
from partitioner.calibrate.bench_command import bench_command
from partitioner.cli import main
from partitioner.errors import InputError

FIXTURE = Path(__file__).parent / "data" / "vllm-bench-serve-result.json"
MODEL = "examples/models/llama-3.1-8b.yaml"
CLUSTER = """name: two-a100
devices:
  - {name: a, gpu: a100-80gb, node: n1}
  - {name: b, gpu: a100-80gb, node: n2}
links:
  inter_node: 10gbe
"""


def _plan(runner: CliRunner, cluster: Path, out: Path) -> dict:
    got = runner.invoke(main, ["plan", MODEL, str(cluster), "--objective", "balanced", "--out", str(out), "--json"])
    assert got.exit_code == 0, got.output
    return json.loads(out.read_text().split("\n", 1)[1] if out.read_text().startswith("#") else out.read_text())


def test_round_trip_moves_the_next_plans_tpot_to_the_measured(tmp_path: Path) -> None:
    runner = CliRunner()
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(CLUSTER)
    before = _plan(runner, cluster, tmp_path / "plan.json")["serving"]
    doc = json.loads(FIXTURE.read_text())
    measured_tpot = 1.4 * before["tpot_s"]
    doc["mean_tpot_ms"] = measured_tpot * 1e3
    doc["output_throughput"] = before["tokens_per_s"] / 1.4
    result = tmp_path / "bench.json"
    result.write_text(json.dumps(doc))
    got = runner.invoke(main, ["calibrate", "bench", str(result), "--plan", str(tmp_path / "plan.json"), "--model", MODEL,
                               "--cluster", str(cluster), "--write-cluster", str(tmp_path / "calibrated.yaml")])
    assert got.exit_code == 0, got.output
    assert "×1.4" in got.output and "a, b scaled" in got.output
    after = _plan(runner, tmp_path / "calibrated.yaml", tmp_path / "plan2.json")["serving"]
    assert abs(after["tpot_s"] - measured_tpot) < 0.05 * measured_tpot  # links are not scaled
    assert abs(after["tpot_s"] - measured_tpot) < abs(before["tpot_s"] - measured_tpot) / 5


def test_refuses_to_overwrite_its_input_cluster(tmp_path: Path) -> None:
    runner = CliRunner()
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(CLUSTER)
    _plan(runner, cluster, tmp_path / "plan.json")
    got = runner.invoke(main, ["calibrate", "bench", str(FIXTURE), "--plan", str(tmp_path / "plan.json"), "--model", MODEL,
                               "--cluster", str(cluster), "--write-cluster", str(cluster)])
    assert got.exit_code != 0 and "Traceback" not in got.output
    assert cluster.read_text() == CLUSTER


def test_reads_the_vllm_fixture_and_llama_bench() -> None:
    m = read_bench(json.loads(FIXTURE.read_text()), "f")
    assert (m.tokens_per_s, m.tpot_s, m.ttft_s) == (12850.0, pytest.approx(2.49e-3), pytest.approx(0.412))
    lb = read_bench([{"n_prompt": 512, "n_gen": 0, "avg_ts": 900.0}, {"n_prompt": 0, "n_gen": 128, "avg_ts": 40.0}], "f")
    assert lb.tpot_s == pytest.approx(0.025) and lb.source == "llama-bench"
    assert time_scale(Measured(1.0, 0.03, None, "x"), 0.02) == pytest.approx(1.5)


@pytest.mark.parametrize("doc, match", [({"output_throughput": 1.0}, "mean_tpot_ms"),
                                        ({"output_throughput": 1.0, "mean_tpot_ms": -2}, "mean_tpot_ms must be"),
                                        ([{"n_prompt": 5, "n_gen": 0, "avg_ts": 3}], "generation record"),
                                        ("text", "expected")])
def test_bad_results_name_the_field(doc: object, match: str) -> None:
    with pytest.raises(InputError, match=match):
        read_bench(doc, "bench.json")


def test_bench_command_uses_the_plans_point() -> None:
    from types import SimpleNamespace

    plan = SimpleNamespace(serving=SimpleNamespace(batch=12, in_flight=2, context=8192),
                           meta={"model_id": "meta-llama/Llama-3.1-8B", "workload": {"prompt_tokens": 2048}})
    cmd = bench_command(plan, "vllm")
    assert cmd == ("vllm bench serve --model meta-llama/Llama-3.1-8B --dataset-name random --random-input-len 2048 "
                   "--random-output-len 6144 --num-prompts 96 --max-concurrency 24 --ignore-eos --save-result "
                   "--result-filename bench.json")
    assert bench_command(plan, "llamacpp") == "llama-bench -m MODEL.gguf -p 2048 -n 6144 -b 12 -o json > bench.json"
    assert bench_command(SimpleNamespace(serving=None), "vllm") is None
    with pytest.raises(ValueError, match="engine must be"):
        bench_command(plan, "tgi")
