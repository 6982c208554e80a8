"""`partition score MODEL CLUSTER (--split ENGINE:a,b,... --devices D1,D2,... | --layout FILE)`.

Scores the split you run today with the same closed forms as `plan` (Thm 2, Thm 3) and
prints it beside the optimal plan. `--engine` (default: the engine of `--split`) costs both with
that engine's overheads and compares with the best plan the engine can launch; a given split in
a device order the engine would not launch is flagged (partitioner.solvers.engine_sequences).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from partitioner.cli._parse import PresetName
from partitioner.registry import LAUNCH_TARGETS, REGIMES

if TYPE_CHECKING:
    from partitioner.problem import Problem, Solution

__all__ = ["score"]


@click.command("score")
@click.argument("model_file", metavar="MODEL.yaml", type=click.Path(dir_okay=False))
@click.argument("cluster_file", metavar="CLUSTER.yaml", type=click.Path(dir_okay=False))
@click.option("--split", default=None, metavar="ENGINE:a,b,...", help="vllm/sglang/trtllm layer counts or llamacpp -ts.")
@click.option("--devices", default=None, metavar="D1,D2,...", help="Device of each stage, in pipeline order.")
@click.option("--layout", "layout_file", type=click.Path(dir_okay=False), default=None, help="Layout YAML (replicas -> stages).")
@click.option("--M", "M", type=click.IntRange(min=1), default=8, show_default=True)
@click.option("--regime", type=click.Choice(REGIMES), default="async", show_default=True)
@click.option("--engine", "engine", type=PresetName("engines"), default=None,
              help="Cost both plans with this engine's overheads and compare with the best plan it can launch; "
                   "default: the engine of --split, else the files' engine: setting.")
@click.option("--json", "as_json", is_flag=True, help="Print both plans as JSON.")
def score(
    model_file: str, cluster_file: str, split: str | None, devices: str | None, layout_file: str | None,
    M: int, regime: str, engine: str | None, as_json: bool,
) -> None:
    """Score an engine's split (or a layout) and compare it with the optimal plan."""
    from partitioner.api import build_problem, load_inputs, solve_problem, with_metadata
    from partitioner.errors import InputError
    from partitioner.export import imports
    from partitioner.jsonio import dumps
    from partitioner.problem import Solution, evaluate, objective_key
    from partitioner.result import Plan

    if engine is None and split is not None and split.partition(":")[0] in LAUNCH_TARGETS:
        engine = split.partition(":")[0]  # a vLLM split is compared with what vLLM can run
    model, cluster = load_inputs(model_file, cluster_file)
    problem = build_problem(model, cluster, M=M, regime=regime, order="free", engine=engine)
    t = problem.tables
    n_dec = sum(1 for k in t.kinds if k == "decoder")
    if layout_file is not None:
        from partitioner.models.loader import read_yaml

        doc, _ = read_yaml(layout_file)  # the safe reader: regular files only, bounded, one-line errors
        names, counts = imports.layout_stages(doc, layout_file)
        if sum(counts) != n_dec:
            raise InputError(f"{layout_file}: the stages cover {sum(counts)} decoder layers, the model has {n_dec}")
    elif split is not None and devices is not None:
        names = [d.strip() for d in devices.split(",")]
        counts = imports.counts_of_split(split, n_dec)
    else:
        raise InputError("give --split ENGINE:a,b,... with --devices D1,D2,..., or --layout FILE")
    if len(names) != len(counts):
        raise InputError(f"{len(counts)} stages but {len(names)} devices")
    unknown = [d for d in names if d not in t.device_names]
    if unknown:
        raise InputError(f"unknown devices {unknown}; the cluster has {', '.join(t.device_names)}")
    idx = tuple(t.device_names.index(d) for d in names)
    cuts = imports.cuts_from_decoder_counts(t, counts)
    m = evaluate(problem, idx, cuts)
    yours = Solution(idx, cuts, "given", False, objective_key(problem, m), 0.0, status="GIVEN", feasible=m.fits,
                     reason="" if m.fits else "breaks a memory limit")
    given = Plan.from_solution(problem, yours)
    best = with_metadata(solve_problem(problem, "auto", engine=engine, cluster=cluster), model, cluster)
    launchable = _launchable(problem, cluster, engine, yours)
    if not launchable:
        click.echo(f"note: {engine} would not launch the stages in this device order (--engine {engine} rules: "
                   "partitioner.solvers.engine_sequences); the optimal plan is one it launches", err=True)
    if as_json:
        click.echo(dumps({"engine": engine, "given_launchable": launchable,
                          "given": with_metadata(given, model, cluster).to_dict(), "optimal": best.to_dict()}, indent=2))
        return
    from partitioner.report.units import fmt_time

    rows = [("", "yours", "optimal"), ("stages", str(given.S), str(best.S)),
            ("tau_max", fmt_time(given.tau_max), fmt_time(best.tau_max)),
            ("sigma_max", fmt_time(given.sigma_max), fmt_time(best.sigma_max)),
            (f"T at M={M}", fmt_time(given.T), fmt_time(best.T)),
            ("throughput", f"{given.throughput:.2f} /s", f"{best.throughput:.2f} /s")]
    if given.serving is not None and best.serving is not None:  # the workload's closed-loop decode (Plan.serving)
        g, o = given.serving, best.serving
        rows += [(f"decode B={g.batch}, K={g.in_flight}", f"{g.tokens_per_s:,.1f} tok/s", f"{o.tokens_per_s:,.1f} tok/s"),
                 ("TPOT", fmt_time(g.tpot_s), fmt_time(o.tpot_s))]
    rows.append(("fits memory", "yes" if given.feasible else "NO", "yes"))
    for a, b, c in rows:
        click.echo(f"{a:<16} {b:>14} {c:>14}")
    if given.feasible:
        for line in _verdict(given, best, fmt_time):
            click.echo(line)


