"""The report's decode comparison (partitioner.report.decode): the serve objective's plan beside each
engine's split at the same batch B and in-flight count K, scored by the closed loop of
docs/theory.md §4 (tokens/s = K·B / max(K·τ_max, Στ + Σd + d_ret))."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from partitioner.cli import main
from partitioner.models import load_cluster, load_model
from partitioner.registry import BASELINES
from partitioner.report.decode import decode_comparison
from partitioner.report.render_json import lookup

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "examples" / "models" / "llama-3.1-8b.yaml"
SEED = ROOT / "examples" / "clusters" / "seed.yaml"


@pytest.fixture(scope="module")
def decode():
    from partitioner.solvers.budget import Budget

    return decode_comparison(load_model(MODEL), load_cluster(SEED), regime="async", order=None,
                             budget=Budget(None), Ms=(1, 8))


def test_rows_are_the_serve_plan_then_every_baseline(decode) -> None:
    assert [r.name for r in decode.rows] == ["serve", *BASELINES]
    assert decode.rows[0].kind == "optimal" and all(r.kind == "baseline" for r in decode.rows[1:])
    assert [name for name, _ in decode.gains] == list(BASELINES)
    assert decode.batch >= 1 and decode.in_flight >= 1


def test_every_feasible_row_obeys_the_closed_loop_at_the_same_batch_and_in_flight(decode) -> None:
    K, B = decode.in_flight, decode.batch
    for r in decode.rows:
        m = r.metrics
        if not r.feasible or m is None:
            assert r.reason, r.name  # an infeasible split says why
            continue
        # P = max(K·τ_max, Στ + Σd + d_ret) >= both terms, and tokens/s = K·B / P
        assert m.tokens_per_s * K * m.tau_max <= K * B * (1 + 1e-9), r.name
        assert m.tokens_per_s * (sum(m.tau) + sum(m.d)) <= K * B * (1 + 1e-9), r.name
        if m.binding == "bottleneck":
            assert m.tokens_per_s == pytest.approx(B / m.tau_max, rel=1e-9), r.name
        assert m.max_sequences is not None and m.max_sequences >= K * B, r.name  # the KV of K·B fits


def test_gains_are_the_serve_plan_over_each_baseline(decode) -> None:
    serve = decode.row("serve").metrics
    for name, ratio in decode.gains:
        r = decode.row(name)
        if ratio is None:
            assert not r.feasible
        else:
            assert ratio == pytest.approx(serve.tokens_per_s / r.metrics.tokens_per_s, rel=1e-12)
            assert ratio >= 1 - 1e-9, name  # the serve search tries the engines' splits too


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    out = tmp_path_factory.mktemp("decode")
    paths = {k: out / f"report.{k}" for k in ("json", "md", "html")}
    r = CliRunner().invoke(main, ["report", str(MODEL), str(SEED), "--M", "1,8", "--pareto-max-M", "4",
                                  "--time-limit", "120", *[x for k, p in paths.items() for x in (f"--{k}", str(p))]])
    assert r.exit_code == 0, r.output
    return r.output, {k: p.read_text(encoding="utf-8") for k, p in paths.items()}


def test_report_shows_the_decode_comparison_everywhere(outputs) -> None:
    console, files = outputs
    data = json.loads(files["json"])
    dec = data["decode"]
    assert list(dec["plans"]) == ["serve", *BASELINES] and dec["batch"] >= 1
    serve = dec["plans"]["serve"]
    assert serve["tokens_per_s"] == max(p["tokens_per_s"] for p in dec["plans"].values() if p["feasible"])
    assert data["serve_frontier"], "the HTML chart's points come from the same search"
    assert f"Decode at batch {dec['batch']} × {dec['in_flight']} in flight" in files["md"]
    assert data["headline"]["plan"] == "serve"  # the serve plan has the most tokens/s: it leads
    assert f"Plan: `--objective serve` at batch {dec['batch']} × {dec['in_flight']} in flight" in console
    assert 'id="table-decode"' in files["html"]
    lines = files["html"].split('<section id="headline">')[1].split("<details")[0]  # (the command's own text is literal)
    assert "<code>--objective serve</code> at batch" in lines and "`" not in lines


def test_html_decode_cells_equal_the_json(outputs) -> None:
    _, files = outputs
    data = json.loads(files["json"])
    keys = re.findall(r'data-key="(decode\.[^"]+)" data-value="([^"]+)"', files["html"])
    assert len(keys) >= 6
    for key, value in keys:
        assert float(value) == lookup(data, key), key


def test_a_prefill_workload_has_no_decode_comparison(tmp_path) -> None:
    model = tmp_path / "prefill.yaml"
    model.write_text(MODEL.read_text().replace("phase: decode", "phase: prefill"), encoding="utf-8")
    out = tmp_path / "r.json"
    r = CliRunner().invoke(main, ["report", str(model), str(SEED), "--M", "8", "--pareto-max-M", "1",
                                  "--json", str(out)])
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text())
    assert data["decode"] is None
    assert "Decode: the workload is prefill; the serve objective plans decode" in r.output


def test_a_tight_time_limit_still_searches(tmp_path) -> None:
    """The serve search always runs (its best plan so far): a report never says "skipped"."""
    out = tmp_path / "r.json"
    r = CliRunner().invoke(main, ["report", str(MODEL), str(SEED), "--M", "8", "--pareto-max-M", "1",
                                  "--time-limit", "0.3", "--json", str(out)])
    assert r.exit_code == 0, r.output
    assert "skipped" not in r.output and json.loads(out.read_text())["decode"]["plans"]["serve"]["feasible"]
