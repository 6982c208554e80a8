"""`partition report` end to end on the bundled example, and its error paths (exit codes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from partitioner.cli import main
from partitioner.cli.report import parse_Ms
from partitioner.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
MODEL = str(ROOT / "examples" / "models" / "qwen2.5-14b.yaml")
CLUSTER = str(ROOT / "examples" / "clusters" / "seed.yaml")
FAST = ["--M", "1,8", "--pareto-max-M", "8"]


def invoke(*args: str, columns: int = 200):
    return CliRunner().invoke(main, list(args), env={"COLUMNS": str(columns)})


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    paths = {k: out / f"report.{k}" for k in ("html", "json", "md")}
    result = invoke("report", MODEL, CLUSTER, *FAST, "--without", "node03-1070", "--regime", "blocking",
                    "--phase", "prefill", "--link", "laptop-5090:node02-3090=0.05,100",
                    "--html", str(paths["html"]), "--json", str(paths["json"]), "--md", str(paths["md"]))
    assert result.exit_code == 0, result.output
    return result, paths


def test_end_to_end(outputs) -> None:
    result, paths = outputs
    data = json.loads(paths["json"].read_text())
    assert list(data["plans"]) == ["balanced", "throughput", "makespan", "even", "memory", "params", "speed"]
    assert data["Ms"] == [1, 8] and data["cluster"] == "seed"
    for name, plan in data["plans"].items():
        assert plan["feasible"] or plan["reason"], name  # infeasible rows say why
        if "by_M" in plan:
            for at in plan["by_M"].values():
                assert at["gpipe_minus_async"] == pytest.approx(plan["homogeneity_bias"] - plan["comm_underestimate"])
    best = data["plans"]["balanced"]["tau_max"]
    assert all(best <= p["tau_max"] * (1 + 1e-9) for p in data["plans"].values() if p["feasible"])
    assert [w["name"] for w in data["whatif"]] == [
        "--without node03-1070", "--link laptop-5090:node02-3090=0.05,100", "--regime blocking", "--phase prefill"]
    assert data["pareto"] and all(p["M"] in (1, 2, 4, 8) for p in data["pareto"])
    assert "Pareto frontier" in result.output and "What-if" in result.output
    assert paths["md"].read_text().count("\n## ") == 9  # with the decode comparison
    head = result.output[: result.output.index("Plans (")]
    assert head.splitlines()[1].startswith("Best: 4 GPUs · ") and "Bottleneck:" in head
    assert head.index("Layout:") < head.index("Run it (vllm") < head.index("VLLM_PP_LAYER_PARTITION=")
    h = data["headline"]
    assert h["tokens_per_s"] >= data["plans"]["balanced"]["tokens_per_s"]  # the best row, not the base plan
    assert h["tokens_per_s"] == max(p["tokens_per_s"] for p in data["plans"].values() if p["feasible"]) or h[
        "plan"] == "serve" or h["plan"].startswith(("makespan@", "serve"))
    assert paths["html"].read_text().startswith("<!DOCTYPE html>")


def test_rerun_may_overwrite_its_own_outputs(outputs, tmp_path) -> None:
    _, paths = outputs
    result = invoke("report", MODEL, CLUSTER, "--M", "1", "--pareto-max-M", "1", "--md", str(paths["md"]))
    assert result.exit_code == 0, result.output


def test_with_device_variation() -> None:
    result = invoke("report", MODEL, CLUSTER, "--M", "8", "--pareto-max-M", "1", "--with", "rtx-3090@node-02")
    assert result.exit_code == 0, result.output
    assert "--with rtx-3090@node-02" in result.output


def _prose(output: str) -> list[str]:
    """The output's lines but the engine command's (indented 4 under "Run it"; never wrapped)."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Run it ("))
    first = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("    "))
    end = next(i for i in range(first, len(lines)) if not lines[i].startswith("    "))
    return lines[:first] + lines[end:]


def test_console_uses_the_terminal_width() -> None:
    widest = {}
    for columns in (90, 160):
        result = invoke("report", MODEL, CLUSTER, "--M", "8", "--pareto-max-M", "1", columns=columns)
        assert result.exit_code == 0, result.output
        widest[columns] = max(len(line) for line in _prose(result.output))
        assert widest[columns] <= columns
    assert widest[160] > 90  # not a fixed width


