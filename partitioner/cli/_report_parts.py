"""The parts of `partition report` that search beyond one problem's plans: the options it shares
with `partition plan`, the serve search beside the engines' splits, the --replicas/--tp
deployment, and the report of a model that does not fit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["DECODE_SHARE", "SERVE_SHARE", "MIN_DECODE_S", "Options", "decode_search", "no_fit_report",
           "replicas_search"]

DECODE_SHARE = 0.5  # of the budget left after the plans and baselines: the rest is the Pareto sweep's
SERVE_SHARE = 0.8  # ... with --objective serve
MIN_DECODE_S = 0.05  # the serve search always runs, at least this long (it returns its best plan so far)


@dataclass(frozen=True)
class Options:
    """The plan command's options the report accepts (`partition plan --help`)."""

    objective: str = "balanced"
    tpot_ms: float | None = None
    ttft_ms: float | None = None
    engine: str | None = None
    replicas: str = "1"
    tp: str | None = None

    @property
    def base(self) -> str:
        """The objective of the compared base plan (serve: balanced, the serve plan is its own row)."""
        return "balanced" if self.objective == "serve" else self.objective


def no_fit_report(reason: str, problem: Any, model: Any, cluster: Any, name: str, Ms: tuple[int, ...], base: str,
            solves: Any, deadline: Any, reserve: float, planner: Any) -> Any:
    """The report of a model that does not fit (partitioner.report.nofit): the baselines as rows
    (each with its memory), the shortfall per device, the smallest additions that fit."""
    from partitioner.report.build import compare_plans
    from partitioner.report.compare import Report, infeasible_row
    from partitioner.report.nofit import no_fit
    from partitioner.report.serving import workload_of

    workload = workload_of(model)
    rows = (infeasible_row(base, "optimal", reason),
            *compare_plans(problem, Ms=Ms, objectives=(), solves=solves, workload=workload))
    nf = no_fit(reason, problem, model, cluster, planner, workload, more_time=lambda: deadline.left() > reserve)
    return Report(model=problem.tables.model_name, cluster=name, regime=problem.regime, plan_M=int(problem.M),
                  Ms=Ms, base=base, rows=rows, pareto=(), whatifs=(), solves=solves.calls, nofit=nf)


def replicas_search(model: Any, cluster: Any, opts: Options, M: int, regime: str, solver: str, order: str | None,
              Ms: tuple[int, ...], deadline: Any, reserve: float, progress: Any) -> Any:
    """`rows -> Candidate | str`: the --replicas/--tp plan (partitioner.deploy.plan, as `partition
    plan` makes it) in DECODE_SHARE of the budget left, for the headline, or why there is none;
    None without those options."""
    from partitioner.api import wants_deployment

    if not wants_deployment(opts.replicas, opts.tp, cluster):
        return None

    def run(rows: Any) -> Any:
        from partitioner.deploy.plan import plan_deployment
        from partitioner.errors import PartitionerError
        from partitioner.report.replicas import deployment_candidate
        from partitioner.report.serving import workload_of

        left = deadline.left() - reserve
        progress(f"--replicas {opts.replicas}" + (f" --tp {opts.tp}" if opts.tp else ""))
        source = f"--replicas {opts.replicas}" + (f" --tp {opts.tp}" if opts.tp else "")
        try:
            result = plan_deployment(model, cluster, replicas=opts.replicas, tp=opts.tp, M=M, regime=regime,
                                     objective=opts.objective, solver=solver, order=order, engine=opts.engine,
                                     time_limit_s=None if left == float("inf") else max(MIN_DECODE_S,
                                                                                       DECODE_SHARE * left),
                                     tpot_ms=opts.tpot_ms, ttft_ms=opts.ttft_ms)
        except PartitionerError as exc:
            return f"{source}: {exc}"
        return deployment_candidate(result, source, Ms, workload_of(model), tuple(r for r in rows
                                                                                  if r.kind == "baseline"))

    return run


def decode_search(model: Any, cluster: Any, regime: str, order: str | None, Ms: tuple[int, ...], deadline: Any,
            progress: Any, reserve: float, opts: Options) -> Any:
    """The serve objective's plan beside the baselines at its batch and in-flight count
    (partitioner.report.decode), searched in DECODE_SHARE (SERVE_SHARE with --objective serve) of
    the budget left after `reserve`, at least MIN_DECODE_S: the search always runs and returns its
    best plan so far. Else why there is none (a prefill workload, no plan)."""
    from partitioner.errors import PartitionerError
    from partitioner.report.decode import decode_comparison

    if getattr(getattr(model, "workload", None), "phase", "decode") == "prefill":
        return "the workload is prefill; the serve objective plans decode"
    left = deadline.left() - reserve
    share = SERVE_SHARE if opts.objective == "serve" else DECODE_SHARE
    progress("the serve objective's batch and in-flight search")

    def searched(batch: int, best: float, elapsed: float) -> None:
        progress(f"serve search: batch {batch} searched, best {best:,.4g} tokens/s")

    try:
        return decode_comparison(model, cluster, regime=regime, order=order, Ms=Ms, engine=opts.engine,
                                 time_limit_s=None if left == float("inf") else max(MIN_DECODE_S, share * left),
                                 tpot_ms=opts.tpot_ms, ttft_ms=opts.ttft_ms, progress=searched)
    except PartitionerError as exc:
        return f"no serve plan: {exc}"


