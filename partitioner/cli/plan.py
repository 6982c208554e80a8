"""`partition plan model.yaml cluster.yaml`: the planner's command (docs/algorithms.md §1)."""

from __future__ import annotations

from typing import Any

import click

from partitioner.cli._parse import PresetName, Seconds
from partitioner.registry import (
    EXACT_CHOICES,
    EXPORT_TARGETS,
    LAUNCH_TARGETS,
    OBJECTIVES,
    ORDERS,
    REGIMES,
    SOLVER_CHOICES,
    TP_MODES,
    UNIFORM_TP_ENGINES,
)

__all__ = ["plan"]


@click.command("plan")
@click.argument("model_file", metavar="MODEL.yaml", type=click.Path(dir_okay=False))
@click.argument("cluster_file", metavar="CLUSTER.yaml", type=click.Path(dir_okay=False))
@click.option("--M", "M", type=click.IntRange(min=1), default=8, show_default=True, help="Micro-batches in flight.")
@click.option("--regime", type=click.Choice(REGIMES), default="async", show_default=True)
@click.option(
    "--objective", type=click.Choice(list(OBJECTIVES)), default="balanced", show_default=True,
    help="serve: also choose the batch and micro-batches in flight for the most decode tokens/s.",
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
def plan(
    *,
    model_file: str,
    cluster_file: str,
    M: int,
    regime: str,
    objective: str,
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
) -> None:
    """Plan which GPUs, in what order, hold which layers of MODEL on CLUSTER."""
    import time

    started = time.monotonic()  # --time-limit counts from here: loading the files is part of it
    from partitioner.api import build_problem, load_inputs, solve_problem, wants_deployment, with_metadata
    from partitioner.result import PLAN_FORMAT

    model, cluster = load_inputs(model_file, cluster_file)
    time_limit = _time_left(time_limit, started)
    engine = engine or (export if export in LAUNCH_TARGETS else None)  # an engine target also sets --engine
    if wants_deployment(replicas, tp, cluster):
        tp = _engine_tp(tp, engine, cluster)
    if wants_deployment(replicas, tp, cluster):  # (one pipeline with --tp off: the engine-order path below)
        from partitioner.cli._deploy import run_deploy

        _check_serve_options(objective, tpot_ms, ttft_ms, max_batch)
        return run_deploy(model, cluster, inputs=(model_file, cluster_file), replicas=replicas, tp=tp, M=M,
                          regime=regime, objective=objective, solver=solver, order=order, time_limit=time_limit,
                          as_json=as_json, out=out, export=export, engine=engine,
                          tpot_ms=tpot_ms, ttft_ms=ttft_ms, max_batch=max_batch)

    _check_serve_options(objective, tpot_ms, ttft_ms, max_batch)
    if out is not None:  # refuse an unwritable --out before solving, not after
        from partitioner.cli._output import check_writable

        check_writable(out, inputs=(model_file, cluster_file), marker=PLAN_FORMAT)
    if objective == "serve":
        from partitioner.api import serve_plan

        result = serve_plan(model, cluster, regime=regime, solver=solver, order=order,
                            time_limit_s=time_limit, tpot_ms=tpot_ms, ttft_ms=ttft_ms, max_batch=max_batch,
                            progress=_serve_progress, engine=engine)
    else:
        problem = build_problem(model, cluster, M=M, regime=regime, objective=objective, order=order,
                                time_limit_s=time_limit, engine=engine)
        _engine_notes(problem, solver, engine)
        progress = None if as_json else _progress_printer()
        result = solve_problem(problem, solver, progress, engine=engine, cluster=cluster)
    result = with_metadata(result, model, cluster)
    if out:
        from partitioner.cli._output import safe_write

        safe_write(out, result.to_json(), inputs=(model_file, cluster_file), marker=PLAN_FORMAT)
    if as_json:
        if out != "-":  # `--out -` already printed it
            click.echo(result.to_json(), nl=False)
    elif export is None:
        from partitioner.cli._plan_view import render_plan

        if objective == "serve":
            even = _even_serve(model, cluster, solver, regime=regime, order=order, time_limit_s=time_limit,
                               tpot_ms=tpot_ms, ttft_ms=ttft_ms, max_batch=max_batch, engine=engine)
        else:
            even = _even_baseline(problem, solver)
        render_plan(result, even)
    if export:
        _print_export(result, export)


def _engine_tp(tp: str | None, engine: str | None, cluster: Any) -> str | None:
    """TP groups as the engine can launch them. vLLM, SGLang and TensorRT-LLM take one TP degree for
    every stage (partitioner.registry.UNIFORM_TP_ENGINES): partitioner.deploy.plan turns per-stage
    degrees ("auto", or unset with cluster.yaml's tp:) into "uniform" and says so in the result's
    notes. llama.cpp cannot run TP inside its layer split (partitioner.export.llamacpp): one GPU per
    stage ("off"), said on stderr. `--tp node` with machines of different GPU counts gets a warning."""
    if tp not in (None, "auto"):
        if tp == "node" and engine in UNIFORM_TP_ENGINES:
            sizes = {sum(1 for d in cluster.devices if d.node == n) for n in {d.node for d in cluster.devices}}
            if len(sizes) > 1:
                click.echo(f"note: --tp node gives machines with {'/'.join(map(str, sorted(sizes)))} GPUs different TP "
                           f"degrees, which {engine} cannot launch (one degree for every stage)", err=True)
        return tp
    if engine == "llamacpp":
        click.echo("note: llama.cpp cannot run tensor parallelism inside its layer split: planning with --tp off "
                   "(one GPU per stage)", err=True)
        return "off"
    return tp


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


def _engine_notes(problem: Any, solver: str, engine: str | None) -> None:
    """Say on stderr what --engine changes: baselines are not restricted; GPUs below the engine's
    minimum compute capability are left out (partitioner.solvers.engine_sequences)."""
    if engine in (None, "generic"):
        return
    if solver not in EXACT_CHOICES:
        click.echo(f"note: --solver {solver} replays an engine's own split; --engine {engine} does not restrict it", err=True)
        return
    from partitioner.solvers import engine_sequences

    dropped = engine_sequences.unsupported_devices(problem.tables, engine)
    for line in engine_sequences.unsupported_notes(problem.tables, engine, dropped):
        click.echo(f"note: --engine {line}", err=True)


def _serve_progress(batch: int, best: float, elapsed: float) -> None:
    """The serve search's progress on stderr (after each batch size, once a second has passed)."""
    click.echo(f"  serve {elapsed:6.2f}s  batch {batch} searched  best {best:,.4g} tokens/s", err=True)


def _progress_printer() -> Any:
    """A search progress callback that prints each improving incumbent and bound to stderr once
    the search has run for a second (shorter searches stay quiet)."""

    from partitioner.cli._output import fmt_time

    def show(incumbent: float, bound: float, elapsed: float) -> None:
        if elapsed >= 1.0:
            click.echo(f"  search {elapsed:6.2f}s  incumbent {fmt_time(incumbent)}  bound {fmt_time(bound)}", err=True)

    return show


def _even_baseline(problem: Any, solver: str) -> Any:
    """The vLLM `even` split on the same problem, for the gain line (None if it cannot be built)."""
    if solver == "even":
        return None
    from partitioner.api import solve_problem
    from partitioner.errors import PartitionerError

    try:
        return solve_problem(problem, "even")
    except PartitionerError as exc:
        return str(exc)


def _even_serve(model: Any, cluster: Any, solver: str, **kwargs: Any) -> Any:
    """vLLM's even split with its best batch and in-flight count under the same limits."""
    if solver == "even":
        return None
    from partitioner.api import serve_plan
    from partitioner.errors import PartitionerError

    try:
        return serve_plan(model, cluster, solver="even", **kwargs)
    except PartitionerError as exc:
        return str(exc)


def _print_export(result: Any, target: str) -> None:
    from partitioner.cli.export import emit
    from partitioner.export import render

    emit(render(result, target), strict=False)
