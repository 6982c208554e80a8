"""`partition calibrate overlap`: tables, --json, --measurements CSV, and one-line errors (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from partitioner.cli import main

ROW9 = ["calibrate", "overlap", "--tau", "1,1,1,1", "--d", "10,10,10"]  # theory.md Table 2 row 9
ERR3 = ["calibrate", "overlap", "--tau", "4,5", "--d", "2"]  # theory.md Errors 3


def run(*args: str) -> Result:
    """`partition ARGS...` in-process."""
    return CliRunner().invoke(main, list(args))


@pytest.fixture()
def csv_file(tmp_path: Path):
    def write(text: str, name: str = "runs.csv") -> str:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return str(path)

    return write


def test_table_reports_fit_rho_sandwich_and_advice() -> None:
    res = run(*ROW9, "--measure", "8:76", "--measure", "100:628")
    assert res.exit_code == 0, res.output
    out = res.stdout
    for text in ("slope k", "6 s", "exact (2 points)", "34 s", "overlap ratio rho", "0.5",
                 "per-transfer overlap p", "+500.00%", "+0.00%", "T_async", "1123"):
        assert text in out, text
    rows = [line for line in out.splitlines() if line.startswith("│") and "yes" in line]
    assert len(rows) == 2 and "41" in rows[0] and "111" in rows[0]
    advice = out[out.index("advice:"):].replace("\n", " ")
    assert "Work on the communication stack" in advice and "0->1, 1->2, 2->3" in advice
    assert "warning" not in out


def test_json_is_one_object() -> None:
    res = run(*ROW9, "--measure", "8:76,100:628,50:350", "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["rho"] == pytest.approx(0.501383, rel=1e-5) and 0.99 < data["r2"] < 1
    assert [p["M"] for p in data["points"]] == [8, 100, 50] and data["points"][0]["T_block"] == 111.0
    assert data["advice_kind"] == "communication" and data["binding_links"] == [0, 1, 2]
    assert data["p"] == pytest.approx(data["rho"])  # all links identical: rho = p
    assert data["recoverable"] == pytest.approx(data["k"] - 1.0)


def test_undefined_rho_is_said_not_printed() -> None:
    res = run("calibrate", "overlap", "--tau", "0.5,1,1,5", "--measure", "8:42.5", "--measure", "100:502.5")
    assert res.exit_code == 0, res.output
    assert "rho: undefined — sigma_max = tau_max = 5: no link binds, T_async = T_block for every M\n" in res.stdout
    assert "p: undefined — no link has d_s > 0: there is no transfer to overlap\n" in res.stdout
    flat = " ".join(res.stdout.split())
    assert "overlap ratio rho │ undefined (see below)" in flat
    assert "slope k" in flat and "7.5 s" in flat and "Rebalance compute first" in flat
    data = json.loads(run("calibrate", "overlap", "--tau", "0.5,1,1,5", "--measure", "8:42.5,100:502.5",
                          "--json").stdout)
    assert data["rho"] is None and data["rho_reason"].startswith("sigma_max = tau_max = 5")
    assert data["k"] == pytest.approx(5.0) and data["recoverable"] == 0.0


def test_rho_out_of_range_warns_not_fails() -> None:
    res = run("calibrate", "overlap", "--tau", "0.5,1,1,5", "--d", "4.6,0.1,0.1", "--measure", "8:47,100:530")
    assert res.exit_code == 0, res.output
    flat = " ".join(res.stdout.split())
    assert "-1.5 (outside [0, 1]: see warning)" in flat
    assert "warning: slope k = 5.25 s lies outside [tau_max, sigma_max] = [5, 5.1] s" in flat
    assert "warning: 2 of 2 measurements lie outside" in flat and "NO" in res.stdout


def test_errors3_example_shows_p_bound() -> None:
    res = run(*ERR3, "--measure", "2:16", "--measure", "10:56")
    flat = " ".join(res.stdout.split())
    assert res.exit_code == 0 and ">= 0.5 (lower bound, see below)" in flat and "│ 1 " in res.stdout
    assert "p: >= 0.5 — k <= tau_max: no link limits the slope; any p >= 0.5 fits\n" in res.stdout


def test_measurements_csv_combines_with_measure(csv_file) -> None:
    path = csv_file("# measured on 2 hosts\nM,makespan_s,note\n8,76,a\n\n100,628,b\n")
    data = json.loads(run(*ROW9, "--measurements", path, "--measure", "50:350", "--json").stdout)
    assert [p["M"] for p in data["points"]] == [50, 8, 100]
    only_csv = json.loads(run(*ROW9, "--measurements", path, "--json").stdout)
    assert only_csv["rho"] == pytest.approx(0.5) and only_csv["k"] == pytest.approx(6.0)


def test_help() -> None:
    res = run("calibrate", "overlap", "--help")
    assert res.exit_code == 0 and "--measure" in res.stdout and "M,makespan_s" in res.stdout


def _one_line_error(res: Result, *parts: str) -> None:
    assert res.exit_code == 2, res.output
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    for part in parts:
        assert part in lines[0], (part, lines[0])


@pytest.mark.parametrize(
    ("args", "parts"),
    [
        (["--measure", "4:20"], ["error: --measure: need at least two measurements", "(got 1: M=4)"]),
        (["--measure", "4:20", "--measure", "4:21"], ["error: --measure: ", "two distinct M", "(got 2, all at M=4)"]),
        ([], ["no measurements", "--measure", "--measurements"]),
        (["--measure", "4:x,5:25"], ["--measure T", "'x'"]),
        (["--measure", "four:20,5:25"], ["--measure M", "'four'"]),
        (["--measure", "2.5:20,5:25"], ["--measure M", "'2.5'"]),
        (["--measure", "0:20,5:25"], ["--measure M must be an integer >= 1", "'0'"]),
        (["--measure", "-1:20,5:25"], ["--measure M", "'-1'"]),
        (["--measure", "4:-20,5:25"], ["--measure T must be a finite number of seconds > 0", "'-20'"]),
        (["--measure", "4:0,5:25"], ["--measure T", "'0'"]),
        (["--measure", "4:nan,5:25"], ["--measure T", "'nan'"]),
        (["--measure", "4-20,5:25"], ["--measure: expected M:T pairs", "'4-20'"]),
        (["--measure", "4:,5:25"], ["--measure: expected M:T pairs", "'4:'"]),
        (["--measure", "4:20,,5:25"], ["--measure: expected M:T pairs", "''"]),
    ],
)
def test_measure_errors(args: list[str], parts: list[str]) -> None:
    _one_line_error(run(*ERR3, *args), *parts)


@pytest.mark.parametrize(
    ("tau", "d", "parts"),
    [
        ("4,5", "2,3", ["d must hold S-1 = 1 link latencies", "[2.0, 3.0]"]),
        ("4,5", "x", ["--d", "'x'"]),
        ("4,y", "2", ["--tau", "'y'"]),
        ("4,-5", "2", ["tau[1] must be finite and >= 0", "-5.0"]),
        ("4,5", "-2", ["d[0]", "-2.0"]),
    ],
)
def test_tau_d_errors(tau: str, d: str, parts: list[str]) -> None:
    _one_line_error(run("calibrate", "overlap", "--tau", tau, "--d", d, "--measure", "2:16,10:56"), *parts)


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("M,seconds\n2,16\n10,56\n", [":1: missing column 'makespan_s'", "has: M, seconds"]),
        ("M,makespan_s\n2,16\n10,abc\n", [":3: column 'makespan_s': not a number (got 'abc')"]),
        ("M,makespan_s\n2,-16\n10,56\n", [":2: column 'makespan_s': must be > 0 (got '-16')"]),
        ("M,makespan_s\n0,16\n10,56\n", [":2: column 'M': must be >= 1 (got '0')"]),
        ("M,makespan_s\n2.5,16\n10,56\n", [":2: column 'M': not an integer (got '2.5')"]),
        ("M,makespan_s\n2,16,7\n", [":2: expected 2 cells"]),
        ("M,makespan_s\n", ["no data rows in the measurements CSV"]),
        ("", ["empty measurements CSV"]),
        ("M,makespan_s\n4,20\n", ["error: --measurements ", "need at least two measurements", "(got 1: M=4)"]),
    ],
)
def test_csv_errors(csv_file, text: str, parts: list[str]) -> None:
    path = csv_file(text)
    res = run(*ERR3, "--measurements", path)
    _one_line_error(res, *parts)
    if parts[0].startswith(":"):  # located: file:line: column ...
        assert f"error: {path}{parts[0]}" in res.stderr


def test_csv_missing_file(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.csv")
    _one_line_error(run(*ERR3, "--measurements", missing), missing, "file not found")
