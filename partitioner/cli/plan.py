"""`partition plan model.yaml cluster.yaml`: the planner's command (docs/algorithms.md §1)."""

from __future__ import annotations

from typing import Any

import click

from partitioner.cli._baselines import even_baseline, even_serve
from partitioner.cli._parse import PresetName, Seconds
from partitioner.registry import (
    BASELINES,
    EXPORT_TARGETS,
    LAUNCH_TARGETS,
    OBJECTIVES,
    ORDERS,
    REGIMES,
    SOLVER_CHOICES,
    TP_MODES,
)

__all__ = ["plan"]


@click.command("plan")
@click.argument("model_file", metavar="MODEL.yaml", type=click.Path(dir_okay=False))
@click.argument("cluster_file", metavar="CLUSTER.yaml", type=click.Path(dir_okay=False))
@click.option("--M", "M", type=click.IntRange(min=1), default=8, show_default=True, help="Micro-batches in flight.")
@click.option("--regime", type=click.Choice(REGIMES), default="async", show_default=True)
@click.option(
    "--objective", type=click.Choice(list(OBJECTIVES)), default=None,
    help="serve: also choose the batch and micro-batches in flight for the most decode tokens/s "
         "(default: serve for a decode workload, over replicas when there are several machines; "
         "balanced for prefill and per-micro-batch profiles).",
)
@click.option("--solver", type=click.Choice(SOLVER_CHOICES), default="auto", show_default=True)
@click.option("--order", type=click.Choice(ORDERS), default=None, help="Override the cluster file's order.")
@click.option("--time-limit", "time_limit", type=Seconds(), default=None,
              help="Wall-clock limit in seconds for the whole search (every solver phase); the best plan "
                   "so far and its bound are returned when it hits. Ctrl-C does the same.")
@click.option("--tpot-ms", "tpot_ms", type=float, default=None, help="serve: time-per-output-token limit (ms).")
@click.option("--ttft-ms", "ttft_ms", type=float, default=None,
              help="serve: time-to-first-token limit (ms) for a prompt_tokens prompt.")
@click.option("--max-batch", "max_batch", type=click.IntRange(min=1), default=None,
              help="serve: largest batch per micro-batch to consider.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@click.option("--progress", "show_progress", is_flag=True,
              help="Show search progress on stderr even off a terminal or with --json/--export.")
@click.option("--out", "out", type=click.Path(dir_okay=False), default=None, help="Also write the plan JSON here.")
@click.option("--export", "export", type=click.Choice(list(EXPORT_TARGETS)), default=None,
              help="Print the plan in an engine's format (an engine target also sets --engine).")
@click.option("--engine", "engine", type=PresetName("engines"), default=None,
              help="Cost the plan with this engine's overheads and search only device orders it can launch "
                   "(vLLM's Ray rank order, equal stages per node); a preset of `partition catalog engines`; "
                   "default: the files' engine: setting.")
@click.option("--replicas", default="1", show_default=True, metavar="auto|N",
              help="Disjoint pipelines maximising total tokens/s ('auto': the best count).")
@click.option("--tp", type=click.Choice(TP_MODES), default=None,
              help="Tensor-parallel groups inside nodes: per stage, one degree, or whole machines "
                   "(default: auto if cluster.yaml has tp:, else off).")
@click.option("--what-if", "what_if", multiple=True, metavar="add:GPU[,GPU...]|remove:DEVICE[,...]",
              help="Instead of the plan: tokens/s and $/h per extra token/s of each single change (repeatable).")
@click.option("--max-stages", "max_stages", type=click.IntRange(min=1), default=None,
              help="At most N stages (one GPU each) in the pipeline: --objective balanced|throughput|makespan; "
                   "solved by CP-SAT or brute (the DP takes no cap).")
@click.option("--max-machines-per-pipeline", "max_machines", type=click.IntRange(min=1), default=None,
              help="Default serving answer: no pipeline spans more than N machines (nodes).")
