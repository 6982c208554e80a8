"""The report's one budget (partitioner.solvers.budget.Budget, report/solving.py): counted in work,
so a busy machine gives the same report; the time limit and Ctrl-C cut the part that is running,
keep the best so far and say which part they cut. Time is an injected clock here, never the wall."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_deterministic_budget import cpu_hogs

from partitioner import interrupts
from partitioner.cli import main
from partitioner.cli._report_parts import MIN_REPLICAS_WORK
from partitioner.cli.report import Options, _build
from partitioner.models import load_cluster
from partitioner.report import html as html_mod
from partitioner.report.html import CHARTS, render_html
from partitioner.report.render_json import report_dict
from partitioner.report.render_md import render_md
from partitioner.report.solving import REPORT_WORK, report_budget
from partitioner.report.whatif import parse_variations
from partitioner.serving import run as serve_run
from partitioner.solvers import budget as budget_mod

ROOT = Path(__file__).resolve().parents[1]
MODEL = str(ROOT / "examples" / "models" / "llama-3.1-8b.yaml")
CLUSTER = str(ROOT / "examples" / "clusters" / "l4x8.yaml")
WORK = 120  # steps: the serve search on l4x8 needs about 500, so this budget cuts it


class FakeClock:
    """The one clock every Budget reads, moved only by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(budget_mod, "clock", fake)
    monkeypatch.setattr(interrupts, "_seen", [0])  # this test's own Ctrl-C count
    monkeypatch.setattr(interrupts, "_base", [0])
    return fake


def _report(budget: Any, variations: tuple[Any, ...] = (), say: Any = lambda _: None) -> Any:
    return _build(MODEL, CLUSTER, Ms=(1, 8), plan_M=8, opts=Options(), base_regime="async", solver="auto", order=None,
                  budget=budget, pareto_max_M=64, variations=variations, export="vllm", charts=True, say=say)


def _after_points(monkeypatch: pytest.MonkeyPatch, n: int, event: Any) -> None:
    """Call `event()` when the serve search scores its n-th point (a fixed step of the search), by
    either route: a point recorded per solve (serving.run) or one split scored out of every split
    or the label DP's (serving.exhaustive)."""
    from partitioner.serving import exhaustive

    record, split_point = serve_run._Search.record, exhaustive.split_point
    seen = [0]

    def step() -> None:
        seen[0] += 1
        if seen[0] == n:
            event()

    def counted(self: Any, point: Any) -> bool:
        out = record(self, point)
        step()
        return out

    def scored(*args: Any, **kw: Any) -> Any:
        point = split_point(*args, **kw)
        step()
        return point

    monkeypatch.setattr(serve_run._Search, "record", counted)
    monkeypatch.setattr(exhaustive, "split_point", scored)


def test_the_work_budget_cuts_the_serve_search_and_says_so(clock: FakeClock) -> None:
    """No time limit: the serve search stops at its share of the work (the same step on any
    machine), its best plan so far is the serve row, and the report names the cut."""
    budget = report_budget(None, WORK)
    rep = _report(budget)
    assert rep.decode is not None and rep.decode.row("serve").feasible
    assert [c for c in rep.cut if c.startswith("the serve search")] == [
        next(c for c in rep.cut if "the work budget" in c)]
    assert rep.pareto and rep.headline is not None  # the parts after it still ran (their work was kept)
    assert "Cut short" in render_md(rep) and report_dict(rep)["cut"] == list(rep.cut)
    more = report_budget(None, 20 * WORK)
    full = _report(more)
    assert not any("serve search" in c for c in full.cut)  # enough work: the search ends by itself
    assert full.decode is not None
    assert full.decode.row("serve").metrics.tokens_per_s >= rep.decode.row("serve").metrics.tokens_per_s * (1 - 1e-9)


