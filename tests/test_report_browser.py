"""The HTML report in a real headless Chromium (Playwright driving Debian's /usr/bin/chromium).

Checks that every number shown equals the JSON report's, that the calculator recomputes
exactly what `partitioner.analysis.analyze` returns, and that the page makes no network request.
Never runs `playwright install`: without /usr/bin/chromium the test skips, or FAILS when the
environment variable CI is set (CI installs the `chromium` Debian package).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from partitioner.analysis import analyze
from partitioner.problem import Problem
from partitioner.report.assets import CALC_KEYS
from partitioner.report.build import build_report
from partitioner.report.html import render_html
from partitioner.report.render_json import lookup, render_json
from partitioner.report.whatif import diff, parse_variation
from partitioner.result import Plan
from partitioner.solvers.brute import solve as brute
from test_report_data import toy_tables

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _unavailable(reason: str) -> None:
    message = f"{reason}; install Debian's chromium package (apt-get install -y chromium)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def report_files(tmp_path_factory) -> tuple[Path, dict[str, Any]]:
    """A small hand-made report (brute-force plans, an infeasible baseline, a what-if) on disk."""
    out = tmp_path_factory.mktemp("browser")
    problem = Problem(toy_tables(latency=0.5, capacity=(1.0, 4.0), L=4), M=8)
    rep = build_report(problem, Ms=(1, 8, 32), solver="brute", pareto_Ms=(1, 2, 4, 8))
    faster = Problem(toy_tables(latency=0.1, capacity=(1.0, 4.0), L=4), M=8)
    w = diff(parse_variation("link", "A:B=100,1"), rep.row("balanced"), "async",
             Plan.from_solution(faster, brute(faster)))
    rep = dataclasses.replace(rep, whatifs=(w,))
    html, js = out / "report.html", out / "report.json"
    html.write_text(render_html(rep), encoding="utf-8")
    js.write_text(render_json(rep), encoding="utf-8")
    return html, json.loads(js.read_text())


@pytest.fixture(scope="module")
def context(tmp_path_factory):
    if not Path(CHROMIUM).exists():
        _unavailable(f"{CHROMIUM} not found")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the python package playwright is not installed")
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=ARGS)  # fresh profile dir
        yield ctx
        ctx.close()


@pytest.fixture
def page(context, report_files):
    html, _ = report_files
    pg = context.new_page()
    requests: list[str] = []
    pg.on("request", lambda r: requests.append(r.url))
    pg.goto(html.as_uri())
    pg.wait_for_load_state("load")
    pg.requests = requests  # type: ignore[attr-defined]
    yield pg
    pg.close()


def test_no_network_request(page, report_files) -> None:
    html, _ = report_files
    page.fill("#calc-tau", "1, 2")  # interacting must not fetch anything either
    page.fill("#calc-d", "0.5")
    assert page.requests == [html.as_uri()]


def test_numbers_shown_equal_json(page, report_files) -> None:
    _, data = report_files
    cells = page.eval_on_selector_all(
        "[data-key]", "els => els.map(e => [e.dataset.key, e.dataset.value, e.dataset.unit, e.textContent])")
    assert len(cells) > 100
    keys = {c[0] for c in cells}
    assert {"plans.balanced.tau_max", "plans.even.by_M.8.T_gpipe", "plans.even.memory.0.used_gb",
            "pareto.0.throughput", "whatif.0.d_throughput", "whatif.0.T.32.change"} <= keys
    assert data["plans"]["even"]["feasible"] is False  # shown, with its numbers
    for key, value, unit, text in cells:
        expected = lookup(data, key)
        assert float(value) == expected, key
        shown = float(text.rstrip("%")) / (100 if unit == "%" else 1)
        assert shown == pytest.approx(expected, rel=2e-3, abs=1e-3), key


def _calc(page) -> dict[str, Any]:
    pairs = page.eval_on_selector_all("[data-calc]", "els => els.map(e => [e.dataset.calc, e.dataset.value])")
    return {k: json.loads(v) for k, v in pairs}


def _same(got: Any, want: Any, key: str) -> None:
    if isinstance(want, (list, tuple)):
        assert len(got) == len(want), key
        for g, w in zip(got, want):
            _same(g, w, key)
    elif isinstance(want, bool) or want is None:
        assert got == want, key
    else:
        assert math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-15), (key, got, want)


def _check(page, tau: list[float], d: list[float], M: int, rho: float) -> dict[str, Any]:
    got = _calc(page)
    want = analyze(tau, d, M=M, rho=rho).to_dict()
    assert set(got) == set(CALC_KEYS)
    for key in CALC_KEYS:
        _same(got[key], want[key], key)
    return got


def test_calculator_starts_from_base_plan(page, report_files) -> None:
    _, data = report_files
    base = data["plans"][data["base"]]
    got = _check(page, base["tau"], base["d"], data["plan_M"], 1.0)
    assert got["tau_max"] == base["tau_max"]


def test_calculator_recomputes_on_edit(page) -> None:
    page.fill("#calc-tau", "0.5, 1, 1, 5")
    page.fill("#calc-d", "4.6, 0.1, 0.1")
    page.fill("#calc-M", "8")
    page.fill("#calc-rho", "0.8")
    got = _check(page, [0.5, 1, 1, 5], [4.6, 0.1, 0.1], 8, 0.8)
    # theory.md Table 2 row 8: T_async(8) = 47.3, T_block(8) = 48.0, M* = 3.46; first binding link 1.
    assert got["T_async"] == pytest.approx(47.3) and got["T_block"] == pytest.approx(48.0)
    assert got["crossover_batches"] == pytest.approx(3.46) and got["first_binding_link"] == 1
    assert page.text_content("#calc-error") == ""


def test_calculator_rejects_bad_input(page) -> None:
    page.fill("#calc-tau", "1, 2, 3")
    page.fill("#calc-d", "0.1")
    assert "S-1 = 2" in page.text_content("#calc-error")
    assert _calc(page)["T_async"] is None
    page.fill("#calc-d", "0.1, -1")
    assert "d[1] must be finite and >= 0" in page.text_content("#calc-error")
