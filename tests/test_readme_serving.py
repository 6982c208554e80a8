"""The README's request-mix worked example is what benchmarks/mix_example.py prints now: every
line of its table, the closed form and the seeded simulation alike (no stale figures)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _example() -> str:
    spec = importlib.util.spec_from_file_location("mix_example", ROOT / "benchmarks" / "mix_example.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return str(mod.report(simulate=True))


def test_readme_mix_example_is_the_scripts_output() -> None:
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```\n(load {19}source.*?)\n```", readme, flags=re.S)
    assert len(blocks) == 1, "the README has one request-mix example table"
    assert blocks[0] == _example()
