"""`partition plan --replicas auto|N --tp auto|uniform|off`: cluster-scale plans in the terminal.

A thin view over partitioner.deploy.plan: rich progress on stderr while replicas are solved
(Ctrl-C or --time-limit return the best deployment found so far), then one stage table per
replica with its tokens/s and router weight, the totals, unused devices and the proof status.
"""

from __future__ import annotations

from typing import Any

import click

from partitioner.cli._output import fmt_time

__all__ = ["run_deploy", "render_deployment"]


def run_deploy(model: Any, cluster: Any, *, inputs: tuple[str, str], replicas: str, tp: str | None, M: int,
               regime: str, objective: str, solver: str, order: str | None, time_limit: float | None,
               as_json: bool, out: str | None, export: str | None = None, engine: str | None = None,
               tpot_ms: float | None = None, ttft_ms: float | None = None, max_batch: int | None = None) -> None:
    """Plan the loaded `model` on `cluster` (read from the files `inputs`), print (table or JSON)
    and optionally write the result."""
    from partitioner.deploy.plan import parse_replicas, plan_deployment

    count = parse_replicas(replicas)
    with _progress(enabled=count != 1) as progress:
        result = plan_deployment(model, cluster, replicas=count, tp=tp, M=M, regime=regime,
                                 objective=objective, solver=solver, order=order, time_limit_s=time_limit,
                                 progress=progress, engine=engine, tpot_ms=tpot_ms, ttft_ms=ttft_ms,
                                 max_batch=max_batch)
    result = _with_metadata(result, model, cluster)  # model id, workload, hosts: what the exports read
    if out:
        from partitioner.cli._output import safe_write
        from partitioner.deploy.deployment import DEPLOYMENT_FORMAT
        from partitioner.result import PLAN_FORMAT

        marker = PLAN_FORMAT if count == 1 else DEPLOYMENT_FORMAT
        safe_write(out, result.to_json(), inputs=inputs, marker=marker)
    if as_json:
        click.echo(result.to_json(), nl=False)
    elif export:
        from partitioner.cli.plan import _print_export

        _print_export(result, export)
    elif count == 1:
        from partitioner.cli._plan_view import render_plan

        render_plan(result, "not compared for TP-group plans")
        for note in result.notes:
            click.echo(f"note: {note}")
    else:
        render_deployment(result)


def _with_metadata(result: Any, model: Any, cluster: Any) -> Any:
    """A Plan, or every replica of a Deployment, carrying the plan JSON's input fields."""
    import dataclasses

    from partitioner.api import with_metadata

    if hasattr(result, "replicas"):
        return dataclasses.replace(result, replicas=tuple(with_metadata(p, model, cluster) for p in result.replicas))
    return with_metadata(result, model, cluster)


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
        console.print(f"proven optimal over node kinds ({d.subproblems} replica solves)")
    else:
        import math

        bound = (f"upper bound {d.upper_bound_tokens_per_s:.4g} tokens/s, gap {d.gap:.1%}"
                 if math.isfinite(d.upper_bound_tokens_per_s) else "no upper bound known")
        console.print(f"not proven: {bound} ({d.subproblems} replica solves{', ' + d.stopped if d.stopped else ''})")
