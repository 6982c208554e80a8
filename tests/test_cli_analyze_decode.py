"""`partition analyze --in-flight K --d-ret S --batch B`: the closed-loop decode keys (hand-computed)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from partitioner.cli import main


def run(*args: str):
    r = CliRunner().invoke(main, ["analyze", *args])
    return r.exit_code, r.stdout, r.stderr


def test_decode_keys_below_the_crossover():
    # R = 1 + 2 + 1 + 0.5 + 0.5 + 1 = 6 > K tau_max = 4
    code, out, err = run("--tau", "1,2,1", "--d", "0.5,0.5", "--in-flight", "2", "--d-ret", "1", "--batch", "8", "--json")
    assert code == 0, err
    p = json.loads(out)
    assert p["decode_period"] == 6.0 and p["decode_bound"] == "round_trip"
    assert p["decode_tokens_per_round"] == 16 and p["decode_throughput"] == pytest.approx(16 / 6)
    assert p["decode_crossover_in_flight"] == 3.0


def test_decode_keys_above_the_crossover_and_without_batch():
    code, out, _ = run("--tau", "1,2,1", "--d", "0.5,0.5", "--in-flight", "4", "--json")
    p = json.loads(out)
    assert code == 0 and p["decode_period"] == 8.0 and p["decode_bound"] == "bottleneck"
    assert p["decode_tokens_per_round"] == 4 and p["decode_throughput"] == 0.5


def test_no_decode_keys_unless_asked_and_the_table_shows_them():
    _, out, _ = run("--tau", "1,2", "--json")
    assert "decode_period" not in json.loads(out)
    code, out, _ = run("--tau", "1,2", "--in-flight", "3")
    assert code == 0 and "Closed-loop decode" in out and "decode_period" in out


@pytest.mark.parametrize("args, match", [
    (("--in-flight", "0"), r"--in-flight must be an integer >= 1 \(got '0'\)"),
    (("--in-flight", "x"), r"--in-flight"),
    (("--d-ret", "-1"), r"--d-ret must be a number of seconds >= 0 \(got '-1'\)"),
    (("--batch", "0"), r"--batch must be an integer >= 1 \(got '0'\)"),
])
def test_bad_decode_options(args, match):
    import re

    code, _, err = run("--tau", "1,2", *args)
    assert code == 2 and len(err.strip().splitlines()) == 1 and re.search(match, err), err