def _ratio_line(what: str, yours: float, optimal: float, higher_is_better: bool) -> str:
    """``decode tokens/s: the optimal plan is 1.31x higher`` or ``TPOT (...): yours is 1.12x
    faster`` (no claim within 1 %): the winner follows the numbers, never the plan's label."""
    if yours <= 0 or optimal <= 0 or abs(optimal / yours - 1) <= 0.01:
        return f"{what}: the same within 1 %"
    optimal_wins = (optimal > yours) == higher_is_better
    ratio = max(optimal / yours, yours / optimal)
    word = "higher" if higher_is_better else "faster"
    return f"{what}: {'the optimal plan' if optimal_wins else 'yours'} is {ratio:.2f}x {word}"


def _verdict(given: Any, best: Any, fmt_time: Any) -> list[str]:
    """One line per measure, in the units an operator reads: decode tokens/s and TPOT when the
    workload's closed-loop decode is known (the optimal plan minimises the planning objective,
    which need not make every measure better), else micro-batches per second."""
    if given.serving is not None and best.serving is not None:
        g, o = given.serving, best.serving
        return [_ratio_line("decode tokens/s", g.tokens_per_s, o.tokens_per_s, higher_is_better=True),
                _ratio_line(f"TPOT ({fmt_time(g.tpot_s)} yours, {fmt_time(o.tpot_s)} optimal)", g.tpot_s, o.tpot_s,
                            higher_is_better=False)]
    return [_ratio_line("micro-batch throughput", given.throughput, best.throughput, higher_is_better=True)]


def _launchable(problem: Problem, cluster: Any, engine: str | None, yours: Solution) -> bool:
    """Whether `engine` runs the given stages in their order (always, without an engine rule)."""
    from partitioner.solvers.engine_rule import order_rule

    rule = order_rule(engine, "auto", cluster, problem.tables)
    return rule is None or rule.admits(problem, yours)
