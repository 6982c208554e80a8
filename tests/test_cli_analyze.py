"""`partition analyze`: table, --json, --measured, and one-line errors with exit code 2."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from partitioner.cli import main

ROW8 = ["analyze", "--tau", "0.5,1,1,5", "--d", "4.6,0.1,0.1", "--M", "8"]


@pytest.fixture()
def run():
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(main, list(args))

    return invoke


def test_table_shows_every_quantity_and_links(run) -> None:
    res = run(*ROW8, "--rho", "0.8")
    assert res.exit_code == 0, res.output
    out = res.stdout
    for text in ("T_async", "47.3", "T_block", "48", "55", "42.5", "12.5", "7.7", "0.7", "3.46",
                 "5.02", "47.44", "0.196078", "+16.3%", "12.3", "phase transition"):
        assert text in out, text
    link_rows = [line for line in out.splitlines() if ("->" in line and "<- first" not in line) or "BINDS" in line]
    assert any("0 -> 1" in r and "BINDS" in r and "4.5" in r for r in link_rows)
    first = [line for line in out.splitlines() if "<- first" in line]
    assert len(first) == 1 and "1 -> 2" in first[0] and "BINDS" not in first[0]


def test_json_has_issue_keys_and_values(run) -> None:
    res = run(*ROW8, "--json")
    assert res.exit_code == 0
    data = json.loads(res.stdout)
    for key in ("S", "M", "tau", "d", "tau_max", "sigma_max", "T_free", "T_async", "T_block", "T_gpipe",
                "homogeneity_bias", "full_bias", "phase_transition", "overlap_gap", "effective_slope",
                "asymptotic_throughput_async", "asymptotic_throughput_blocking", "crossover_batches",
                "slack", "binding_links", "first_binding_link", "rho", "T_real", "bubble_fraction"):
        assert key in data, key
    assert data["S"] == 4 and data["M"] == 8 and data["tau"] == [0.5, 1, 1, 5] and data["d"] == [4.6, 0.1, 0.1]
    assert data["T_async"] == pytest.approx(47.3) and data["T_block"] == pytest.approx(48.0)
    assert data["T_gpipe"] == 55 and data["T_free"] == 42.5 and data["homogeneity_bias"] == 12.5
    assert data["phase_transition"] is True and data["overlap_gap"] == pytest.approx(0.7)
    assert data["crossover_batches"] == pytest.approx(3.46) and data["rho"] == 1.0
    assert data["effective_slope"] == 5.0 and data["asymptotic_throughput_async"] == 0.2
    assert data["binding_links"] == [0] and data["first_binding_link"] == 1


def test_defaults_d_zero_M_one(run) -> None:
    data = json.loads(run("analyze", "--tau", "0.5,1,1,5", "--json").stdout)
    assert data["d"] == [0, 0, 0] and data["M"] == 1 and data["T_async"] == 7.5 and data["T_gpipe"] == 20
    assert data["gpipe_error"] == pytest.approx(5 / 3)


def test_single_stage(run) -> None:
    res = run("analyze", "--tau", "2", "--M", "3")
    assert res.exit_code == 0 and "No links (S = 1)." in res.stdout
    assert json.loads(run("analyze", "--tau", "2", "--d", "", "--json").stdout)["first_binding_link"] is None


def test_measured_fits_rho(run) -> None:
    # row 8, rho = 0.8: T(M) = 12.3 + (M-1) * 5.02
    res = run(*ROW8, "--measured", "4:27.36,16:87.6", "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["rho"] == pytest.approx(0.8) and data["measured"] == [[4, 27.36], [16, 87.6]]
    assert "(fitted from --measured)" in run(*ROW8, "--measured", "4:27.36,16:87.6").stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tau", "0.5,x,1"], "error: --tau: cannot parse 'x' as a number (got '0.5,x,1')"),
        (["--tau", "1,2", "--d", "1,2"], "error: d must hold S-1 = 1 link latencies for S = 2 stages (got 2: [1.0, 2.0])"),
        (["--tau", "1,-2"], "error: tau[1] must be finite and >= 0 (got -2.0)"),
        (["--tau", "1,2", "--d", "nan"], "error: d[0] must be finite and >= 0 (got nan)"),
        (["--tau", ""], "error: tau must hold at least one stage time (got [])"),
        (["--tau", "1", "--M", "0"], "error: M must be an integer >= 1 (got 0)"),
        (["--tau", "1", "--M", "2.5"], "error: --M must be an integer >= 1 (got '2.5')"),
        (["--tau", "1,2", "--d", "1", "--rho", "1.2"], "error: rho must be in [0, 1] (got 1.2)"),
        (["--tau", "1,2", "--rho", "abc"], "error: --rho: cannot parse 'abc' as a number"),
        (["--tau", "4,5", "--d", "2", "--rho", "1", "--measured", "2:1,3:2"], "error: give --rho or --measured, not both"),
        (["--tau", "4,5", "--d", "2", "--measured", "2-16"], "error: --measured: expected M:T pairs like 4:27.3 (got '2-16')"),
        (["--tau", "4,5", "--d", "2", "--measured", "2:16,4:100"], "error: --measured gives rho = -36, outside [0, 1]"),
        (["--tau", "4,5", "--d", "0", "--measured", "2:16,4:26"], "error: rho is undefined when sigma_max == tau_max"),
    ],
)
def test_bad_arguments_one_line_exit_2(run, args: list[str], message: str) -> None:
    res = run("analyze", *args)
    assert res.exit_code == 2
    assert res.stdout == ""
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), res.stderr
    assert "Traceback" not in res.output


def test_missing_tau_is_a_usage_error(run) -> None:
    res = run("analyze")
    assert res.exit_code == 2 and "Missing option '--tau'" in res.stderr
