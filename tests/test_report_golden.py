"""Golden Markdown of `partition report` on the seed example (qwen2.5-14b on seed.yaml).

The numbers come from the roofline cost model, whose defaults change; regenerate with
`PARTITIONER_UPDATE_GOLDEN=1 pytest tests/test_report_golden.py` and review the diff by eye.
"""

from __future__ import annotations

import os
from pathlib import Path

from click.testing import CliRunner

from partitioner.cli import main

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "data" / "report-seed.md"
ARGS = ["report", str(ROOT / "examples" / "models" / "qwen2.5-14b.yaml"),
        str(ROOT / "examples" / "clusters" / "seed.yaml"), "--phase", "prefill",
        "--link", "laptop-5090:node02-3090=0.05,100", "--time-limit", "600"]  # exact on any machine


def test_seed_markdown_matches_golden(tmp_path) -> None:
    out = tmp_path / "report.md"
    result = CliRunner().invoke(main, [*ARGS, "--md", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    if os.environ.get("PARTITIONER_UPDATE_GOLDEN"):
        GOLDEN.write_text(text, encoding="utf-8")
    assert text == GOLDEN.read_text(encoding="utf-8"), "rerun with PARTITIONER_UPDATE_GOLDEN=1 and review the diff"
