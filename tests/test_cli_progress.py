"""One progress line (partitioner.cli._progress): updated in place on a terminal and erased at the
end, silent off a terminal and under --json unless --progress."""

from __future__ import annotations

import io
import json
from pathlib import Path

from click.testing import CliRunner

from partitioner.cli import main
from partitioner.cli._progress import ProgressLine, wants_progress

ROOT = Path(__file__).resolve().parents[1]
MODEL = str(ROOT / "examples" / "models" / "qwen2.5-14b.yaml")
CLUSTER = str(ROOT / "examples" / "clusters" / "seed.yaml")


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_one_line_is_rewritten_then_erased() -> None:
    out = Tty()
    with ProgressLine(True, out, quiet_s=0.0) as line:
        for k in range(5):
            line(f"step {k}")
    text = out.getvalue()
    assert "\n" not in text  # never a new line
    assert text.count("\r") == 6 and text.endswith("\r\x1b[K")  # 5 rewrites, then erased
    assert "step 4" in text


def test_quiet_at_first_and_silent_when_disabled() -> None:
    out = Tty()
    ProgressLine(True, out, quiet_s=3600)("early")
    ProgressLine(False, out, quiet_s=0.0)("off")
    assert out.getvalue() == ""


def test_off_a_terminal_lines_at_most_once_a_second() -> None:
    out = io.StringIO()
    line = ProgressLine(True, out, quiet_s=0.0)
    for k in range(100):
        line(f"step {k}")
    line.close()
    assert out.getvalue().count("\n") == 1 and "\r" not in out.getvalue()


def test_who_gets_progress() -> None:
    assert wants_progress(False, data_on_stdout=False, stream=Tty())
    assert not wants_progress(False, data_on_stdout=True, stream=Tty())  # --json, --export
    assert not wants_progress(False, data_on_stdout=False, stream=io.StringIO())  # a log file
    assert wants_progress(True, data_on_stdout=True, stream=io.StringIO())  # --progress


def test_report_json_on_stdout_is_only_json() -> None:
    r = CliRunner().invoke(main, ["report", MODEL, CLUSTER, "--M", "8", "--pareto-max-M", "1", "--json", "-"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["format"] == "partitioner.report/1"
    assert r.stderr == ""


def test_plan_json_prints_no_progress() -> None:
    r = CliRunner().invoke(main, ["plan", MODEL, CLUSTER, "--json"])
    assert r.exit_code == 0, r.output
    json.loads(r.stdout)
    assert r.stderr == ""
