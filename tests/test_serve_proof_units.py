"""The serve proof line prints its bound in tokens/s, the answer's unit (partitioner.cli._plan_view
`serve_bound`), for one pipeline of single GPUs, a TP-group plan and a deployment alike."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from partitioner.cli._plan_view import _proof_line, serve_bound

MODEL = "examples/models/llama-3.1-8b.yaml"
TWO = """name: two
devices:
  - {name: a0, gpu: l4, node: n1}
  - {name: a1, gpu: l4, node: n1}
links:
  intra_node: pcie4
"""


def _numbers(line: str) -> tuple[float, float]:
    """(tokens/s, bound) as printed: 'X tokens/s, within G% of the upper bound U tokens/s'."""
    got = re.search(r"([\d,.]+) tokens/s, within [\d.]+% of the upper bound ([\d,.]+) tokens/s", line)
    assert got is not None, line
    return float(got.group(1).replace(",", "")), float(got.group(2).replace(",", ""))


def test_serve_bound_by_hand() -> None:
    assert serve_bound(900.0, 1000.0) == "900 tokens/s, within 10.0% of the upper bound 1,000 tokens/s"
    assert serve_bound(1234.5, 1234.5).endswith("within 0.0% of the upper bound 1,234 tokens/s")


@pytest.mark.parametrize("tp", [None, "uniform"])
def test_plan_bound_is_in_tokens_per_s_and_not_below_the_answer(tmp_path: Path, tp: str | None) -> None:
    """The serve search (tp None) and the TP-group serve planner ("uniform": TP groups of one
    machine, partitioner.deploy.serve) keep Plan.lower_bound = 1 / (bound in tokens/s); a TP
    plan used to carry tau_max's bound, printed as micro-batches/s below its own tokens/s."""
    import partitioner

    path = tmp_path / "two.yaml"
    path.write_text(TWO)
    plan = partitioner.plan(MODEL, path, objective="serve", tp=tp)
    tps = plan.serving.tokens_per_s
    assert plan.objective_value[0] == pytest.approx(1 / tps)
    assert plan.lower_bound > 0 and 1 / plan.lower_bound >= tps * (1 - 1e-9)
    line = _proof_line(dataclasses.replace(plan, optimal=False))  # the branch that prints the bound
    shown, bound = _numbers(line)
    assert shown == pytest.approx(tps, rel=1e-3) and bound >= shown


def test_deployment_line_uses_the_same_form() -> None:
    from partitioner.deploy.deployment import Deployment

    d = Deployment(replicas=(), unused=(), optimal=False, upper_bound_tokens_per_s=2000.0)
    assert serve_bound(d.tokens_per_s, d.upper_bound_tokens_per_s).startswith("0 tokens/s, within 100.0%")