def test_piped_output_is_140_columns_and_commands_are_never_wrapped() -> None:
    result = CliRunner().invoke(main, ["report", MODEL, CLUSTER, "--M", "8", "--pareto-max-M", "1"],
                                env={"COLUMNS": ""})  # stdout is not a terminal under CliRunner
    assert result.exit_code == 0, result.output
    assert 100 < max(len(line) for line in _prose(result.output)) <= 140
    serve = next(line for line in result.output.splitlines() if "vllm serve" in line)
    assert len(serve) > 140 and serve.rstrip().endswith(serve.split()[-1])  # one line, however long
    data = result.output[result.output.index("Run it ("):]
    assert "VLLM_PP_LAYER_PARTITION=" in serve and "--pipeline-parallel-size" in serve
    assert data.index("Run it (") < data.index("vllm serve")


def test_time_limit_bounds_the_report(tmp_path) -> None:
    """A free-order cluster within a short budget: every plan is either proven optimal or says it is
    not, with a positive lower bound and a gap in (0, 1) -- never an unproven claim, never a bound of 0."""
    cluster = ROOT / "examples" / "clusters" / "a100-l4-t4.yaml"
    model = ROOT / "examples" / "models" / "llama-3.1-8b.yaml"
    out = tmp_path / "r.json"
    result = invoke("report", str(model), str(cluster), "--time-limit", "4", "--json", str(out))
    assert result.exit_code == 0, result.output  # its speed is measured in benchmarks/report.py
    data = json.loads(out.read_text())
    for name in ("balanced", "throughput", "makespan"):
        plan = data["plans"][name]
        assert plan["feasible"] and plan["lower_bound"] > 0, name
        if plan["optimal"]:
            assert plan["gap"] == pytest.approx(0.0, abs=1e-9), name
        else:
            assert 0 < plan["gap"] < 1, name
    mk = data["plans"]["makespan"]
    assert mk["lower_bound"] <= mk["by_M"]["8"]["T_async"] * (1 + 1e-9)


def test_bad_export_target() -> None:
    result = invoke("report", MODEL, CLUSTER, "--export", "nope")
    assert result.exit_code == 2 and "valid targets" in result.output


def test_parse_Ms() -> None:
    assert parse_Ms(()) == (1, 8, 32, 100)
    assert parse_Ms(("1,8", "32", "8")) == (1, 8, 32)
    with pytest.raises(InputError, match=r"got '1,x'"):
        parse_Ms(("1,x",))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--M", "0"], "--M expects integers >= 1"),
        (["--link", "laptop-5090-node02-3090"], "A:B=latency_ms,bandwidth_gb_s"),
        (["--with", "rtx-3090"], "GPU_ID@NODE"),
        (["--without", "no-such-gpu"], "'no-such-gpu'"),
        (["--regime", "sync"], "got 'sync'"),
        (["--phase", "train"], "got 'train'"),
    ],
)
def test_bad_arguments_exit_2(args: list[str], message: str) -> None:
    result = invoke("report", MODEL, CLUSTER, *args)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_refuses_to_overwrite_inputs(tmp_path) -> None:
    model = tmp_path / "model.yaml"
    model.write_text(Path(MODEL).read_text())
    before = model.read_text()
    for option in ("--md", "--json", "--html"):
        result = invoke("report", str(model), CLUSTER, option, str(model))
        assert result.exit_code == 2 and "refusing to overwrite an input file" in result.output
    assert model.read_text() == before


def test_refuses_same_output_twice_and_foreign_files(tmp_path) -> None:
    out = tmp_path / "r.out"
    result = invoke("report", MODEL, CLUSTER, "--md", str(out), "--json", str(out))
    assert result.exit_code == 2 and "refusing to overwrite the --md output" in result.output
    notes = tmp_path / "notes.md"
    notes.write_text("my notes\n")
    result = invoke("report", MODEL, CLUSTER, *FAST, "--md", str(notes))
    assert result.exit_code == 2 and "not written by partitioner" in result.output
    assert notes.read_text() == "my notes\n"


