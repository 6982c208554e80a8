"""`partition report model.yaml cluster.yaml`: compare plans, baselines and GPipe; what-ifs; a headline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from partitioner.cli._parse import PresetName, Seconds
from partitioner.cli._report_parts import Options
from partitioner.registry import EXACT_CHOICES, OBJECTIVES, ORDERS, REGIMES, TP_MODES

__all__ = ["report", "parse_Ms", "Options"]

REPORT_MARKER = "partitioner.report/1"
PIPED_WIDTH = 140  # columns of the text report when stdout is not a terminal and $COLUMNS is unset


def parse_Ms(values: tuple[str, ...]) -> tuple[int, ...]:
    """`--M 1,8 --M 32` -> (1, 8, 32); default (1, 8, 32, 100). Bad values raise InputError."""
    from partitioner.errors import InputError
    from partitioner.report.compare import DEFAULT_MS

    out: list[int] = []
    for text in values:
        for raw in text.split(","):
            part = raw.strip()
            if not part.isdigit() or int(part) < 1:
                raise InputError(f"--M expects integers >= 1, comma-separated (got {text!r})")
            out.append(int(part))
    return tuple(dict.fromkeys(out)) or DEFAULT_MS


def _check_outputs(outputs: dict[str, str | None], inputs: tuple[str, str]) -> None:
    """Refuse an output that is an input file or that another output also names."""
    from partitioner.errors import InputError

    seen: dict[Path, str] = {Path(p).resolve(): "input" for p in inputs}
    for option, path in outputs.items():
        if not path:
            continue
        where = Path(path).resolve()
        if where in seen:
            what = "an input file" if seen[where] == "input" else f"the {seen[where]} output"
            raise InputError(f"{option} {path!r}: refusing to overwrite {what}")
        seen[where] = option
        from partitioner.cli._output import check_writable

        check_writable(path, inputs=inputs, marker=REPORT_MARKER)  # again by safe_write; here it saves the solves


def _write(path: str | None, text: str, inputs: tuple[str, str]) -> None:
    if path:
        from partitioner.cli._output import safe_write

        safe_write(path, text, inputs=inputs, marker=REPORT_MARKER)
        if path != "-":
            click.echo(f"wrote {path}", err=True)


@click.command("report")
@click.argument("model_file", metavar="MODEL.yaml", type=click.Path(dir_okay=False))
@click.argument("cluster_file", metavar="CLUSTER.yaml", type=click.Path(dir_okay=False))
@click.option("--M", "Ms", multiple=True, metavar="M[,M...]",
              help="Micro-batch counts for the T(M) tables (repeatable; default 1,8,32,100).")
@click.option("--plan-M", "plan_M", type=click.IntRange(min=1), default=8, show_default=True,
              help="M the plans are optimised for (makespan objective, tie-breaks).")
@click.option("--objective", type=click.Choice(OBJECTIVES), default="balanced", show_default=True,
              help="Objective of the base plan the what-ifs are compared with; serve: balanced is that base and "
                   "the serve search, which every decode report runs in most of its work budget, is also asked "
                   "of the --replicas deployment (the headline is the most tokens/s either way).")
@click.option("--tpot-ms", "tpot_ms", type=float, default=None,
              help="Time-per-output-token limit (ms) of the serve search and of the headline's choice.")
@click.option("--ttft-ms", "ttft_ms", type=float, default=None,
              help="Time-to-first-token limit (ms) of the serve search and of the headline's choice.")
@click.option("--engine", "engine", type=PresetName("engines"), default=None,
              help="Cost every plan with this engine's overheads (a preset of `partition catalog engines`).")
@click.option("--replicas", default="1", show_default=True, metavar="auto|N",
              help="Also plan disjoint pipelines (as partition plan --replicas); the headline shows them when "
                   "they give the most tokens/s.")
@click.option("--tp", type=click.Choice(TP_MODES), default=None,
              help="Tensor-parallel groups inside nodes for the --replicas deployment (as partition plan --tp).")
@click.option("--progress", "progress", is_flag=True,
              help="Show progress on stderr even off a terminal or with --json - (one updating line on a terminal).")
@click.option("--base-regime", type=click.Choice(REGIMES), default="async", show_default=True,
              help="Regime of the compared plans and the Pareto sweep.")
@click.option("--solver", type=click.Choice(EXACT_CHOICES), default="auto", show_default=True)
@click.option("--order", type=click.Choice(ORDERS), default=None, help="Override the cluster file's order.")
@click.option("--time-limit", type=Seconds(), default=None,
              help="Wall-clock cap on the whole report, rendering included, seconds (none by default): when "
                   "it hits, or on Ctrl-C, the report keeps what it has and says which part it cut.")
@click.option("--work", "work", type=click.IntRange(min=1), default=None, metavar="STEPS",
              help="Work budget of the report's searches, in steps (solves, scored serve points, replica solves), "
                   "so a busy machine gives the same report; default 600.")
@click.option("--pareto-max-M", "pareto_max_M", type=click.IntRange(min=1), default=4096, show_default=True,
              help="Largest M of the Pareto sweep (powers of two from 1).")
@click.option("--without", multiple=True, metavar="DEVICE", help="What-if: drop a device.")
@click.option("--with", "with_", multiple=True, metavar="GPU_ID@NODE", help="What-if: add a GPU on a node.")
@click.option("--link", multiple=True, metavar="A:B=MS,GB_S", help="What-if: set a link's latency and bandwidth.")
@click.option("--regime", multiple=True, metavar="async|blocking", help="What-if: re-plan in this regime.")
@click.option("--phase", multiple=True, metavar="decode|prefill", help="What-if: re-plan in this phase.")
@click.option("--export", "export", default="vllm", show_default=True, metavar="TARGET",
              help="Engine whose command the headline prints (a `partition export` target).")
@click.option("--md", "md_out", type=click.Path(dir_okay=False), default=None, help="Write Markdown here.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False), default=None, help="Write JSON here.")
@click.option("--html", "html_out", type=click.Path(dir_okay=False), default=None,
              help="Write a self-contained HTML page here.")
def report(*, model_file: str, cluster_file: str, Ms: tuple[str, ...], plan_M: int, objective: str,
           tpot_ms: float | None, ttft_ms: float | None, engine: str | None, replicas: str, tp: str | None,
           progress: bool, base_regime: str, solver: str, order: str | None, time_limit: float | None,
           work: int | None, pareto_max_M: int, without: tuple[str, ...], with_: tuple[str, ...], link: tuple[str, ...],
           regime: tuple[str, ...], phase: tuple[str, ...], export: str, md_out: str | None, json_out: str | None,
           html_out: str | None) -> None:
    """Compare optimal plans, engine baselines and GPipe on MODEL and CLUSTER, with what-ifs."""
    from partitioner.cli._progress import ProgressLine, wants_progress
    from partitioner.cli.plan import _check_serve_options
    from partitioner.report.solving import REPORT_WORK, report_budget
    from partitioner.report.whatif import parse_variations

    budget = report_budget(time_limit, work or REPORT_WORK)
    inputs = (model_file, cluster_file)
    _check_outputs({"--md": md_out, "--json": json_out, "--html": html_out}, inputs)
    _check_target(export)
    _check_serve_options("serve", tpot_ms, ttft_ms, None)
    M_list = parse_Ms(Ms)
    variations = parse_variations(without=without, with_=with_, link=link, regime=regime, phase=phase)
    stdout_data = "-" in (md_out, json_out, html_out)
    opts = Options(objective=objective, tpot_ms=tpot_ms, ttft_ms=ttft_ms, engine=engine, replicas=replicas, tp=tp)
    with ProgressLine(wants_progress(progress, data_on_stdout=stdout_data)) as line:
        rep = _build(model_file, cluster_file, Ms=M_list, plan_M=plan_M, opts=opts, base_regime=base_regime,
                     solver=solver, order=order, budget=budget, pareto_max_M=pareto_max_M,
                     variations=variations, export=export, charts=html_out is not None, say=line)
        line("rendering")
        _show(rep, md_out, json_out, html_out, inputs, text=not stdout_data, budget=budget)


def _check_target(target: str) -> None:
    from partitioner.errors import InputError
    from partitioner.export import TARGETS

    if target not in TARGETS:
        raise InputError(f"--export {target!r}: unknown target; valid targets: {', '.join(TARGETS)}")


def _progress(budget: Any, say: Any) -> Any:
    """Each step as the one progress line (`cli._progress`), with the work done of the budget."""

    def step(what: str) -> None:
        done = f" (work {budget.work:,} of {budget.work_limit:,})" if budget.work_limit else ""
        say(f"report{done}: {what.strip()}")

    return step


def _build(model_file: str, cluster_file: str, *, Ms: tuple[int, ...], plan_M: int, opts: Options,
           base_regime: str, solver: str, order: str | None, budget: Any, pareto_max_M: int,
           variations: Any, export: str, charts: bool, say: Any) -> Any:
    from partitioner.api import build_problem, load_inputs
    from partitioner.cli._report_parts import decode_search, no_fit_report, replicas_search
    from partitioner.errors import InfeasibleError
    from partitioner.planning.pipeline import with_metadata_any as with_metadata
    from partitioner.report.build import build_report
    from partitioner.report.headline import engine_command
    from partitioner.report.pareto import pareto_Ms
    from partitioner.report.serving import workload_of
    from partitioner.report.solving import CHARTS_S, RESERVE_S, Solves, stopped
    from partitioner.report.whatif import prepare, run

    model, cluster = load_inputs(model_file, cluster_file)
    if opts.objective == "serve" and getattr(getattr(model, "workload", None), "phase", "decode") == "prefill":
        from partitioner.errors import InputError

        raise InputError("--objective serve plans decode, but the model's workload is prefill (workload: phase:)")

    def problem_of(m: Any, c: Any, regime: str) -> Any:
        return build_problem(m, c, M=plan_M, regime=regime, objective=opts.base, order=order, engine=opts.engine)

    problem = problem_of(model, cluster, base_regime)
    prepared = prepare(model, cluster, variations, base_regime)
    progress = _progress(budget, say)
    reserve = RESERVE_S + (CHARTS_S if charts else 0.0)
    solves = Solves(problem, solver, budget, progress, reserve)

    def planner(m: Any, c: Any, regime: str) -> Any:
        if m is model and c is cluster:  # a --regime what-if: same tables, shared memo
            return solves.plan(regime=regime)
        return Solves(problem_of(m, c, regime), solver, budget, progress, reserve).plan()

    name = getattr(cluster, "name", "") or Path(cluster_file).stem
    try:
        return build_report(
            problem, Ms=Ms, solver=solver, base=opts.base, pareto_Ms=pareto_Ms(pareto_max_M), cluster=name,
            whatif=(lambda base: run(prepared, base, base_regime, planner, lambda: stopped(budget, reserve)))
            if prepared else None,
            budget=budget, progress=progress, workload=workload_of(model),
            commands=lambda plan: engine_command(export)(with_metadata(plan, model, cluster)),  # Plan or Deployment
            solves=solves,
            decode=lambda: decode_search(model, cluster, base_regime, order, Ms, budget, progress, reserve, opts),
            tpot_s=None if opts.tpot_ms is None else opts.tpot_ms / 1e3,
            ttft_s=None if opts.ttft_ms is None else opts.ttft_ms / 1e3,
            deployment=replicas_search(model, cluster, opts, plan_M, base_regime, solver, order, Ms, budget, reserve,
                                       progress),
        )
    except InfeasibleError as exc:
        progress("the model does not fit: trying --with additions")
        return no_fit_report(str(exc), problem, model, cluster, name, Ms, opts.base, solves, budget,
                             lambda m, c: planner(m, c, base_regime))


def _width() -> int:
    """The terminal's width; PIPED_WIDTH when stdout is not a terminal ($COLUMNS wins)."""
    import os
    import sys

    if os.environ.get("COLUMNS", "").isdigit():
        return int(os.environ["COLUMNS"])
    if sys.stdout.isatty():
        return os.get_terminal_size(sys.stdout.fileno()).columns
    return PIPED_WIDTH