def test_the_time_limit_in_the_serve_search_keeps_its_best_plan_and_cuts_what_follows(
        clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """The limit passes at the serve search's 5th point: the search returns its best so far, the
    Pareto sweep and the what-ifs (which would build new cost tables) do not start, and the HTML
    page leaves its charts out; every cut is named with what cut it."""
    budget = report_budget(30.0, None)

    def expire() -> None:
        clock.now += 31.0

    _after_points(monkeypatch, 5, expire)
    variations = parse_variations(without=(load_cluster(CLUSTER).devices[0].name,), with_=(), link=(), regime=(),
                                  phase=())
    rep = _report(budget, tuple(variations))
    assert rep.decode is not None and rep.decode.row("serve").feasible
    assert rep.headline is not None and {r.name for r in rep.rows} >= {"balanced", "throughput", "makespan"}
    cut = "\n".join(rep.cut)
    assert "the serve search" in cut and "cut short by the time limit" in cut
    assert "the Pareto sweep (0 of its 7 values of M solved)" in cut and not rep.pareto
    assert "the what-ifs (1 of 1 not planned)" in cut
    assert rep.whatifs[0].reason == "not planned: the time limit cut the report short"
    html = render_html(rep, lambda: budget.why())
    assert 'id="charts-left-out"' in html and "cut short by the time limit" in html and "<svg" not in html


def test_ctrl_c_in_the_serve_search_returns_the_report_so_far(clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C (counted and raised as the CLI's handler does) at the serve search's 5th point: no
    new solve starts, and the report still has its rows, the serve plan so far and a headline."""
    budget = report_budget(None, None)

    def press() -> None:
        interrupts._seen[0] += 1
        raise KeyboardInterrupt

    _after_points(monkeypatch, 5, press)
    rep = _report(budget)
    assert rep.decode is not None and rep.decode.row("serve").feasible and rep.headline is not None
    cut = "\n".join(rep.cut)
    assert "the serve search" in cut and "cut short by Ctrl-C" in cut and "the Pareto sweep" in cut
    assert not rep.pareto


def test_ctrl_c_as_the_pareto_sweep_starts_keeps_every_plan_so_far(clock: FakeClock) -> None:
    """Ctrl-C counted as the sweep's first solve starts: that solve starts no DP (no new solve after
    Ctrl-C) and the best known plan stands in, unproven; the sweep stops, the what-ifs are not planned."""
    def say(line: str) -> None:
        if line.endswith("makespan plan at M = 1 (async)"):
            interrupts._seen[0] += 1

    variations = parse_variations(without=(load_cluster(CLUSTER).devices[0].name,), with_=(), link=(), regime=(),
                                  phase=())
    rep = _report(report_budget(None, WORK), tuple(variations), say)
    assert rep.decode is not None and rep.headline is not None
    assert [p.M for p in rep.pareto] == [1] and not rep.pareto[0].optimal
    cut = "\n".join(rep.cut)
    assert "the Pareto sweep (1 of its 7 values of M solved): cut short by Ctrl-C" in cut
    assert "the what-ifs (1 of 1 not planned): cut short by Ctrl-C" in cut


def test_a_chart_interrupted_while_drawn_is_left_out(clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rendering checks the budget before each chart; Ctrl-C inside one leaves it and the rest out."""
    rep = _report(report_budget(None, 40))
    ident, title, caption, _draw = CHARTS[1]

    def interrupted(report: Any) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(html_mod, "CHARTS", [CHARTS[0], (ident, title, caption, interrupted), *CHARTS[2:]])
    html = render_html(rep)
    note = html[html.index('id="charts-left-out"'):]
    assert f'id="{CHARTS[0][0]}"' in html and note.index(title) < note.index("</p>")
    assert "cut short by Ctrl-C" in note and all(t in note for _, t, _, _ in CHARTS[1:])


def test_report_is_byte_identical_beside_a_cpu_hog(tmp_path: Path) -> None:
    """`partition report` twice, once beside CPU hogs: the same Markdown and JSON, byte for byte (its
    searches end on work, not on the clock; no --time-limit). `--work` is set so that the budget
    cuts the serve search (the default lets the label search on l4x8 finish: nothing to cut)."""
    cmd = [sys.executable, "-c", "from partitioner.cli import main; main()", "report", MODEL, CLUSTER,
           "--work", str(WORK)]
    env = {k: v for k, v in os.environ.items() if k != "PARTITIONER_CPSAT_WORKERS"}

    def run(tag: str) -> tuple[bytes, bytes]:
        md, js = tmp_path / f"{tag}.md", tmp_path / f"{tag}.json"
        subprocess.run([*cmd, "--md", str(md), "--json", str(js)], capture_output=True, cwd=ROOT, env=env, check=True)
        return md.read_bytes(), js.read_bytes()

    idle = run("idle")
    with cpu_hogs():
        busy = run("busy")
    assert idle == busy
    assert any("the work budget" in c for c in json.loads(idle[1])["cut"])  # the budget did cut the search


def test_the_help_states_the_default_work() -> None:
    out = CliRunner().invoke(main, ["report", "--help"], terminal_width=200).output
    assert f"default {REPORT_WORK}." in " ".join(out.split())


@pytest.mark.parametrize("value", ["0", "-600", "many", "1e3", ""])
def test_a_bad_work_value_is_one_line_exit_2(value: str) -> None:
    res = CliRunner().invoke(main, ["report", MODEL, CLUSTER, "--work", value])
    assert res.exit_code == 2 and "--work" in res.output and len(res.output.strip().splitlines()) == 1


def test_the_work_budget_bounds_the_replicas_search_and_names_the_cut(clock: FakeClock) -> None:
    """--replicas auto without --time-limit: its replica solves count in the report's work (at least
    MIN_REPLICAS_WORK of them), it stops at the same solve on any machine with its best deployment
    so far, and the cut is named; with work enough the search ends by itself, no worse."""
    mixed = str(ROOT / "examples" / "clusters" / "mixed-8gpu.yaml")

    def report(work: int) -> Any:
        return _build(MODEL, mixed, Ms=(1, 8), plan_M=8, opts=Options(replicas="auto"), base_regime="async",
                      solver="auto", order=None, budget=report_budget(None, work), pareto_max_M=4, variations=(),
                      export="vllm", charts=False, say=lambda _: None)

    rep = report(60)
    cut = [c for c in rep.cut if "--replicas auto" in c]
    assert cut == [f"the --replicas auto search (best of {MIN_REPLICAS_WORK} replica solves shown; a larger --work "
                   "searches further): cut short by the work budget"]
    assert rep.replicas_note == "" and rep.headline is not None and not interrupts.since(0)
    full = report(1000)
    assert not any("--replicas" in c for c in full.cut) and full.replicas_note == ""
    assert full.headline is not None
    assert full.headline.tokens_per_s >= rep.headline.tokens_per_s * (1 - 1e-9)


@pytest.fixture
def small_report(clock: FakeClock) -> Any:
    return _report(report_budget(None, 40))


def _interrupt_call(n: int, real: Any) -> Any:
    """`real`, but its n-th call is a counted Ctrl-C (as the CLI's SIGINT handler raises it)."""
    calls = [0]

    def call(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == n:
            interrupts._seen[0] += 1
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    return call


def test_ctrl_c_inside_a_markdown_table_leaves_it_and_the_rest_out_named(
        small_report: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    md_mod = importlib.import_module("partitioner.report.render_md")
    from partitioner.report.sections import Sections
    from partitioner.report.solving import stopped
    from partitioner.report.tables import report_tables

    budget = report_budget(None, 40)
    titles = [t.title for t in report_tables(small_report)]
    monkeypatch.setattr(md_mod, "_table", _interrupt_call(2, md_mod._table))
    md = render_md(small_report, Sections(lambda: stopped(budget)))
    assert f"## {titles[0]}" in md and not any(f"## {t}\n" in md for t in titles[1:])
    note = md[md.index("## Cut short"):]
    assert all(f"the {t} table" in note for t in titles[1:]) and "cut short by Ctrl-C" in note
    assert "the headline" not in note and md.index("- **") < md.index(f"## {titles[0]}")  # the headline was rendered


def test_ctrl_c_inside_a_json_field_keeps_a_valid_report_naming_the_rest(
        small_report: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import jsonschema

    json_mod = importlib.import_module("partitioner.report.render_json")
    from partitioner.report.schema import report_json_schema
    from partitioner.report.sections import Sections

    whole = json.loads(json_mod.render_json(small_report))
    monkeypatch.setattr(json_mod, "_headline_dict", _interrupt_call(1, json_mod._headline_dict))
    data = json.loads(json_mod.render_json(small_report, Sections(lambda: "Ctrl-C" if interrupts.since(0) else "")))
    jsonschema.validate(data, report_json_schema())
    assert data["plans"] == whole["plans"] and data["whatif"] == whole["whatif"] and data["headline"] is None and data["decode"] is None
    assert data["cut"][-1] == ("rendering (the JSON field headline, the JSON field serve_frontier, the JSON field "
                               "decode, the JSON field nofit left out): cut short by Ctrl-C")


def test_the_time_limit_passing_while_the_terminal_tables_print_cuts_the_rest(
        small_report: Any, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """The budget is checked between sections: the time limit passes while the first table is
    drawn, so it is printed and the later ones are left out, named on the last line."""
    text_mod = importlib.import_module("partitioner.report.render_text")
    from partitioner.report.sections import Sections
    from partitioner.report.solving import stopped

    budget = report_budget(5.0, None)
    real = text_mod._rich

    def slow(table: Any) -> Any:
        clock.now += 6.0
        return real(table)

    monkeypatch.setattr(text_mod, "_rich", slow)
    out = text_mod.render_text(small_report, width=200, sections=Sections(lambda: stopped(budget)))
    shown = [t.title for t in text_mod.report_tables(small_report) if t.rows]
    assert shown[0] in out and not any(t in out.split("Cut short: rendering")[0] for t in shown[1:])
    last = " ".join(out.strip().splitlines()[-2:])
    assert "Cut short: rendering (" in out and last.endswith("cut short by the time limit")


def test_ctrl_c_while_rendering_writes_the_outputs_and_exits_0(
        clock: FakeClock, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Through the CLI: Ctrl-C while the terminal's first table prints; the Markdown and JSON are
    still written (what they rendered, the rest named), exit 0."""
    text_mod = importlib.import_module("partitioner.report.render_text")

    monkeypatch.setattr(text_mod, "_rich", _interrupt_call(1, text_mod._rich))
    md, js = tmp_path / "r.md", tmp_path / "r.json"
    res = CliRunner().invoke(main, ["report", MODEL, CLUSTER, "--work", "40", "--M", "1,8", "--pareto-max-M", "4",
                                    "--md", str(md), "--json", str(js)])
    assert res.exit_code == 0, res.output
    assert "Cut short: rendering (" in res.output and "cut short by Ctrl-C" in res.output
    assert "## Cut short" in md.read_text() and "the headline" in md.read_text().split("## Cut short")[1]
    assert "cut short by Ctrl-C" in json.loads(js.read_text())["cut"][-1]


def test_a_spent_time_limit_still_renders_the_answers(small_report: Any) -> None:
    """Past the time limit an output still answers (the headline, the JSON's plans, headline and
    decode: only Ctrl-C leaves those out, as the serve search still gets its first point); the
    tables and the other JSON fields are left out and named."""
    from partitioner.report.render_json import render_json
    from partitioner.report.sections import Sections

    def spent() -> str:
        return "the time limit"

    whole = json.loads(render_json(small_report))
    data = json.loads(render_json(small_report, Sections(spent)))
    assert {k: data[k] for k in ("plans", "headline", "decode")} == {k: whole[k] for k in ("plans", "headline", "decode")}
    assert whole["pareto"] and data["pareto"] == [] and data["cut"][-1] == (
        "rendering (the JSON field pareto, the JSON field whatif, the JSON field serve_frontier left out): cut short "
        "by the time limit")
    md = render_md(small_report, Sections(spent))
    assert md.index("- **") < md.index("## Cut short") and "| " not in md
    assert md.rstrip().endswith("rendering (the tables left out): cut short by the time limit")


def test_a_fixed_count_the_work_budget_stopped_says_so(clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    """--replicas 2 stopped by the work after one replica solve, before it had two replicas: the
    report says the work budget stopped it (not "interrupted", not "raise --time-limit")."""
    from partitioner.cli import _report_parts

    monkeypatch.setattr(_report_parts, "MIN_REPLICAS_WORK", 1)
    rep = _build(MODEL, str(ROOT / "examples" / "clusters" / "a100-l4-t4.yaml"), Ms=(8,), plan_M=8,
                 opts=Options(replicas="2"), base_regime="async", solver="auto", order=None,
                 budget=report_budget(None, 1), pareto_max_M=1, variations=(), export="vllm", charts=False,
                 say=lambda _: None)
    assert rep.replicas_note == ("--replicas 2: no deployment within the report's work budget (1 replica solve); "
                                 "a larger --work searches further")
    assert "the --replicas 2 search: cut short by the work budget" in rep.cut and rep.headline is not None
