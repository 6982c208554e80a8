"""Renderers: Markdown, JSON, terminal and the self-contained HTML page (without a browser)."""

from __future__ import annotations

import dataclasses
import json
import re
from html.parser import HTMLParser

import pytest
from test_report_data import toy_tables

from partitioner.problem import Problem
from partitioner.report.build import build_report
from partitioner.report.compare import infeasible_row
from partitioner.report.html import render_html
from partitioner.report.render_json import REPORT_FORMAT, lookup, render_json
from partitioner.report.render_md import render_md
from partitioner.report.render_text import render_text
from partitioner.report.whatif import diff, parse_variation
from partitioner.result import Plan
from partitioner.solvers.brute import solve as brute


@pytest.fixture(scope="module")
def report():
    rep = build_report(Problem(toy_tables(), M=8), Ms=(1, 8), solver="brute", baselines=("even",),
                       pareto_Ms=(1, 2, 4))
    faster = Problem(toy_tables(latency=1.0), M=8)
    w = diff(parse_variation("link", "A:B=1000,1"), rep.row("balanced"), "async",
             Plan.from_solution(faster, brute(faster)))
    gone = infeasible_row("memory", "baseline", "layer 'l0' needs 9 GB | more than any device")
    return dataclasses.replace(rep, rows=(*rep.rows, gone), whatifs=(w,), cluster="toy-cluster")


@pytest.fixture(scope="module")
def page(report) -> str:
    return render_html(report)


def test_json_round_trip(report) -> None:
    data = json.loads(render_json(report))
    assert data["format"] == REPORT_FORMAT and data["Ms"] == [1, 8] and data["base"] == "balanced"
    assert lookup(data, "plans.balanced.by_M.8.T_async") == 21.0
    assert lookup(data, "plans.balanced.violations.0.excess") == 3.0
    assert data["plans"]["memory"]["feasible"] is False and "9 GB" in data["plans"]["memory"]["reason"]
    assert lookup(data, "whatif.0.T.8.T") == 19.0
    assert lookup(data, "pareto.1.first_latency") == 7.0
    assert render_json(report) == render_json(report)  # deterministic


def test_markdown(report) -> None:
    md = render_md(report)
    assert md.startswith(f"<!-- {REPORT_FORMAT} -->\n# Partition report: toy on toy-cluster")
    # by hand (test_report_data): tau = (2, 2) s, sigma_max 5 s, first latency 7 s, M* 4.5; 1 sequence per
    # micro-batch and K = 1 in flight, so the closed loop binds: P = max(K·2, 2 + 3 + 2 + d_ret 3) = 10 s -> 0.1/s
    assert "| balanced | ok | 2 | 0.1 | 2 s | 5 s | 7 s | 4.5 |" in md
    assert "| memory | llama.cpp | layer 'l0' needs 9 GB \\| more than any device |" in md
    # the 1 s link: P = 2 + 1 + 2 + d_ret 1 = 6 s -> 1/6 tokens/s, +66.7% over 0.1
    assert "| --link A:B=1000,1 | 0.1667 tokens/s | +66.7% | 5 s | -28.6% | -28.6% | -9.5% | B, A |" in md
    assert "Supported points only" in md
    head = md[: md.index("## Plans")]
    # the closed loop at K = 1: the 1-device plan (P = 6 s, no link) beats the balanced B (1) → A (2) (P = 10 s)
    assert "- **Layout:** B (3)" in head
    assert head.index("- **Best:** 1 GPU · 0.1667 tokens/s (0.1667/GPU, 0.1667/user) · TPOT 6 s · ×1.67 vs vLLM's "
                      "even split") < head.index("- **Layout:**")
    assert "the makespan objective at M = 1 (Pareto sweep)" in head
    assert "- **Bottleneck:** stage 0 on B, τ_max 6 s" in head
    assert "vLLM (even): ×1.67 the throughput (0.1 tokens/s)" in head  # 0.1667 / 0.1


def test_phase_whatif_is_its_own_plan(report) -> None:
    """A prefill re-plan is not a percentage of the decode plan: no relative change is shown."""
    faster = Problem(toy_tables(latency=1.0), M=8)
    w = diff(parse_variation("phase", "prefill"), report.row("balanced"), "async",
             Plan.from_solution(faster, brute(faster)))
    assert w.d_throughput is None and not w.comparable
    rep = dataclasses.replace(report, whatifs=(w,))
    md = render_md(rep)
    assert "| --phase prefill | 0.1667 tokens/s | other phase |" in md
    data = json.loads(render_json(rep))
    assert data["whatif"][0]["d_throughput"] is None and data["whatif"][0]["T"]["8"]["change"] is None


def test_terminal(report) -> None:
    text = render_text(report, width=240)
    assert "INFEASIBLE" in text and "Pareto frontier" in text and "--link A:B=1000,1" in text


class _Cells(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.cells: list[dict[str, str]] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self._open: dict[str, str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "td" and "data-key" in a:
            self._open = {**{k: v or "" for k, v in a.items()}, "text": ""}
            self.cells.append(self._open)

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._open["text"] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._open = None


def test_html_numbers_match_json(report, page) -> None:
    data = json.loads(render_json(report))
    parser = _Cells()
    parser.feed(page)
    assert len(parser.cells) > 40
    for c in parser.cells:
        value = lookup(data, c["data-key"])
        assert float(c["data-value"]) == value
        number = re.match(r"[+-]?[0-9][0-9,.]*", c["text"].lstrip("×")).group(0).replace(",", "")
        shown = float(number) / float(c["data-scale"])
        assert shown == pytest.approx(value, rel=2e-3, abs=1e-3)


def test_html_is_self_contained(page) -> None:
    parser = _Cells()
    parser.feed(page)
    assert page.count("<svg") == 4  # T(M), stages, Gantt, Pareto
    assert page.index('id="headline"') < page.index('id="table-plans"') < page.index('id="chart-stages"')
    assert "<text" in page and 'width="' not in page.split("<svg", 1)[1].split(">", 1)[0]  # text, responsive
    for tag, attrs in parser.tags:
        assert tag not in ("link", "img", "iframe", "object", "embed"), tag
        assert not (tag == "script" and attrs.get("src")), attrs
        for name in ("src", "href", "xlink:href"):
            assert not (attrs.get(name) or "#").startswith(("http", "//")), (tag, attrs)
    assert not re.search(r"url\((?!#)|@import|@font-face", page)
    assert "calc-tau" in page and 'data-calc="T_real"' in page
