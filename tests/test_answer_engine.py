"""The default serving answer keeps to the engine's launch-order rule (partitioner.planning.serving,
"Engines"): with `--engine vllm`, or a cluster whose `engine:` is vllm, every replica is one vLLM
0.33.0 places (partitioner.solvers.engine_sequences; export/vllm.py's rank rules), so its export
refuses nothing."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from partitioner.api import load_inputs
from partitioner.cli import main
from partitioner.costs import build_tables
from partitioner.export import render
from partitioner.planning.answer import default_answer
from partitioner.planning.pipeline import launch_engine, with_metadata_any
from partitioner.planning.serving import launchable

MODEL = "examples/models/llama-3.1-8b.yaml"
# Three hosts with 2, 2 and 1 GPUs: 16 GB of bf16 weights need four of the 8 GB cards (5 GB usable
# each) or the 16 GB card and two others. The generic answer chains all five GPUs over the three
# hosts, which no vLLM 0.33.0 launch places (multiprocessing needs equal counts per host, Ray's
# order is certain on two hosts only).
TRI = """name: tri
devices:
  - {name: g0, gpu: rtx-3070, node: h1}
  - {name: g1, gpu: rtx-3070, node: h1}
  - {name: g2, gpu: rtx-3070, node: h2}
  - {name: g3, gpu: rtx-3070, node: h2}
  - {name: g4, gpu: rtx-4080, node: h3}
links:
  intra_node: pcie4
  inter_node: 100gbe
reserve_gb: 3.0
"""


def _plans(result: object) -> tuple:
    return tuple(result.replicas) if hasattr(result, "replicas") else (result,)


def _cluster(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "tri.yaml"
    path.write_text(TRI + extra)
    return path


def test_generic_answer_needs_a_layout_vllm_cannot_place(tmp_path: Path) -> None:
    """The case the rule exists for: without an engine the answer spans 3 hosts with 2+2+1 GPUs."""
    m, c = load_inputs(MODEL, _cluster(tmp_path))
    assert launch_engine(m, c, None) is None
    ans = default_answer(m, c)
    base = build_tables(m.with_batch(1, 1), c)
    (plan,) = _plans(ans.result)
    assert sorted({st.node for st in plan.stages}) == ["h1", "h2", "h3"]
    assert not launchable(plan, "vllm", base, c)
    exp = render(with_metadata_any(ans.result, m, c), "vllm")
    assert any("no launch places these ranks" in line for line in exp.cannot_express)


def test_engine_vllm_answer_exports_with_no_placement_refusal(tmp_path: Path) -> None:
    got = CliRunner().invoke(main, ["plan", MODEL, str(_cluster(tmp_path)), "--engine", "vllm", "--export", "vllm"])
    assert got.exit_code == 0, got.output
    assert "vllm serve" in got.output and "cannot express" not in got.output and "infeasible" not in got.output


def test_cluster_engine_vllm_plans_with_its_rule_by_default(tmp_path: Path) -> None:
    """No --engine: the cluster's `engine: vllm` sets the rule; every replica is launchable and the
    export refuses nothing."""
    m, c = load_inputs(MODEL, _cluster(tmp_path, "engine: vllm\n"))
    assert launch_engine(m, c, None) == "vllm"
    ans = default_answer(m, c)
    base = build_tables(m.with_batch(1, 1), c)
    plans = _plans(ans.result)
    assert plans and all(launchable(p, "vllm", base, c) for p in plans)
    exp = render(with_metadata_any(ans.result, m, c), "vllm")
    assert exp.cannot_express == () and exp.unsupported == ()
    assert ans.failure is not None and {x.kind for x in ans.failure.losses} == {"2×rtx-3070", "rtx-4080"}
