"""Strict JSON out, and the nonsense the calibrate and analyze edges now refuse (one line each)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from partitioner.cli import main
from partitioner.errors import ConfigError
from partitioner.jsonio import dumps, loads_user

REPO = Path(__file__).resolve().parents[1]
MODEL = str(REPO / "examples/models/llama-3.1-8b.yaml")


def _strict_loads(text: str) -> object:
    def bad(name: str) -> None:
        raise AssertionError(f"{name} in JSON output")

    return json.loads(text, parse_constant=bad)


def test_dumps_never_writes_infinity_or_nan() -> None:
    text = dumps({"a": math.inf, "b": [-math.inf, math.nan, 1.0], "c": np.array([np.inf, 2.0]),
                  "d": np.float64("nan"), "e": (1, 2)}, indent=None)
    assert _strict_loads(text) == {"a": None, "b": [None, None, 1.0], "c": [None, 2.0], "d": None, "e": [1, 2]}


def test_loads_user_is_strict_and_bounded() -> None:
    assert loads_user('{"a": [1, 2.5]}', "c.json") == {"a": [1, 2.5]}
    for text in ('{"a": Infinity}', '{"a": -Infinity}', "[" * 200 + "]" * 200, "1" * 100):
        with pytest.raises(ConfigError, match=r"^c\.json"):
            loads_user(text, "c.json")


def _one_line(res) -> str:
    assert res.exit_code == 2, (res.exit_code, res.output)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in res.output, res.stderr
    return lines[0]


@pytest.mark.parametrize("args", [
    ["analyze", "--tau", "1e308,1e308"],
    ["analyze", "--tau", "1e308,1e308", "--json"],
    ["analyze", "--tau", "1,1e-320"],
    ["analyze", "--tau", "1,2", "--M", "9" * 400],
    ["analyze", "--tau", "1,2", "--M", "9" * 5000],
    ["calibrate", "overlap", "--tau", "4,5", "--d", "2", "--measure", "2:16.5", "--measure", "10:1e300"],
])
def test_overflowing_numbers_on_the_command_line(args) -> None:
    _one_line(CliRunner().invoke(main, args))


def test_analyze_json_is_strict_for_a_zero_time_stage() -> None:
    res = CliRunner().invoke(main, ["analyze", "--tau", "0,1", "--d", "0", "--json"])
    assert res.exit_code == 0
    _strict_loads(res.stdout)


TIMINGS = "device,layer,phase,batch,tokens,seconds\n"


@pytest.mark.parametrize(("rows", "message"), [
    ("rtx-3090,0,decode,1,1e308,0.001\n", r"t\.csv:2: column 'tokens': must be <= 9007199254740992"),
    ("rtx-3090,0,decode,1,100,1e-320\n", r"t\.csv:2: column 'seconds': must be between 1e-09 and 1e\+06 s"),
    ("rtx-3090,0,decode,1,100,1e17\n", r"column 'seconds': must be between"),
    ("rtx-3090,0,decode,1,100,0.002\nrtx-3090,1,decode,1,100,0.002\nrtx-3090,0,decode,1,100,0.001\n",
     r"t\.csv:4: contradicts line 2: device 'rtx-3090', layer 0, decode batch 1 tokens 100"),
])
def test_calibrate_profile_refuses_nonsense_rows(tmp_path, rows, message) -> None:
    path = tmp_path / "t.csv"
    path.write_text(TIMINGS + rows + "rtx-3090,5,decode,1,10,0.001\n")
    line = _one_line(CliRunner().invoke(main, ["calibrate", "profile", str(path), "--model", MODEL]))
    import re

    assert re.search(message, line), line


def test_identical_repeated_rows_are_not_contradictions(tmp_path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(TIMINGS + "rtx-3090,0,decode,1,100,0.002\nrtx-3090,0,decode,1,100,0.002\n")
    res = CliRunner().invoke(main, ["calibrate", "profile", str(path)])
    assert res.exit_code == 0, res.output


def test_calibrate_gateway_refuses_huge_durations(tmp_path) -> None:
    path = tmp_path / "g.csv"
    path.write_text("model,node,n,dur_min,dur_p5,dur_p50,dur_p95,dur_mean,tot_p50,q_p50,q_frac\n"
                    "m,a,20,1e300,1e300,1e300,1e300,1e300,1e300,0,0\nm,b,20,1,2,2,2,2,2,0,0\n")
    assert "magnitude limit" in _one_line(CliRunner().invoke(main, ["calibrate", "gateway", str(path), "--model", "m"]))


def test_calibrate_json_outputs_are_strict(tmp_path) -> None:
    res = CliRunner().invoke(main, ["calibrate", "overlap", "--tau", "4,5", "--d", "2", "--measure", "2:16.5",
                                    "--measure", "10:60.5", "--json"])
    assert res.exit_code == 0
    _strict_loads(res.stdout)


def test_control_characters_in_an_error_are_escaped() -> None:
    res = CliRunner().invoke(main, ["analyze", "--tau", "a\x1b[31mb"])
    assert _one_line(res) == "error: --tau: cannot parse 'a\\x1b[31mb' as a number (got 'a\\x1b[31mb')"
    assert "\x1b" not in res.stderr
    line = _one_line(CliRunner().invoke(main, ["plan", "x\x00y.yaml", "c.yaml"]))
    assert line == "error: a path contains a NUL byte"
