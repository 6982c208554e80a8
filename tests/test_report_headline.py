"""The report's headline is the best plan by the number it prints: over every bundled model ×
cluster pair, no plan the report shows (objectives, engine splits, Pareto plans, the serve plan
and the engines' splits at its batch) beats the headline's plan on both tokens/s and TPOT."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from partitioner.cli.report import Options, _build
from partitioner.errors import ConfigError
from partitioner.report.compare import PlanMetrics, PlanRow
from partitioner.report.headline import Candidate, choose
from partitioner.report.render_json import render_json
from partitioner.report.solving import report_budget

ROOT = Path(__file__).resolve().parents[1]
MODELS = sorted((ROOT / "examples" / "models").glob("*.yaml"))
CLUSTERS = sorted((ROOT / "examples" / "clusters").glob("*.yaml"))
PAIRS = [(m, c) for m in MODELS for c in CLUSTERS]
WORK = 60  # steps per report: the property holds for whatever the budget finds


def _metrics(tps: float, tpot: float | None) -> PlanMetrics:
    return PlanMetrics(devices=("A",), layers=((0, 1),), tau=(1.0,), d=(), tau_max=1.0, sigma_max=1.0, period=1.0,
                       throughput=1.0, first_latency=1.0, homogeneity_bias=0.0, comm_underestimate=0.0,
                       crossover_batches=2.0, first_binding_link=None, violations=(), memory=(), by_M=(),
                       tokens_per_s=tps, tpot_s=tpot, ttft_s=None if tpot is None else 10 * tpot)


def _cand(name: str, tps: float, tpot: float | None, feasible: bool = True) -> Candidate:
    row = PlanRow(name, "optimal", name, feasible, "", "dp", True, _metrics(tps, tpot))
    return Candidate(name, name, row, None, ())


def test_choose_most_tokens_then_lowest_tpot() -> None:
    cands = [_cand("a", 100.0, 0.05), _cand("b", 300.0, 0.09), _cand("c", 300.0, 0.08), _cand("d", 900.0, 0.01, False)]
    assert choose(cands).name == "c"  # d does not fit; b and c tie on tokens/s, c has the lower TPOT
    assert choose(cands, tpot_s=0.06).name == "a"  # the only plan within the TPOT limit
    assert choose(cands, tpot_s=0.001).name == "c"  # none within: the fastest
    assert choose(cands, ttft_s=0.6).name == "a"  # TTFT = 10 TPOT here
    assert choose([_cand("x", 1.0, None, False)]) is None


def _rows(data: dict) -> list[tuple[str, float, float | None]]:
    """(name, tokens/s, TPOT) of every plan row the JSON report holds."""
    out = [(n, p["tokens_per_s"], p.get("tpot_s")) for n, p in data["plans"].items() if p["feasible"]]
    if data["decode"]:
        out += [(f"decode.{n}", p["tokens_per_s"], p.get("tpot_s"))
                for n, p in data["decode"]["plans"].items() if p["feasible"]]
    out += [(f"pareto M={p['M']}", p["tokens_per_s"], p["tpot_s"]) for p in data["pareto"]]
    return out


@pytest.mark.parametrize("model,cluster", PAIRS, ids=[f"{m.stem}-{c.stem}" for m, c in PAIRS])
def test_no_row_beats_the_headline(model: Path, cluster: Path) -> None:
    try:
        rep = _build(str(model), str(cluster), Ms=(1, 8), plan_M=8, opts=Options(), base_regime="async",
                     solver="auto", order=None, budget=report_budget(None, WORK), pareto_max_M=4096, variations=(),
                     export="vllm", charts=False, say=lambda _: None)
    except ConfigError as exc:  # a measured profile without costs for this cluster's GPUs
        assert "has no cost for device" in str(exc)
        pytest.skip(str(exc))
    data = json.loads(render_json(rep))
    if data["nofit"] is not None:
        assert data["headline"] is None and data["nofit"]["additions"]
        return
    h = data["headline"]
    rows = _rows(data)
    assert len(rows) >= 5 and h["compared"] >= 5
    for name, tps, tpot in rows:
        faster = tpot is not None and h["tpot_s"] is not None and tpot < h["tpot_s"] * (1 - 1e-9)
        assert not (tps > h["tokens_per_s"] * (1 + 1e-9) and (faster or h["tpot_s"] is None)), (name, tps, tpot, h)
    assert h["tokens_per_s"] == pytest.approx(max(t for _, t, _ in rows), rel=1e-9)
    assert h["gpus"] == len(h["devices"]) and h["tokens_per_gpu"] == pytest.approx(h["tokens_per_s"] / h["gpus"])
