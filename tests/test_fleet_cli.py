"""`partition fleet`, `partition catalog prices` and `partition plan --what-if` as a user runs them."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from fleet_cases import TINY

from partitioner.cli import main


@pytest.fixture()
def files(tmp_path):
    import yaml

    model = tmp_path / "tiny.yaml"
    model.write_text(yaml.safe_dump(TINY))
    own = tmp_path / "own.yaml"
    own.write_text("name: own\ndevices:\n  - {name: t4-0, gpu: t4, node: box}\n  - {name: t4-1, gpu: t4, node: box}\n"
                   "prices:\n  t4: {owned_usd_h: 0.05, on_demand_usd_h: 0.3}\n  gtx-1070: {on_demand_usd_h: 0.08}\n")
    return model, own


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_fleet_prints_the_answer_and_json(files, tmp_path):
    model, own = files
    base = ["fleet", model, "--own", own, "--market", "gtx-1070:2,t4:1", "--tokens-per-s", "5000",
            "--max-batch", "8", "--workers", "1"]
    r = run(*base)
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0] == "partition fleet: the cheapest fleet serving 5,000 tokens/s (on-demand prices)"
    assert lines[1] == "own: t4, t4 ($0.10/h)"
    assert lines[2].startswith("fleet: add ") and "tokens/s" in lines[2]
    assert lines[3].startswith("proof: optimal over 6 fleets")
    out = tmp_path / "fleet.json"
    page = tmp_path / "fleet.html"
    r = run(*base, "--json", "--out", out, "--html", page)
    d = json.loads(r.output)
    assert d["format"] == "partitioner.fleets/1" and d["mode"] == "cheapest" and d["found"]
    assert {"fleet", "cost_per_hour", "serving", "plan", "runners_up"} <= set(d)
    assert all(set(f) == {"gpu", "count"} for f in d["fleet"])
    assert d["serving"]["tokens_per_s"] >= 5000 and d["fleet"] == [{"gpu": "gtx-1070", "count": 2}]
    assert json.loads(out.read_text())["fleet"] == d["fleet"]
    html = page.read_text()
    assert "<svg" in html and 'aria-label="Fleets planned' in html and "<title>Fleets planned" in html


@pytest.mark.parametrize("args, message", [
    ([], "a fleet needs a target"),
    (["--tokens-per-s", "1", "--market", "l4"], "--market: expected GPU:COUNT"),
    (["--tokens-per-s", "1", "--market", "zz-9:1"], "unknown GPU id 'zz-9'"),
    (["--tokens-per-s", "1", "--market", "t4:1"], "t4 has no on-demand price"),
    (["--tokens-per-s", "1", "--market", "l4:1", "--box", "t4:2"], "--box: 't4' is not in --market"),
    (["--tokens-per-s", "-5", "--market", "l4:1"], "must be a finite number > 0"),
    (["--tokens-per-s", "1", "--market", "l4:1", "--link", "carrier-pigeon"], "not a shipped link preset"),
    (["--tokens-per-s", "1", "--market", "l4:1", "--ray", "m"], "--ray: expected 'local', 'auto', HOST:PORT"),
])
def test_fleet_errors_are_one_line(files, args, message):
    model, _ = files
    r = CliRunner().invoke(main, ["fleet", str(model), *args])
    assert r.exit_code == 2
    assert message in r.output and len(r.output.strip().splitlines()) == 1 and "Traceback" not in r.output


def test_catalog_prices_lists_sources_and_dates():
    r = run("catalog", "prices", "--json")
    rows = {row["id"]: row for row in json.loads(r.output)}
    assert rows["l4"]["on_demand_usd_h"] == 0.78 and rows["l4"]["spot_usd_h"] == 0.44
    assert all(row["source"] and row["date"] for row in rows.values())
    from partitioner.models import catalog

    assert set(rows) <= set(catalog.ids("gpus"))


def test_cluster_prices_unknown_gpu_is_located(tmp_path):
    bad = tmp_path / "c.yaml"
    bad.write_text("devices:\n  - {name: a, gpu: t4}\nprices:\n  t5: {on_demand_usd_h: 1}\n")
    r = CliRunner().invoke(main, ["plan", "examples/models/llama-3.1-8b.yaml", str(bad)])
    assert r.exit_code == 2 and "prices" in r.output and "unknown GPU id 't5'" in r.output


def test_plan_what_if_table_is_sorted_by_price_per_token(files):
    model, own = files
    r = run("plan", model, own, "--what-if", "add:gtx-1070,t4", "--what-if", "remove:t4-1", "--max-batch", "8",
            "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    kinds = [c["change"] for c in d["changes"]]
    assert kinds[-1] == "remove:t4-1" and set(kinds[:2]) == {"add:gtx-1070", "add:t4"}
    prices = [c["usd_per_hour_per_token_s"] for c in d["changes"][:2]]
    assert None not in prices and prices == sorted(prices)
    for c in d["changes"][:2]:
        assert c["delta_tokens_per_s"] == pytest.approx(c["tokens_per_s"] - d["tokens_per_s"])
    assert d["changes"][-1]["delta_usd_per_hour"] == pytest.approx(-0.05)  # the removed card's running cost
    r = CliRunner().invoke(main, ["plan", str(model), str(own), "--what-if", "remove:nope"])
    assert r.exit_code == 2 and "unknown device 'nope'" in r.output
    r = CliRunner().invoke(main, ["plan", str(model), str(own), "--what-if", "swap:t4"])
    assert r.exit_code == 2 and "expected add:GPU" in r.output


def test_top_level_api_is_the_fleet_function():
    import partitioner
    from partitioner.fleets import fleet

    assert partitioner.fleet is fleet


def test_api_takes_a_target_object_or_mapping():
    from fleet_cases import tiny_model

    import partitioner
    from partitioner.errors import InputError
    from partitioner.fleets import Target

    m = tiny_model()
    kw = {"market": {"gtx-1070": 1}, "prices": {"gtx-1070": {"on_demand_usd_h": 0.08}}, "workers": 1, "max_batch": 8}
    a = partitioner.fleet(m, target=Target(budget_usd_h=1.0), **kw).to_dict()
    b = partitioner.fleet(m, target={"budget_usd_h": 1.0}, **kw).to_dict()
    c = partitioner.fleet(m, budget_per_hour=1.0, **kw).to_dict()
    assert a == b == c and a["found"]
    with pytest.raises(InputError, match="unknown key"):
        partitioner.fleet(m, target={"budget": 1.0}, **kw)
    with pytest.raises(InputError, match="not both"):
        partitioner.fleet(m, target={"budget_usd_h": 1.0}, tokens_per_s=5.0, **kw)


def test_inside_a_daemonic_worker_the_sweep_runs_serially(monkeypatch):
    """A pool worker may not fork (the fuzz harness runs commands in one): the runner is serial there."""
    import multiprocessing

    from partitioner.fleets.pool import PoolRunner, SerialRunner, make_runner

    monkeypatch.setattr(multiprocessing.current_process(), "daemon", True, raising=False)
    assert isinstance(make_runner(None, None), SerialRunner)
    monkeypatch.undo()
    runner = make_runner(2, None)
    assert isinstance(runner, PoolRunner)
    runner.close()
