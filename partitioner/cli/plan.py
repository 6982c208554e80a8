"""`partition plan model.yaml cluster.yaml`: the planner's command (issue 4)."""

from __future__ import annotations

from typing import Any

import click

__all__ = ["plan"]

SOLVER_CHOICES = ["auto", "dp", "cpsat", "brute", "even", "memory", "params", "speed"]
EXPORT_CHOICES = ["vllm", "sglang", "trtllm", "llamacpp", "deepspeed", "torchgpipe", "megatron", "json"]


@click.command("plan")
@click.argument("model_file", metavar="MODEL.yaml", type=click.Path(dir_okay=False))
@click.argument("cluster_file", metavar="CLUSTER.yaml", type=click.Path(dir_okay=False))
@click.option("--M", "M", type=click.IntRange(min=1), default=8, show_default=True, help="Micro-batches in flight.")
@click.option("--regime", type=click.Choice(["async", "blocking"]), default="async", show_default=True)
@click.option(
    "--objective", type=click.Choice(["balanced", "throughput", "makespan"]), default="balanced", show_default=True
)
@click.option("--solver", type=click.Choice(SOLVER_CHOICES), default="auto", show_default=True)
@click.option("--order", type=click.Choice(["free", "fixed"]), default=None, help="Override the cluster file's order.")
@click.option("--time-limit", "time_limit", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Wall-clock limit in seconds for the whole search (every solver phase); the best plan "
                   "so far and its bound are returned when it hits. Ctrl-C does the same.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@click.option("--out", "out", type=click.Path(dir_okay=False), default=None, help="Also write the plan JSON here.")
@click.option("--export", "export", type=click.Choice(EXPORT_CHOICES), default=None,
              help="Print the plan in an engine's format.")
def plan(
    model_file: str,
    cluster_file: str,
    M: int,
    regime: str,
    objective: str,
    solver: str,
    order: str | None,
    time_limit: float | None,
    as_json: bool,
    out: str | None,
    export: str | None,
) -> None:
    """Plan which GPUs, in what order, hold which layers of MODEL on CLUSTER."""
    from partitioner.api import build_problem, solve_problem
    from partitioner.result import PLAN_FORMAT

    problem = build_problem(
        model_file, cluster_file, M=M, regime=regime, objective=objective, order=order, time_limit_s=time_limit
    )
    progress = None if as_json else _progress_printer()
    result = solve_problem(problem, solver, progress)
    if out:
        from partitioner.cli._output import safe_write

        safe_write(out, result.to_json(), inputs=(model_file, cluster_file), marker=PLAN_FORMAT)
    if as_json:
        click.echo(result.to_json(), nl=False)
    elif export is None:
        from partitioner.cli._plan_view import render_plan

        render_plan(result, _even_baseline(problem, solver))
    if export:
        _print_export(result, export)


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


def _print_export(result: Any, target: str) -> None:
    from partitioner.export import render

    exported = render(result, target)
    click.echo(exported.text, nl=not exported.text.endswith("\n"))
    for line in (*exported.cannot_express, *exported.warnings):
        click.echo(f"warning: {line}", err=True)
