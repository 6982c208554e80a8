"""Fuzz every command: generated garbage never escapes the error boundary.

For each command of the CLI's registry (`partitioner.cli.COMMANDS`, nested groups included), a
seeded hypothesis run (the "ci" profile of tests/conftest.py: derandomized) feeds generated cases
(tests/fuzz/grammar.py) in-process and checks the contract of `harness.problems`: exit code 0, 2,
3 or 4, no traceback, one ``error:`` line at the end of stderr, within the per-case time limit.
The corpus of known reproducers must each fail cleanly (exit 2, 3 or 4). Budget: the number of
generated cases per command is PARTITIONER_FUZZ_EXAMPLES (default 60, about 30 s in all on the
2-core CI machine); `python benchmarks/fuzz.py` runs the same harness longer.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from fuzz import grammar, harness
from fuzz.corpus import CORPUS, OTHER_BRANCHES

EXAMPLES = int(os.environ.get("PARTITIONER_FUZZ_EXAMPLES", "60"))
COMMANDS = harness.commands()


def _real(case: harness.Case) -> harness.Case:
    files = {k: grammar.real_plan_json() if v == "@real" else v for k, v in case.files.items()}
    return harness.Case(list(case.args), files)


@pytest.mark.parametrize(("name", "case"), CORPUS, ids=[n for n, _ in CORPUS])
def test_reproducer_fails_cleanly(name, case, tmp_path) -> None:
    before = dict(case.files.items())
    outcome = harness.run_case(_real(case), tmp_path)
    assert harness.problems(outcome) == [], (case.describe(), outcome.stderr)
    assert outcome.exit_code in (2, 3, 4), (outcome.exit_code, outcome.stdout[-300:], outcome.stderr)
    assert len(outcome.stderr.splitlines()) == 1 or name.startswith("report-"), outcome.stderr
    for written, content in before.items():  # inputs and foreign files are never modified
        if isinstance(content, str) and content != "@real":
            assert (tmp_path / written).read_text(encoding="utf-8", errors="surrogatepass") == content
    if name == "report-md-ok-html-missing-dir":
        assert not (tmp_path / "ok.md").exists()  # all of one command's files, or none


@pytest.mark.parametrize(("name", "case"), OTHER_BRANCHES, ids=[n for n, _ in OTHER_BRANCHES])
def test_reproducer_of_export_validation(name, case, tmp_path) -> None:
    outcome = harness.run_case(_real(case), tmp_path)
    assert harness.problems(outcome) == [] and outcome.exit_code in (2, 3, 4), outcome.stderr


def test_registry_is_enumerated() -> None:
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"plan", "report", "analyze", "export", "calibrate gateway", "calibrate profile"} <= names


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_generated_cases_keep_the_contract(path, command, tmp_path_factory) -> None:
    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                                     HealthCheck.function_scoped_fixture])
    @given(harness.cases_for(path, command))
    def check(case: harness.Case) -> None:
        outcome = harness.run_case(case, Path(tmp_path_factory.mktemp("case")))
        assert harness.problems(outcome) == [], case.describe()

    check()


def test_a_command_added_to_the_registry_is_fuzzed_and_a_bug_is_caught(monkeypatch, tmp_path) -> None:
    from partitioner import cli

    monkeypatch.setitem(cli.COMMANDS, "broken", ("fuzz.broken", "A broken command."))
    found = dict(harness.commands())
    assert ("broken",) in found
    outcome = harness.run_case(harness.Case(["broken", "x"]), tmp_path)
    assert outcome.exit_code == 1 and outcome.stderr.startswith("error: internal error (KeyError")
    assert "rerun with --debug" in outcome.stderr and len(outcome.stderr.splitlines()) == 1
    assert harness.problems(outcome) == [f"exit code 1 not in {sorted(harness.EXIT_CODES)}"]
