"""The serving Pareto chart renders a self-contained, deterministic SVG with readable axes."""

from __future__ import annotations

import re

import pytest

from partitioner.errors import InputError
from partitioner.report.serving_chart import serving_chart_svg


def _front(scale: float) -> list[dict]:
    return [{"batch": b, "in_flight": 4, "tokens_per_s_per_gpu": scale * b / (1 + 0.05 * b),
             "tokens_per_s_per_user": 30.0 / (1 + 0.05 * b)} for b in (1, 2, 4, 8, 16)]


def test_svg_has_both_axes_each_series_and_every_point():
    svg = serving_chart_svg({"serve": _front(10.0), "even (vLLM)": _front(6.0)})
    assert svg.lstrip().startswith("<?xml") and "</svg>" in svg
    for text in ("tokens/s per user (1 / TPOT)", "tokens/s per GPU", "serve", "even (vLLM)", "B=16×4"):
        assert text in svg  # svg.fonttype none: labels stay text a reader (and a search) can find
    assert not re.search(r'(href|src)="https?://', svg) and "<image" not in svg  # nothing fetched
    assert len(re.findall(r"B=\d+×4", svg)) == 10


def test_svg_is_deterministic():
    assert serving_chart_svg({"a": _front(1.0)}) == serving_chart_svg({"a": _front(1.0)})


def test_a_real_plan_frontier_renders():
    import partitioner

    plan = partitioner.plan("examples/models/llama-3.1-8b.yaml", "examples/clusters/seed.yaml", objective="serve")
    svg = serving_chart_svg({"serve": plan.frontier}, label_points=False)
    assert "tokens/s per GPU" in svg


@pytest.mark.parametrize("series, match", [
    ({}, "no series given"),
    ({"a": []}, "series 'a' has no points"),
    ({"a": [{"batch": 1}]}, "series 'a' point 0 lacks tokens_per_s_per_gpu, tokens_per_s_per_user, in_flight"),
])
def test_bad_input(series, match):
    with pytest.raises(InputError, match=match):
        serving_chart_svg(series)
