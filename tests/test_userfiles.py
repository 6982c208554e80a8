"""Every edge reader fails the same one-line way on a missing, unreadable or binary file."""

from __future__ import annotations

import re

import pytest

from partitioner.errors import ConfigError
from partitioner.userfiles import read_user_text


def test_reads_text_and_names_the_shown_path(tmp_path) -> None:
    (tmp_path / "a.yaml").write_text("x: 1\n", encoding="utf-8")
    assert read_user_text(tmp_path / "a.yaml") == "x: 1\n"
    with pytest.raises(ConfigError, match=r"^shown\.json: file not found$"):
        read_user_text(tmp_path / "missing.json", "shown.json")


def test_a_directory_and_a_binary_file_are_one_line_errors(tmp_path) -> None:
    with pytest.raises(ConfigError, match=r": is a directory, not a file$"):
        read_user_text(tmp_path)
    (tmp_path / "b.csv").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ConfigError, match=r"b\.csv: cannot read \(.*utf-8.*\)$"):
        read_user_text(tmp_path / "b.csv")


@pytest.mark.parametrize("command", [["plan", "{d}", "{d}"], ["calibrate", "gateway", "{d}", "--model", "m"],
                                     ["calibrate", "profile", "{d}"]])
def test_commands_given_a_directory_say_so(tmp_path, command) -> None:
    from click.testing import CliRunner

    from partitioner.cli import main

    res = CliRunner().invoke(main, [c.format(d=tmp_path) for c in command])
    assert res.exit_code == 2, res.output
    assert res.stdout == "" and len(res.stderr.strip().splitlines()) == 1 and "error:" in res.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nosuch"], r"^error: partition: No such command 'nosuch'\. \(see 'partition --help'\)$"),
        (["plan", "--M", "0", "a", "b"], r"^error: partition plan: Invalid value for '--M': 0 is not in the range"),
        (["calibrate", "overlap"], r"^error: partition calibrate overlap: Missing option '--tau'"),
    ],
)
def test_click_usage_errors_are_one_line_too(args, message) -> None:
    from click.testing import CliRunner

    from partitioner.cli import main

    res = CliRunner().invoke(main, args, prog_name="partition")
    assert res.exit_code == 2 and res.stdout == ""
    assert len(res.stderr.strip().splitlines()) == 1
    assert re.search(message, res.stderr.strip()), res.stderr
