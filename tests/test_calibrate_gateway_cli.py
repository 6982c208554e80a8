"""`partition calibrate gateway`: table, --json, written files that `partition plan` takes, errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from partitioner.cli import main
from partitioner.costs import build_tables
from partitioner.models import ModelSpec, load_cluster, load_model

DATA = Path(__file__).resolve().parent / "data"
PAPER = str(DATA / "gateway-paper.csv")
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "measurements" / "gateway-stats.csv"
REAL = Path(__file__).resolve().parents[2] / "shared" / "data" / "gateway" / "real_vs_formula.csv"
GPUS = "node-01=rtx-5090-laptop,node-02=rtx-3090,node-03=rtx-3090,node-05=rtx-3080"
HEADER = "model,node,n,dur_min,dur_p5,dur_p50,dur_p95,dur_mean,tot_p50,q_p50,q_frac"


@pytest.fixture()
def run():
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(main, ["calibrate", "gateway", *map(str, args)])

    return invoke


def one_line_error(res, pattern: str) -> str:
    """Exit code 2, nothing on stdout, exactly one stderr line matching `pattern`."""
    import re

    assert res.exit_code == 2, (res.exit_code, res.output)
    assert res.stdout == ""
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and re.search(pattern, lines[0]), res.stderr
    return lines[0]


def write(tmp_path: Path, text: str, name: str = "stats.csv") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# -- output -----------------------------------------------------------------------------------------

def test_table_golden_legalone(run):
    res = run(PAPER, "--model", "legalone:8b", "--nodes", "node-01,node-02,node-03", "--gpu", GPUS)
    assert res.exit_code == 0, res.output
    out = res.stdout
    for text in ("1.13 s", "2.901 s", "2.621 s", "bottleneck", "rtx-5090-laptop", "2.051 s", "+30.8%", "+7.6%",
                 "+0.7%", "7.6x", "Errors 4", "tau_max 2.901 s on node-02"):
        assert text in out, text
    assert "warning" not in out and out.count("note: ") == 1
    assert max(len(line) for line in out.splitlines() if not line.startswith("note: ")) <= 120  # not a tty


def test_json_has_every_figure(run):
    res = run(PAPER, "--model", "qwen2.5:7b", "--nodes", "node-03,node-06,node-01,node-02,node-04", "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["format"] == "stats" and data["file"] == PAPER and data["written"] == []
    assert data["tau"] == [0.031, 0.118, 0.208, 0.285, 30.111] and data["bottleneck"] == "node-04"
    assert round(data["homogeneity_bias"], 1) == 119.8 and data["full_bias"] is None
    assert [round(100 * p["rel_error"], 2) for p in data["points"]] == [389.56, 49.6, 3.98]
    assert data["warnings"] == ["node-04: small sample: tau from n=2 requests (< 10)"]
    assert data["nodes"][4]["n"] == 2 and data["nodes"][0]["gpu"] is None and "Errors 4" in data["note"]


def test_options_stat_M_d(run):
    res = run(PAPER, "--model", "legalone:8b", "--nodes", "node-02,node-03", "--stat", "p50", "--M", "1,4",
              "--d", "0.2", "--json")
    data = json.loads(res.stdout)
    assert data["stat"] == "p50" and data["tau"] == [4.8, 4.6] and data["d"] == [0.2]
    assert data["full_bias"] == pytest.approx(0.2 - 0.2, abs=1e-12)
    assert [p["M"] for p in data["points"]] == [1, 4]
    assert data["points"][1]["T_async"] == pytest.approx(9.4 + 0.2 + 3 * 4.8)


def test_default_nodes_and_small_sample_warning_in_table(run):
    res = run(PAPER, "--model", "legalone:8b")
    assert res.exit_code == 0
    assert "warning: node-05: small sample: tau from n=1 request (< 10)" in res.stdout
    assert "node-05" in res.stdout and "459 ms" in res.stdout


def test_requests_format(run):
    res = run(DATA / "gateway-requests.csv", "--model", "Qwen3.8-27B-GGUF", "--stat", "p5", "--json")
    data = json.loads(res.stdout)
    assert data["format"] == "requests" and data["tau"] == [pytest.approx(0.53825)] and data["nodes"][0]["n"] == 4


def test_shipped_example_runs(run):
    res = run(EXAMPLE, "--model", "llama3.1:8b", "--json")
    data = json.loads(res.stdout)
    assert [n["node"] for n in data["nodes"]] == ["laptop", "desk-1", "desk-2", "old-box"]
    assert data["bottleneck"] == "old-box" and len(data["warnings"]) == 1


# -- written files and `partition plan` ------------------------------------------------------------

def write_files(run, tmp_path, nodes: str, template: str = "llama-3.1-8b") -> tuple[str, str]:
    cluster, profile = str(tmp_path / "cluster.yaml"), str(tmp_path / "profile.yaml")
    res = run(PAPER, "--model", "legalone:8b", "--nodes", nodes, "--gpu", GPUS, "--template", template,
              "--write-cluster", cluster, "--write-profile", profile)
    assert res.exit_code == 0, res.output
    assert f"wrote {cluster}" in res.stdout and f"wrote {profile}" in res.stdout
    return cluster, profile


def plan_json(cluster: str, profile: str) -> dict:
    res = CliRunner().invoke(main, ["plan", profile, cluster, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_written_files_reproduce_tau_per_device(run, tmp_path):
    cluster, profile = write_files(run, tmp_path, "node-01,node-02,node-03")
    spec = load_cluster(cluster)
    assert [(d.name, d.node, d.gpu_id) for d in spec.devices] == [
        ("node-01", "node-01", "rtx-5090-laptop"), ("node-02", "node-02", "rtx-3090"),
        ("node-03", "node-03", "rtx-3090")]
    model = load_model(profile)
    assert [(e.name, e.repeat, e.kind) for e in model.layers] == [("embed", 1, "embed"), ("layer", 32, "decoder"),
                                                                   ("lm_head", 1, "head")]
    tables = build_tables(model, spec)
    assert np.allclose(tables.cost.sum(axis=1), [1.13, 2.901, 2.621], rtol=1e-12)
    r = build_tables(ModelSpec.model_validate({"preset": "llama-3.1-8b"}), spec).cost  # the template's roofline
    assert np.allclose(tables.cost, r / r.sum(axis=1, keepdims=True) * np.array([[1.13], [2.901], [2.621]]), rtol=1e-12)
    for text in (Path(cluster).read_text(), Path(profile).read_text()):
        assert text.startswith("# written by partition calibrate gateway; source ")
        assert "command: partition calibrate gateway " in text and "--stat min" in text


def test_one_device_plan_takes_the_measured_tau(run, tmp_path):
    plan = plan_json(*write_files(run, tmp_path, "node-02"))
    assert len(plan["stages"]) == 1 and plan["stages"][0]["tau"] == pytest.approx(2.901, rel=1e-12)


def test_two_equal_gpus_split_the_model_and_fractions_sum_to_one(run, tmp_path):
    """Same GPU type: equal roofline shares, so sum_s tau_s / tau_{node(s)} = 1 whatever the split."""
    plan = plan_json(*write_files(run, tmp_path, "node-02,node-03"))
    tau = {"node-02": 2.901, "node-03": 2.621}
    assert len(plan["stages"]) == 2
    assert sum(s["tau"] / tau[s["node"]] for s in plan["stages"]) == pytest.approx(1.0, rel=1e-12)
    assert plan["tau_max"] < min(tau.values())


def test_three_node_plan_beats_every_single_node(run, tmp_path):
    plan = plan_json(*write_files(run, tmp_path, "node-01,node-02,node-03"))
    assert plan["tau_max"] < 1.13 and plan["stages"][0]["start"] == 0 and plan["stages"][-1]["end"] == 34


def test_template_from_a_model_file(run, tmp_path):
    template = str(Path(__file__).resolve().parents[1] / "examples" / "models" / "qwen2.5-14b.yaml")
    cluster, profile = write_files(run, tmp_path, "node-02", template=template)
    assert load_model(profile).layers[1].repeat == 48
    assert build_tables(load_model(profile), load_cluster(cluster)).cost.sum() == pytest.approx(2.901)


def test_rerun_replaces_own_file_but_not_a_user_file(run, tmp_path):
    write_files(run, tmp_path, "node-02")
    write_files(run, tmp_path, "node-02")  # our own files: replaced
    mine = write(tmp_path, "name: mine\n", "mine.yaml")
    res = run(PAPER, "--model", "legalone:8b", "--nodes", "node-02", "--gpu", GPUS, "--write-cluster", mine)
    one_line_error(res, r"mine\.yaml: exists and was not written by partitioner; choose another path$")
    assert Path(mine).read_text() == "name: mine\n"


def test_a_refused_second_file_leaves_the_first_unwritten(run, tmp_path):
    mine = write(tmp_path, "name: mine\n", "mine.yaml")
    cluster = tmp_path / "fresh-cluster.yaml"
    res = run(PAPER, "--model", "legalone:8b", "--nodes", "node-02", "--gpu", GPUS, "--template", "llama-3.1-8b",
              "--write-cluster", str(cluster), "--write-profile", mine)
    one_line_error(res, r"mine\.yaml: exists and was not written by partitioner; choose another path$")
    assert not cluster.exists() and Path(mine).read_text() == "name: mine\n"


# -- one-line errors (exit 2) ------------------------------------------------------------------------

LEGAL = ("--model", "legalone:8b", "--nodes", "node-02")


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("model,node,n,dur_min\nm,a,1,2\n",
         r"stats\.csv: header matches neither gateway format: statistics need model,node,n,dur_min,.*q_frac "
         r"\(missing 'dur_p5', .*'q_frac'\); per-request logs need model,node,duration_s,total_s,queue_wait_s "
         r"\(missing 'duration_s', 'total_s', 'queue_wait_s'\)$"),
        ("node,duration_s,total_s,queue_wait_s\na,1,1,0\n",
         r"stats\.csv:1: missing column 'model' in the gateway CSV \(statistics: model,node,n,.*; "
         r"or per-request log: model,node,duration_s,total_s,queue_wait_s\) header"),
        (f"{HEADER}\nm,a,3,1,abc,2,3,2,2,0,0\n", r"stats\.csv:2: column 'dur_p5': not a number \(got 'abc'\)$"),
        (f"# comment\n{HEADER}\nm,a,3,1,1,2,3,2,2,0,0\nm,b,3,-1,1,2,3,2,2,0,0\n",
         r"stats\.csv:4: column 'dur_min': must be >= 0 \(got '-1'\)$"),
        (f"{HEADER}\nm,a,0,1,1,2,3,2,2,0,0\n", r"stats\.csv:2: column 'n': must be >= 1 \(got '0'\)$"),
        (f"{HEADER}\nm,a,2.5,1,1,2,3,2,2,0,0\n", r"column 'n': not an integer \(got '2.5'\)$"),
        (f"{HEADER}\nm,a,3,1,1,0.5,3,2,2,0,0\n",
         r"stats\.csv:2: column 'dur_p50': must be >= dur_p5 = 1.0 \(got '0.5'\)$"),
        (f"{HEADER}\nm,a,3,1,1,2,3,0.9,2,0,0\n", r"column 'dur_mean': must be >= dur_min = 1.0 \(got '0.9'\)$"),
        (f"{HEADER}\nm,a,3,1,1,2,3,2,2,0,1.5\n", r"column 'q_frac': must be a share in \[0, 1\] \(got '1.5'\)$"),
        (f"{HEADER}\nm,a,3,1,1,2,3,2,2,0,0\nm,b,3,1,1,2,3,2,2,0,0\nm,a,4,1,1,2,3,2,2,0,0\n",
         r"stats\.csv:4: duplicate row for model 'm' on node 'a' \(also line 2\)$"),
        ("model,node,duration_s,total_s,queue_wait_s\nm,a,1,1,0\nm,a,1,1,-0.5\n",
         r"stats\.csv:3: column 'queue_wait_s': must be >= 0 \(got '-0.5'\)$"),
        ("model,node,duration_s,total_s,queue_wait_s\nm,,1,1,0\n", r"stats\.csv:2: column 'node': empty cell$"),
        ("", r"stats\.csv: empty gateway CSV"),
        (HEADER + "\n", r"stats\.csv:1: no data rows"),
    ],
)
def test_bad_csv(run, tmp_path, text, pattern):
    one_line_error(run(write(tmp_path, text), "--model", "m"), pattern)


def test_missing_file(run, tmp_path):
    one_line_error(run(tmp_path / "nope.csv", "--model", "m"), r"nope\.csv: file not found$")


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        (("--model", "legalone:9b"),
         r"gateway-paper\.csv: unknown model 'legalone:9b'; closest: legalone:8b; valid: legalone:8b, qwen2.5:7b$"),
        (("--model", "legalone:8b", "--nodes", "node-01,node-04"),
         r"gateway-paper\.csv: unknown node 'node-04'; closest: .*; valid: node-01, node-02, node-03, node-05 "
         r"\(the nodes that served 'legalone:8b'\)$"),
        (("--model", "legalone:8b", "--nodes", "node-01,,node-02"), r"--nodes: empty name in 'node-01,,node-02'"),
        (("--model", "legalone:8b", "--nodes", "node-01,node-01"), r"node 'node-01' is listed twice"),
        (("--model", "legalone:8b", "--stat", "max"), r"stat must be one of min, p5, p50, mean \(got 'max'\)$"),
        (("--model", "legalone:8b", "--M", "1,x"), r"--M must be an integer >= 1 \(got 'x'\)$"),
        (("--model", "legalone:8b", "--M", "0"), r"--M must be integers >= 1 \(got 0 in '0'\)$"),
        (("--model", "legalone:8b", "--nodes", "node-01,node-02", "--d", "1,2"), r"d must hold S-1 = 1 link latencies"),
        (("--model", "legalone:8b", "--d", "a"), r"--d: cannot parse 'a' as a number"),
        ((*LEGAL, "--write-cluster", "c.yaml"), r"--write-cluster and --write-profile need --gpu NODE=GPU_ID"),
        ((*LEGAL, "--gpu", GPUS, "--write-profile", "p.yaml"), r"--write-profile needs --template"),
        ((*LEGAL, "--template", "llama-3.1-8b"), r"--template llama-3.1-8b is only used with --write-profile$"),
        ((*LEGAL, "--gpu", "node-01=rtx-3090", "--write-cluster", "c.yaml"),
         r"--gpu: no GPU id for node 'node-02'; give node-02=<gpu id>"),
        ((*LEGAL, "--gpu", "node-02=rtx-309", "--write-cluster", "c.yaml"),
         r"--gpu node-02=rtx-309: unknown GPU id 'rtx-309'; closest: rtx-3090.*; valid: rtx-5090, "),
        ((*LEGAL, "--gpu", "node-02:rtx-3090"),
         r"--gpu: expected NODE=GPU_ID pairs like node-02=rtx-3090 \(got 'node-02:rtx-3090'\)$"),
        ((*LEGAL, "--gpu", "node-02=rtx-3090,node-02=p40"), r"--gpu: node 'node-02' is given twice"),
        ((*LEGAL, "--gpu", GPUS, "--template", "llama-9", "--write-profile", "p.yaml"),
         r"--template: no file 'llama-9', and unknown model id 'llama-9'; .*valid: llama-3.1-8b, "),
        ((*LEGAL, "--gpu", GPUS, "--write-cluster", "same.yaml", "--write-profile", "same.yaml",
          "--template", "llama-3.1-8b"),
         r"--write-cluster and --write-profile name the same file 'same.yaml'$"),
        ((*LEGAL, "--gpu", GPUS, "--write-cluster", PAPER),
         r"gateway-paper\.csv: refusing to overwrite an input file$"),
    ],
)
def test_bad_options(run, tmp_path, monkeypatch, args, pattern):
    monkeypatch.chdir(tmp_path)
    one_line_error(run(PAPER, *args), pattern)
    assert not any(tmp_path.iterdir())  # nothing written


def test_profile_template_refused(run, tmp_path):
    helix = Path(__file__).resolve().parents[1] / "examples" / "models" / "llama2-70b-helix-profile.yaml"
    res = run(PAPER, *LEGAL, "--gpu", GPUS, "--template", helix, "--write-profile", tmp_path / "p.yaml")
    one_line_error(res, r"--template .*helix-profile\.yaml: a layers: profile has no roofline costs")


def test_profile_needs_positive_tau(run, tmp_path):
    stats = write(tmp_path, f"{HEADER}\nm,a,3,0,0,2,3,2,2,0,0\nm,b,3,1,1,2,3,2,2,0,0\n")
    res = run(stats, "--model", "m", "--gpu", "a=rtx-3090,b=rtx-3090", "--template", "llama-3.1-8b",
              "--write-profile", tmp_path / "p.yaml")
    one_line_error(res, r"cannot write a profile: tau = 0.0 on stage 0; costs must be > 0$")


@pytest.mark.skipif(not REAL.is_file(), reason="real gateway data (../shared/data/gateway) absent")
def test_real_dataset_cli(run):
    res = run(REAL, "--model", "legalone:8b", "--nodes", "node-01,node-02,node-03", "--json")
    data = json.loads(res.stdout)
    assert data["tau"] == [1.13, 2.901, 2.621] and round(data["homogeneity_bias"], 3) == 2.051
    assert [round(100 * p["rel_error"], 1) for p in data["points"]] == [30.8, 7.6, 0.7]
    assert data["nodes"][0]["n"] == 5049 and round(data["nodes"][0]["inflation"], 1) == 7.6
