"""A model that does not fit still gets a report: the shortfall per device and the smallest
`--with` additions that make it fit, each planned (partitioner.report.nofit)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from partitioner.api import build_problem, load_inputs, solve_problem
from partitioner.cli import main
from partitioner.cli.report import Options, _build
from partitioner.errors import InfeasibleError
from partitioner.models import whatif
from partitioner.report.solving import report_budget

ROOT = Path(__file__).resolve().parents[1]
MODEL = str(ROOT / "examples" / "models" / "llama-3.1-70b-int4.yaml")  # 81.5 GB of weights and KV
CLUSTER = str(ROOT / "examples" / "clusters" / "seed.yaml")  # 76 GB usable in all
FAST = ["--M", "1,8", "--pareto-max-M", "8", "--time-limit", "20"]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("nofit")
    paths = {k: out / f"report.{k}" for k in ("json", "md", "html")}
    result = CliRunner().invoke(main, ["report", MODEL, CLUSTER, *FAST, "--json", str(paths["json"]),
                                       "--md", str(paths["md"]), "--html", str(paths["html"])],
                                env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    return result.output, json.loads(paths["json"].read_text()), paths


def _fits(cluster, adds: list[tuple[str, str]]) -> bool:
    model, _ = load_inputs(MODEL, CLUSTER)
    for gpu, node in adds:
        cluster = whatif.with_device(cluster, gpu, node)
    try:
        return solve_problem(build_problem(model, cluster, M=8), "dp").feasible
    except InfeasibleError:
        return False


def test_shortfall_per_device(written) -> None:
    output, data, _ = written
    nf = data["nofit"]
    assert data["headline"] is None and "81.47 GB" in nf["reason"] and "76.00 GB" in nf["reason"]
    short = {f["device"]: f for f in nf["shortfall"]}
    assert set(short) == {"laptop-5090", "node02-3090", "node03-3090", "node03-1070"}
    for f in short.values():
        assert f["short_gb"] == pytest.approx(max(0.0, f["need_gb"] - f["capacity_gb"]))
    # the split's needs add up to at least what the model needs in all
    assert sum(f["need_gb"] for f in short.values()) >= 81.47 - 0.01
    assert "Does not fit:" in output and "Smallest addition: --with" in output


def test_smallest_addition_is_smallest_and_evaluated(written) -> None:
    _, data, _ = written
    adds = data["nofit"]["additions"]
    assert adds, data["nofit"]
    assert [a["count"] for a in adds] == sorted(a["count"] for a in adds)
    _, cluster = load_inputs(MODEL, CLUSTER)
    gpus = {d.gpu_id: d.node for d in reversed(cluster.devices)}
    best = adds[0]
    assert _fits(cluster, [(best["gpu"], best["node"])] * best["count"])
    for gpu, node in gpus.items():  # one GPU fewer of any type does not fit
        assert not _fits(cluster, [(gpu, node)] * (best["count"] - 1)), gpu
    assert best["tokens_per_s"] > 0 and best["gpus"] == len(best["devices"]) >= 5
    assert best["flags"] == " ".join([f"--with {best['gpu']}@{best['node']}"] * best["count"])


def test_the_addition_gives_a_full_report(written) -> None:
    """With the suggested GPUs in the cluster, the report has a headline and no shortfall."""
    _, data, _ = written
    best = data["nofit"]["additions"][0]
    _, cluster = load_inputs(MODEL, CLUSTER)
    for _ in range(best["count"]):
        cluster = whatif.with_device(cluster, best["gpu"], best["node"])
    rep = _build(MODEL, cluster, Ms=(1, 8), plan_M=8, opts=Options(), base_regime="async", solver="auto", order=None,
                 budget=report_budget(None), pareto_max_M=8, variations=(), export="vllm", charts=False,
                 say=lambda _: None)
    assert rep.nofit is None and rep.headline is not None
    assert rep.headline.tokens_per_s >= best["tokens_per_s"] * (1 - 1e-9)  # the headline is the best of more plans


def test_every_format_is_written(written) -> None:
    _, _, paths = written
    md, html = paths["md"].read_text(), paths["html"].read_text()
    assert "**Does not fit:**" in md and "## The smallest additions that make it fit" in md
    assert "The model does not fit" in html and 'data-key="nofit.shortfall.0.short_gb"' in html


def test_the_report_json_matches_its_schema(written, tmp_path) -> None:
    """`partition schema report` documents both report shapes: a model that fits and one that does not."""
    import jsonschema

    result = CliRunner().invoke(main, ["schema", "report"])
    assert result.exit_code == 0, result.output
    schema = json.loads(result.output)
    jsonschema.Draft202012Validator.check_schema(schema)
    _, data, _ = written
    jsonschema.validate(data, schema)
    out = tmp_path / "fits.json"
    fits = CliRunner().invoke(main, ["report", str(ROOT / "examples/models/qwen2.5-14b.yaml"), CLUSTER, *FAST,
                                     "--link", "laptop-5090:node02-3090=0.05,100", "--json", str(out)])
    assert fits.exit_code == 0, fits.output
    full = json.loads(out.read_text())
    jsonschema.validate(full, schema)
    assert set(full) == set(schema["properties"]) and all(schema["properties"][k].get("description") or k in (
        "format", "model", "cluster", "regime") for k in full)
    broken = {**full, "headline": {**full["headline"], "tokens_per_s": "fast"}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)