def plan(
    *,
    model_file: str,
    cluster_file: str,
    M: int,
    regime: str,
    objective: str | None,
    solver: str,
    order: str | None,
    time_limit: float | None,
    tpot_ms: float | None,
    ttft_ms: float | None,
    max_batch: int | None,
    as_json: bool,
    out: str | None,
    export: str | None,
    engine: str | None,
    replicas: str = "1",
    tp: str | None = None,
    what_if: tuple[str, ...] = (),
    max_machines: int | None = None,
    max_stages: int | None = None,
    show_progress: bool = False,
) -> None:
    """Plan which GPUs, in what order, hold which layers of MODEL on CLUSTER."""
    import time

    started = time.monotonic()  # --time-limit counts from here: loading the files is part of it
    from partitioner.api import build_problem, load_inputs
    from partitioner.planning.request import PlanRequest, ServeLimits, parse_replicas
    from partitioner.planning.routing import Progress, kind, route
    from partitioner.result import PLAN_FORMAT, Plan
    from partitioner.solvers.budget import Budget

    model, cluster = load_inputs(model_file, cluster_file)
    time_limit = _time_left(time_limit, started)
    if what_if:
        from partitioner.cli._whatif import run_what_if

        return run_what_if(model, cluster, what_if, as_json=as_json, engine=engine, tp=tp, tpot_ms=tpot_ms,
                           ttft_ms=ttft_ms, max_batch=max_batch, time_limit=time_limit)
    engine = engine or (export if export in LAUNCH_TARGETS else None)  # an engine target also sets --engine
    from partitioner.planning.objective import default_objective

    def request_of(objective: str) -> PlanRequest:
        return PlanRequest(model, cluster, engine=engine, objective=objective, M=M, regime=regime, solver=solver,
                           order=order, limits=ServeLimits(tpot_ms, ttft_ms, max_batch),
                           replicas=parse_replicas(replicas), tp=tp, budget=Budget(time_limit),
                           max_stages=max_stages)

    choice = default_objective(model, objective)
    if choice.default and choice.objective == "serve" and solver in BASELINES:
        from partitioner.planning.objective import Choice

        choice = Choice("balanced", f"--solver {solver} replays an engine's split at the workload's batch and "
                                    "in-flight count", True)
    if max_stages is not None and (choice.objective == "serve" or kind(request_of("balanced")) == "deployment"):
        from partitioner.errors import InputError

        raise InputError(f"--max-stages applies to one pipeline of --objective balanced, throughput or makespan "
                         f"(this run: {choice.objective}{', replicas/TP groups' if choice.objective != 'serve' else ''})")
    if choice.default and choice.objective == "serve" and str(replicas).strip() == "1":
        from partitioner.cli._answer import run_answer

        _check_serve_options("serve", tpot_ms, ttft_ms, max_batch)
        return run_answer(model, cluster, choice, inputs=(model_file, cluster_file), M=M, regime=regime,
                          solver=solver, order=order, time_limit=time_limit, tpot_ms=tpot_ms, ttft_ms=ttft_ms,
                          max_batch=max_batch, as_json=as_json, out=out, export=export, engine=engine, tp=tp,
                          max_machines=max_machines)
    if max_machines is not None:
        from partitioner.errors import InputError

        raise InputError("--max-machines-per-pipeline applies to the default serving answer "
                         "(a decode workload without --objective and --replicas)")
    if choice.default and choice.objective == "serve":  # --replicas N/auto: replicas at the workload's (B, K)
        from partitioner.planning.objective import Choice

        choice = Choice("balanced", "--replicas: each replica's split at the workload's batch and in-flight count "
                                    "(--objective serve also chooses them per replica)", True)
    objective = choice.objective
    if choice.default and not as_json and export is None:
        click.echo(choice.line())
    _check_serve_options(objective, tpot_ms, ttft_ms, max_batch)
    request = request_of(objective)
    if kind(request) == "deployment":
        from partitioner.cli._deploy import run_deploy

        return run_deploy(request, inputs=(model_file, cluster_file), as_json=as_json, out=out, export=export)

    if out is not None:  # refuse an unwritable --out before solving, not after
        from partitioner.cli._output import check_writable

        check_writable(out, inputs=(model_file, cluster_file), marker=PLAN_FORMAT)
    from partitioner.cli._progress import ProgressLine, wants_progress

    line = ProgressLine(wants_progress(show_progress, data_on_stdout=as_json or export is not None))
    from partitioner import interrupts

    mark = interrupts.count()
    with line:
        result = route(request, Progress(note=_note, solve=_progress_printer(line), serve=_serve_progress(line)))
    from partitioner.cli._failure import failure_json, request_failure_block

    fail = request_failure_block(request, result, export, mark)  # every answer on several machines
    text = failure_json(result, fail)
    if out:
        from partitioner.cli._output import safe_write

        safe_write(out, text, inputs=(model_file, cluster_file), marker=PLAN_FORMAT)
    if as_json:
        if out != "-":  # `--out -` already printed it
            click.echo(text, nl=False)
    elif export is None and isinstance(result, Plan):  # (route gives a Plan for one pipeline)
        from partitioner.cli._plan_view import render_plan

        if objective == "serve":
            even = even_serve(model, cluster, solver, regime=regime, order=order, time_limit_s=time_limit,
                              tpot_ms=tpot_ms, ttft_ms=ttft_ms, max_batch=max_batch, engine=engine)
        else:
            even = even_baseline(build_problem(model, cluster, M=M, regime=regime, objective=objective, order=order,
                                               time_limit_s=time_limit, engine=engine), solver)
        render_plan(result, even)
        from partitioner.cli._failure import request_failure_lines

        for text_line in request_failure_lines(fail):
            click.echo(text_line)
    if export:
        from partitioner.cli._deploy import print_export

        print_export(result, export)


def _note(line: str) -> None:
    click.echo(f"note: {line}", err=True)


def _time_left(limit: float | None, started: float) -> float | None:
    """What is left of `--time-limit` after loading the inputs (at least 1 ms: the solvers then
    return their first plan with its bound, as on a limit hit)."""
    import time

    return None if limit is None else max(1e-3, limit - (time.monotonic() - started))


def _check_serve_options(objective: str, tpot_ms: float | None, ttft_ms: float | None, max_batch: int | None) -> None:
    from partitioner.errors import InputError

    for name, value in (("--tpot-ms", tpot_ms), ("--ttft-ms", ttft_ms)):
        if value is not None and not 0 < value < float("inf"):
            raise InputError(f"{name} must be a number of milliseconds > 0 (got {value:g})")
    given = [n for n, v in (("--tpot-ms", tpot_ms), ("--ttft-ms", ttft_ms), ("--max-batch", max_batch)) if v is not None]
    if given and objective != "serve":
        raise InputError(f"{given[0]} needs --objective serve (got --objective {objective})")


def _serve_progress(line: Any) -> Any:
    """The serve search's progress as the one progress line (partitioner.cli._progress)."""

    def show(batch: int, best: float, elapsed: float) -> None:
        line(f"serve search: batch {batch} searched, best {best:,.4g} tokens/s")

    return show


def _progress_printer(line: Any) -> Any:
    """Each improving incumbent and bound as the one progress line (partitioner.cli._progress:
    quiet for the first second, nothing off a terminal or under --json/--export unless --progress)."""

    from partitioner.cli._output import fmt_time

    def show(incumbent: float, bound: float, elapsed: float) -> None:
        line(f"search: incumbent {fmt_time(incumbent)}, bound {fmt_time(bound)}")

    return show