def test_missing_file_exit_2(tmp_path) -> None:
    result = invoke("report", str(tmp_path / "nope.yaml"), CLUSTER)
    assert result.exit_code == 2 and "nope.yaml" in result.output


SMALL = str(ROOT / "examples" / "models" / "llama-3.1-8b.yaml")


def _report_json(tmp_path, *args: str) -> dict:
    out = tmp_path / "r.json"
    result = invoke("report", SMALL, CLUSTER, "--M", "8", "--pareto-max-M", "8", "--time-limit", "30", *args,
                    "--json", str(out))
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text())


def test_the_plan_flags_serve_and_limits(tmp_path) -> None:
    free = _report_json(tmp_path, "--objective", "serve")
    serve = free["decode"]["plans"]["serve"]
    limit = 0.8 * serve["tpot_s"]  # tighter than the free plan's TPOT
    capped = _report_json(tmp_path, "--objective", "serve", "--tpot-ms", f"{limit * 1e3:.6g}", "--engine", "vllm")
    assert capped["decode"]["plans"]["serve"]["tpot_s"] <= limit * (1 + 1e-6)
    h = capped["headline"]
    assert h["within_limits"] and h["tpot_s"] <= limit * (1 + 1e-6)  # the headline keeps to the limit too
    assert free["headline"]["tokens_per_s"] >= h["tokens_per_s"] * (1 - 1e-9)


def test_replicas_compete_for_the_headline(tmp_path) -> None:
    data = _report_json(tmp_path, "--replicas", "auto")
    plain = _report_json(tmp_path)
    assert data["headline"]["compared"] == plain["headline"]["compared"] + 1  # the deployment is one more plan
    failed = _report_json(tmp_path, "--replicas", "2")  # seed cannot hold two copies: said, not an error
    assert "--replicas 2: the cluster cannot hold 2 replicas" in failed["replicas_note"]
    assert failed["headline"]["compared"] == plain["headline"]["compared"]


def test_a_deployment_sums_its_replicas() -> None:
    """Two copies of one pipeline: twice the tokens/s and GPUs, the same TPOT (report.replicas)."""
    from partitioner.api import build_problem, load_inputs, solve_problem
    from partitioner.deploy.deployment import Deployment
    from partitioner.report.replicas import deployment_candidate
    from partitioner.report.serving import workload_of

    model, cluster = load_inputs(SMALL, CLUSTER)
    plan = solve_problem(build_problem(model, cluster, M=8), "dp")
    one = deployment_candidate(plan, "--tp off", (1, 8), workload_of(model), ())
    two = deployment_candidate(Deployment((plan, plan), (), False, 0.0), "--replicas 2", (1, 8),
                               workload_of(model), ())
    assert one is not None and two is not None
    m1, m2 = one.row.metrics, two.row.metrics
    assert m2.tokens_per_s == pytest.approx(2 * m1.tokens_per_s) and m2.tpot_s == m1.tpot_s
    assert m2.gpus == 2 * m1.gpus == 2 * len(plan.stages) and len(m2.replica_layouts) == 2 and not m1.replica_layouts
    assert two.source == "`--replicas 2`: 2 pipelines"


def test_serve_objective_needs_a_decode_workload(tmp_path) -> None:
    model = tmp_path / "prefill.yaml"
    model.write_text(Path(SMALL).read_text().replace("phase: decode", "phase: prefill"), encoding="utf-8")
    result = invoke("report", str(model), CLUSTER, "--objective", "serve")
    assert result.exit_code != 0 and "--objective serve plans decode" in result.output
    bad = invoke("report", SMALL, CLUSTER, "--tpot-ms", "-1")
    assert bad.exit_code != 0 and "--tpot-ms must be a number of milliseconds > 0" in bad.output


def test_the_time_limit_covers_the_charts(tmp_path) -> None:
    """A budget spent before rendering leaves the charts out, and the page says so (the tables and
    the headline stay)."""
    page = tmp_path / "r.html"
    result = invoke("report", MODEL, CLUSTER, *FAST, "--time-limit", "0.05", "--html", str(page))
    assert result.exit_code == 0, result.output
    html = page.read_text()
    assert 'id="charts-left-out"' in html and "<svg" not in html
    assert 'id="headline"' in html and 'id="table-plans"' in html
