"""`partition plan --replicas auto|N --tp auto|uniform|off`: cluster-scale plans in the terminal.

A thin view over partitioner.deploy.plan: rich progress on stderr while replicas are solved
(Ctrl-C or --time-limit return the best deployment found so far), then one stage table per
replica with its tokens/s and router weight, the totals, unused devices and the proof status.
"""

from __future__ import annotations

from typing import Any

import click

from partitioner.cli._output import fmt_time

__all__ = ["run_deploy", "render_deployment", "print_export"]


def run_deploy(request: Any, *, inputs: tuple[str, str], as_json: bool, out: str | None,
               export: str | None = None) -> None:
    """Plan `request` (a PlanRequest that partitioner.planning.routing routes to partitioner.deploy)
    from the files `inputs`, print (table or JSON) and optionally write the result."""
    from partitioner.planning.routing import Progress, route
    from partitioner.result import Plan

    count = request.replicas

    def note(line: str) -> None:
        click.echo(f"note: {line}", err=True)

    from partitioner import interrupts

    mark = interrupts.count()
    with _progress(enabled=count != 1) as progress:
        result = route(request, Progress(note=note, replicas=progress))
    from partitioner.cli._failure import failure_json, request_failure_block, request_failure_lines

    fail = request_failure_block(request, result, export, mark)  # what one machine's loss costs (several machines)
    text = failure_json(result, fail)
    if out:
        from partitioner.cli._output import safe_write
        from partitioner.deploy.deployment import DEPLOYMENT_FORMAT
        from partitioner.result import PLAN_FORMAT

        marker = PLAN_FORMAT if count == 1 else DEPLOYMENT_FORMAT
        safe_write(out, text, inputs=inputs, marker=marker)
    if as_json:
        click.echo(text, nl=False)
    elif export:
        print_export(result, export)
    elif isinstance(result, Plan):  # one replica of TP groups
        from partitioner.cli._plan_view import render_plan

        render_plan(result, "not compared for TP-group plans")
        for line in result.notes:
            click.echo(f"note: {line}")
    else:
        render_deployment(result)
    if not as_json and not export:
        for line in request_failure_lines(fail):
            click.echo(line)


class _progress:
    """A rich progress bar on stderr fed by the replica search's (solved, total, best) callback."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.bar: Any = None
        self.task: Any = None

    def __enter__(self) -> Any:
        if not self.enabled:
            return None
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(TextColumn("replicas"), BarColumn(), TextColumn("{task.completed} solves"),
                            TextColumn("best replica {task.fields[best]}"), TextColumn("{task.fields[bound]}"),
                            TimeElapsedColumn(), console=Console(stderr=True), transient=True)
        self.bar.start()
        self.task = self.bar.add_task("search", total=None, best="—", bound="")

        def update(done: int, total: int | None, best: float, bound: float | None = None) -> None:
            """(replicas solved, vectors to solve or None, best replica tokens/s, deployment bound)."""
            text = f"bound {bound:.4g} tok/s" if bound is not None and bound < float("inf") else ""
            self.bar.update(self.task, completed=done, total=total, best=f"{best:.4g} tok/s", bound=text)

        return update

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def render_deployment(d: Any) -> None:
    """Replica tables, totals, weights, unused devices, identical replicas and the proof status."""
    from rich.console import Console

    from partitioner.cli._output import terminal_width
    from partitioner.cli._plan_view import stage_table

    console = Console(width=terminal_width())
    tot = d.serving_totals()
    console.print(f"[bold]{len(d.replicas)} replica(s): {tot['tokens_per_s']:.4g} tokens/s in all[/bold] "
                  f"({tot['tokens_per_s_per_gpu']:.4g} per GPU on {tot['gpus']} GPUs; worst TPOT {fmt_time(tot['tpot_s'])})")
    for r, (plan, w) in enumerate(zip(d.replicas, d.weights, strict=True)):
        sv = plan.serving
        console.print(f"\nreplica {r}: {sv.tokens_per_s:.4g} tokens/s, TPOT {fmt_time(sv.tpot_s)}, "
                      f"router weight {w:.3f}, limited by {sv.binding}")
        console.print(stage_table(plan))
    if d.unused:
        console.print(f"unused devices: {', '.join(d.unused)}")
    if d.identical:
        console.print(f"the replicas are identical: the engine's data-parallel option can run them "
                      f"(vLLM/SGLang --data-parallel-size {len(d.replicas)})")
    for note in d.notes:
        console.print(f"note: {note}")
    if d.optimal:
        space = ("every split of the GPUs into replicas"  # partitioner.deploy.units (a split family: bound met)
                 if d.solver == "replicas over GPU sets" or d.solver.startswith("replicas over machines")
                 else "node kinds")
        console.print(f"proven optimal over {space} ({d.subproblems} replica solves)")
    elif d.solver == "separate pipelines":  # partitioner.planning: no bound over layouts
        console.print(f"not proven over replica layouts ({d.subproblems} replica solves)")
    else:
        import math

        from partitioner.cli._plan_view import serve_bound

        bound = (serve_bound(d.tokens_per_s, d.upper_bound_tokens_per_s)
                 if math.isfinite(d.upper_bound_tokens_per_s) else "no upper bound known")
        console.print(f"not proven: {bound} ({d.subproblems} replica solves{', ' + d.stopped if d.stopped else ''})")


def print_export(result: Any, target: str) -> None:
    """A Plan or Deployment in `target`'s format on stdout (moved from partitioner.cli.plan)."""
    from partitioner.cli.export import emit
    from partitioner.export import render

    emit(render(result, target), strict=False)
