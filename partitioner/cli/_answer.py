"""`partition plan` with no --objective on a decode workload: the serving answer.

A thin view over partitioner.planning.answer: the first line says which objective ran and why,
then the plan (one pipeline: the stage table and closed forms; several: the replica tables), the
paper's least-τ_max plan in one line when it differs, what one machine's loss costs, and the
`vllm bench serve` command that measures the answer (partitioner.calibrate.bench_command).
JSON: the plan's (or deployment's) own document plus `objective_choice`, `paper_plan` and
`failure`; the failure block's lines are partitioner.cli._failure's, which explicit requests use too.
"""

from __future__ import annotations

from typing import Any

import click

from partitioner.cli._failure import failure_lines
from partitioner.cli._output import fmt_time

__all__ = ["run_answer", "answer_lines", "answer_extra"]


def run_answer(model: Any, cluster: Any, choice: Any, *, inputs: tuple[str, str], M: int, regime: str, solver: str,
               order: str | None, time_limit: float | None, tpot_ms: float | None, ttft_ms: float | None,
               max_batch: int | None, as_json: bool, out: str | None, export: str | None, engine: str | None,
               tp: str | None, max_machines: int | None) -> None:
    """Plan, then print (console or JSON) and optionally write the answer."""
    from partitioner.jsonio import dumps
    from partitioner.planning.answer import default_answer
    from partitioner.planning.pipeline import with_metadata_any

    if out:
        from partitioner.cli._output import check_writable
        from partitioner.result import PLAN_FORMAT

        check_writable(out, inputs=inputs, marker=PLAN_FORMAT)
    ans = default_answer(model, cluster, M=M, regime=regime, solver=solver, order=order, time_limit_s=time_limit,
                         tpot_ms=tpot_ms, ttft_ms=ttft_ms, max_batch=max_batch, engine=engine, tp=tp,
                         max_machines=max_machines)
    result = with_metadata_any(ans.result, model, cluster)
    doc = {**result.to_dict(), **answer_extra(ans)}
    text = dumps(doc) + "\n"
    if out:
        from partitioner.cli._output import safe_write

        safe_write(out, text, inputs=inputs, marker=doc["format"])
    if as_json:
        if out != "-":
            click.echo(text, nl=False)
        return
    if export:
        from partitioner.cli._deploy import print_export

        print_export(result, export)
        return
    click.echo(ans.choice.line())
    if hasattr(result, "replicas"):
        from partitioner.cli._deploy import render_deployment

        render_deployment(result)
    else:
        from partitioner.cli._baselines import even_serve
        from partitioner.cli._plan_view import render_plan

        even = even_serve(model, cluster, solver, regime=regime, order=order, time_limit_s=time_limit,
                           tpot_ms=tpot_ms, ttft_ms=ttft_ms, max_batch=max_batch, engine=engine) \
            if len(result.stages) <= 8 else "not compared for pipelines over more than 8 GPUs"
        render_plan(result, even)
        for note in result.notes:
            click.echo(f"note: {note}")
    for line in answer_lines(ans, result):
        click.echo(line)


def _totals(result: Any) -> tuple[float, float | None, int]:
    """(tokens/s, worst TPOT, GPUs) of a Plan or a Deployment."""
    if hasattr(result, "replicas"):
        tot = result.serving_totals()
        return float(tot["tokens_per_s"]), tot["tpot_s"], int(tot["gpus"])
    s = result.serving
    gpus = sum(max(1, getattr(st, "tp", 1)) for st in result.stages)
    return (0.0, None, gpus) if s is None else (float(s.tokens_per_s), s.tpot_s, gpus)


def _same(paper: Any, result: Any) -> bool:
    if hasattr(result, "replicas") or not hasattr(paper, "stages"):
        return False
    return [(st.device, st.start, st.end) for st in paper.stages] == [(st.device, st.start, st.end) for st in result.stages]


def answer_lines(ans: Any, result: Any) -> list[str]:
    """The paper's τ_max plan (when it differs), the failure block and the benchmark command."""
    from partitioner.calibrate.bench_command import bench_command

    lines = []
    tps, _, _ = _totals(result)
    paper = ans.paper
    if isinstance(paper, str):
        lines.append(f"paper's least-τ_max plan (--objective balanced): none ({paper})")
    elif paper is not None and not _same(paper, result):
        p_tps, p_tpot, p_gpus = _totals(paper)
        ratio = f", ×{tps / p_tps:.3g} here" if p_tps > 0 else ""
        if ans.tpot_limit_s is not None and p_tpot is not None and p_tpot > ans.tpot_limit_s:
            ratio += " (over the --tpot-ms limit)"
        lines.append(f"paper's least-τ_max plan (--objective balanced): {paper.S} stage(s) on {p_gpus} GPUs, "
                     f"{p_tps:,.4g} tokens/s, TPOT {fmt_time(p_tpot) if p_tpot else '—'} at the workload's "
                     f"batch and in-flight count{ratio}")
    lines += failure_lines(ans.failure)
    for plan in (result.replicas[:1] if hasattr(result, "replicas") else (result,)):
        cmd = bench_command(plan, "vllm")
        if cmd:
            head = "measure it" + (" (replica 0, --replica 0)" if hasattr(result, "replicas") else "")
            lines.append(f"{head}: {cmd}")
            lines.append("  then: partition calibrate bench bench.json --plan PLAN.json --model MODEL.yaml --cluster CLUSTER.yaml --write-cluster CLUSTER.calibrated.yaml")
    return lines


def answer_extra(ans: Any) -> dict[str, Any]:
    """The JSON fields the answer adds to the plan or deployment document (raw SI units)."""
    paper = ans.paper
    extra: dict[str, Any] = {"objective_choice": ans.choice.to_dict()}
    if hasattr(paper, "stages"):
        s = paper.serving
        extra["paper_plan"] = {"objective": "balanced", "stages": paper.S, "devices": [st.device for st in paper.stages],
                               "tau_max_s": paper.tau_max, "tokens_per_s": None if s is None else s.tokens_per_s,
                               "tpot_s": None if s is None else s.tpot_s}
    extra["failure"] = None if ans.failure is None else ans.failure.to_dict()
    return extra
