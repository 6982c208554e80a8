"""`partition report model.yaml cluster.yaml`: compare plans, baselines and GPipe; what-ifs; a headline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from partitioner.cli._parse import Seconds
from partitioner.registry import EXACT_CHOICES, ORDERS, PLAN_OBJECTIVES, REGIMES

__all__ = ["report", "parse_Ms"]

REPORT_MARKER = "partitioner.report/1"
DEFAULT_TIME_LIMIT_S = 5.0
DECODE_SHARE = 0.5  # of the budget left after the plans and baselines: the rest is the Pareto sweep's
MIN_DECODE_S = 0.5  # below this the serve search is skipped (and the report says so)


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
        click.echo(f"wrote {path}", err=True)


@click.command("report")
@click.argument("model_file", metavar="MODEL.yaml", type=click.Path(dir_okay=False))
@click.argument("cluster_file", metavar="CLUSTER.yaml", type=click.Path(dir_okay=False))
@click.option("--M", "Ms", multiple=True, metavar="M[,M...]",
              help="Micro-batch counts for the T(M) tables (repeatable; default 1,8,32,100).")
@click.option("--plan-M", "plan_M", type=click.IntRange(min=1), default=8, show_default=True,
              help="M the plans are optimised for (makespan objective, tie-breaks).")
@click.option("--objective", type=click.Choice(PLAN_OBJECTIVES), default="balanced",
              show_default=True, help="Objective of the base plan the what-ifs are compared with.")
@click.option("--base-regime", type=click.Choice(REGIMES), default="async", show_default=True,
              help="Regime of the compared plans and the Pareto sweep.")
@click.option("--solver", type=click.Choice(EXACT_CHOICES), default="auto", show_default=True)
@click.option("--order", type=click.Choice(ORDERS), default=None, help="Override the cluster file's order.")
@click.option("--time-limit", type=Seconds(), default=DEFAULT_TIME_LIMIT_S,
              show_default=True,
              help="Wall-clock budget of the whole report, seconds; plans it leaves unproven show their gap.")
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
           base_regime: str, solver: str, order: str | None, time_limit: float | None, pareto_max_M: int,
           without: tuple[str, ...], with_: tuple[str, ...], link: tuple[str, ...], regime: tuple[str, ...],
           phase: tuple[str, ...], export: str, md_out: str | None, json_out: str | None,
           html_out: str | None) -> None:
    """Compare optimal plans, engine baselines and GPipe on MODEL and CLUSTER, with what-ifs."""
    from partitioner.report.solving import Deadline
    from partitioner.report.whatif import parse_variations

    deadline = Deadline(time_limit)
    inputs = (model_file, cluster_file)
    _check_outputs({"--md": md_out, "--json": json_out, "--html": html_out}, inputs)
    _check_target(export)
    M_list = parse_Ms(Ms)
    variations = parse_variations(without=without, with_=with_, link=link, regime=regime, phase=phase)
    rep = _build(model_file, cluster_file, Ms=M_list, plan_M=plan_M, objective=objective, base_regime=base_regime,
                 solver=solver, order=order, deadline=deadline, pareto_max_M=pareto_max_M, variations=variations,
                 export=export, charts=html_out is not None)
    _show(rep, md_out, json_out, html_out, inputs)


def _check_target(target: str) -> None:
    from partitioner.errors import InputError
    from partitioner.export import TARGETS

    if target not in TARGETS:
        raise InputError(f"--export {target!r}: unknown target; valid targets: {', '.join(TARGETS)}")


def _progress(deadline: Any) -> Any:
    """Print each step on stderr once the report has run for more than a second."""

    def say(what: str) -> None:
        t = deadline.elapsed()
        if t > 1.0:
            left = "" if deadline.seconds is None else f" of {deadline.seconds:g} s"
            click.echo(f"  report {t:5.1f}s{left}: {what}", err=True)

    return say


def _build(model_file: str, cluster_file: str, *, Ms: tuple[int, ...], plan_M: int, objective: str,
           base_regime: str, solver: str, order: str | None, deadline: Any, pareto_max_M: int,
           variations: Any, export: str, charts: bool) -> Any:
    from partitioner.api import build_problem, with_metadata
    from partitioner.models import load_cluster, load_model
    from partitioner.report.build import build_report
    from partitioner.report.headline import engine_command
    from partitioner.report.pareto import pareto_Ms
    from partitioner.report.serving import workload_of
    from partitioner.report.solving import CHARTS_S, RESERVE_S, Solves
    from partitioner.report.whatif import prepare, run

    model, cluster = load_model(model_file), load_cluster(cluster_file)
    problem = build_problem(model, cluster, M=plan_M, regime=base_regime, objective=objective, order=order)
    prepared = prepare(model, cluster, variations, base_regime)
    progress = _progress(deadline)
    reserve = RESERVE_S + (CHARTS_S if charts else 0.0)
    solves = Solves(problem, solver, deadline, progress, reserve)

    def planner(m: Any, c: Any, regime: str) -> Any:
        if m is model and c is cluster:  # a --regime what-if: same tables, shared memo
            return solves.plan(regime=regime)
        p = build_problem(m, c, M=plan_M, regime=regime, objective=objective, order=order)
        return Solves(p, solver, deadline, progress, reserve).plan()

    rep = build_report(
        problem, Ms=Ms, solver=solver, base=objective, pareto_Ms=pareto_Ms(pareto_max_M),
        cluster=getattr(cluster, "name", "") or Path(cluster_file).stem,
        whatif=(lambda base: run(prepared, base, base_regime, planner)) if prepared else None,
        deadline=deadline, progress=progress, workload=workload_of(model),
        commands=lambda plan: engine_command(export)(with_metadata(plan, model, cluster)),
        solves=solves,
        decode=lambda: _decode(model, cluster, base_regime, order, Ms, deadline, progress, reserve),
    )
    return rep


def _decode(model: Any, cluster: Any, regime: str, order: str | None, Ms: tuple[int, ...], deadline: Any,
            progress: Any, reserve: float) -> Any:
    """The serve objective's plan beside the baselines at its batch and in-flight count
    (partitioner.report.decode), searched in up to DECODE_SHARE of the budget left after `reserve`;
    else why there is none (a prefill workload, too little time left, no plan)."""
    from partitioner.errors import PartitionerError
    from partitioner.report.decode import decode_comparison

    if getattr(getattr(model, "workload", None), "phase", "decode") == "prefill":
        return "the workload is prefill; the serve objective plans decode"
    left = deadline.left() - reserve
    if DECODE_SHARE * left < MIN_DECODE_S:
        return (f"skipped: the time limit leaves under {MIN_DECODE_S:g} s for the serve search "
                "(raise --time-limit, or run `partition plan --objective serve`)")
    progress("decode: the serve objective's batch and in-flight search")
    try:
        return decode_comparison(model, cluster, regime=regime, order=order, Ms=Ms,
                                 time_limit_s=None if left == float("inf") else DECODE_SHARE * left)
    except PartitionerError as exc:
        return f"no serve plan: {exc}"


def _show(rep: Any, md_out: str | None, json_out: str | None, html_out: str | None,
          inputs: tuple[str, str]) -> None:
    from rich.console import Console

    from partitioner.report.render_text import render_text

    render_text(rep, console=Console(highlight=False))  # the terminal's width (80 when piped)
    if md_out:
        from partitioner.report.render_md import render_md

        _write(md_out, render_md(rep), inputs)
    if json_out:
        from partitioner.report.render_json import render_json

        _write(json_out, render_json(rep), inputs)
    if html_out:
        from partitioner.report.html import render_html

        _write(html_out, render_html(rep), inputs)