def _show(rep: Any, md_out: str | None, json_out: str | None, html_out: str | None,
          inputs: tuple[str, str], text: bool = True, budget: Any = None) -> None:
    """The text report on stdout (unless an output goes there: `-`), then the files. Each output
    is rendered section by section (partitioner.report.sections) while the budget's time limit
    lasts and no Ctrl-C came since rendering began: what it cut is left out and named in that output, which is still
    written (exit 0, as every cut); the HTML page's charts each start only while the time limit
    leaves CHART_S for it (the page says which it left out, and why)."""
    from rich.console import Console

    from partitioner import interrupts
    from partitioner.report.sections import Sections
    from partitioner.report.solving import stopped, wall_left

    mark = interrupts.count()  # a Ctrl-C in the searches cut them; one from now on cuts the rendering

    def cut() -> str:
        if interrupts.since(mark):
            return "Ctrl-C"
        return "the time limit" if budget is not None and wall_left(budget) <= 0 else ""

    def parts() -> Sections:
        return Sections(cut)

    if text:
        from partitioner.report.render_text import render_text

        render_text(rep, console=Console(highlight=False, width=_width()), sections=parts())
    if md_out:
        from partitioner.report.render_md import render_md

        _write(md_out, render_md(rep, parts()), inputs)
    if json_out:
        from partitioner.report.render_json import render_json

        _write(json_out, render_json(rep, parts()), inputs)
    if html_out:
        from partitioner.report.html import render_html
        from partitioner.report.solving import CHART_S

        def stop() -> str:
            if budget is None:
                return ""
            return stopped(budget) or ("the time limit" if wall_left(budget) < CHART_S else "")

        _write(html_out, render_html(rep, stop), inputs)
