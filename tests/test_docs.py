"""The project's own docs/ exist, and every --help text and message cites them by their real path."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from partitioner.cli import main

REPO = Path(__file__).resolve().parents[1]
DOCS = ("theory.md", "algorithms.md", "costmodel.md")


@pytest.mark.parametrize("name", DOCS)
def test_docs_are_shipped_and_link_to_each_other(name) -> None:
    text = (REPO / "docs" / name).read_text(encoding="utf-8")
    assert text.startswith("# ") and len(text) > 3000
    for target in re.findall(r"\]\(([a-z-]+\.md)\)", text):
        assert (REPO / "docs" / target).is_file(), target


def test_every_docs_path_in_the_package_exists() -> None:
    cited = set()
    for source in (REPO / "partitioner").rglob("*.py"):
        cited |= set(re.findall(r"docs/([a-z-]+\.md)", source.read_text(encoding="utf-8")))
    assert cited and all((REPO / "docs" / name).is_file() for name in cited), cited


def _helps() -> list[list[str]]:
    from fuzz.harness import commands

    return [[*path, "--help"] for path, _ in commands()] + [["--help"], ["calibrate", "--help"]]


@pytest.mark.parametrize("args", _helps(), ids=lambda a: " ".join(a))
def test_help_cites_docs_by_path(args) -> None:
    res = CliRunner().invoke(main, args, terminal_width=200)
    assert res.exit_code == 0
    assert not re.search(r"(?<!docs/)\b(theory|algorithms|costmodel)\.md", res.stdout), res.stdout


def test_table_sources_cite_docs() -> None:
    res = CliRunner().invoke(main, ["analyze", "--tau", "0.5,1,1,5", "--M", "8"], terminal_width=200)
    assert "source (docs/theory.md)" in res.stdout
