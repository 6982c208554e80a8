"""The parts of `partition report` that search beyond one problem's plans: the options it shares
with `partition plan`, the serve search beside the engines' splits, the --replicas/--tp
deployment, and the report of a model that does not fit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["DECODE_SHARE", "RESERVE_WORK", "REPLICAS_WORK", "MIN_SERVE_WORK", "MIN_REPLICAS_WORK", "MIN_DECODE_S",
           "Options", "decode_search", "no_fit_report", "replicas_search", "WorkSpent"]

DECODE_SHARE = 0.5  # of the --time-limit left after the plans and baselines: the --replicas search's
RESERVE_WORK = 100  # steps of the report's work budget kept for the Pareto sweep and the what-ifs
MIN_SERVE_WORK = 50  # the serve search always runs, at least this many steps (it returns its best plan so far)
MIN_DECODE_S = 0.05  # ... and under a --time-limit at least this long
REPLICAS_WORK = 100  # steps the serve search leaves for the --replicas/--tp search when one is asked
MIN_REPLICAS_WORK = 10  # the --replicas search always gets at least this many replica solves


class WorkSpent(KeyboardInterrupt):
    """The --replicas search used its share of the report's work budget. Raised from the search's
    progress call after a replica solve, it stops the search as Ctrl-C does (every replica search,
    partitioner.deploy.replicas, columns and greedy, then returns its best deployment so far), but
    counts no Ctrl-C, so the rest of the report runs on."""


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


def _wants_deployment(opts: Options, cluster: Any) -> bool:
    from partitioner.api import wants_deployment

    return bool(wants_deployment(opts.replicas, opts.tp, cluster))


def no_fit_report(reason: str, problem: Any, model: Any, cluster: Any, name: str, Ms: tuple[int, ...], base: str,
                  solves: Any, budget: Any, planner: Any) -> Any:
    """The report of a model that does not fit (partitioner.report.nofit): the baselines as rows
    (each with its memory), the shortfall per device, the smallest additions that fit."""
    from partitioner.report.build import compare_plans
    from partitioner.report.compare import Report, infeasible_row
    from partitioner.report.nofit import no_fit
    from partitioner.report.serving import workload_of
    from partitioner.report.solving import stopped

    workload = workload_of(model)
    rows = (infeasible_row(base, "optimal", reason),
            *compare_plans(problem, Ms=Ms, objectives=(), solves=solves, workload=workload))
    nf = no_fit(reason, problem, model, cluster, planner, workload,
                more_time=lambda: not stopped(budget, solves.reserve_s))
    if nf.tried and stopped(budget, solves.reserve_s):
        budget.cut(f"the search for GPUs to add ({', '.join(nf.tried)} not tried to the end)")
    return Report(model=problem.tables.model_name, cluster=name, regime=problem.regime, plan_M=int(problem.M),
                  Ms=Ms, base=base, rows=rows, pareto=(), whatifs=(), solves=solves.calls, nofit=nf,
                  cut=tuple(budget.notes))


def replicas_search(model: Any, cluster: Any, opts: Options, M: int, regime: str, solver: str, order: str | None,
                    Ms: tuple[int, ...], budget: Any, reserve: float, progress: Any) -> Any:
    """`rows -> Candidate | str`: the --replicas/--tp plan (partitioner.deploy.plan, as `partition
    plan` makes it), for the headline, or why there is none; None without those options. Its
    replica solves count in the report's work budget (`_ReplicaSolves`: the work left, at least
    MIN_REPLICAS_WORK), so it ends at the same solve on any machine and names the cut; under a
    --time-limit it also gets DECODE_SHARE of the time left."""
    from partitioner.api import wants_deployment

    if not wants_deployment(opts.replicas, opts.tp, cluster):
        return None

    def run(rows: Any) -> Any:
        from partitioner.deploy.plan import plan_deployment
        from partitioner.errors import PartitionerError
        from partitioner.report.replicas import deployment_candidate
        from partitioner.report.serving import workload_of
        from partitioner.report.solving import stopped, wall_left

        left = wall_left(budget, reserve)
        source = f"--replicas {opts.replicas}" + (f" --tp {opts.tp}" if opts.tp else "")
        progress(source)
        why = stopped(budget, reserve)
        if why:
            budget.cut(f"the {source} search (not started)", why)
            return f"{source}: not searched, {why} cut the report short"
        count = _ReplicaSolves(budget, source, progress)
        try:
            result = plan_deployment(model, cluster, replicas=opts.replicas, tp=opts.tp, M=M, regime=regime,
                                     objective=opts.objective, solver=solver, order=order, engine=opts.engine,
                                     time_limit_s=None if left == float("inf") else max(MIN_DECODE_S,
                                                                                       DECODE_SHARE * left),
                                     tpot_ms=opts.tpot_ms, ttft_ms=opts.ttft_ms, progress=count)
        except PartitionerError as exc:
            if count.spent and not budget.interrupted():  # stopped by the work before it had N replicas
                budget.cut(f"the {source} search", "the work budget")
                return (f"{source}: no deployment within the report's work budget ({count.solves:,} replica "
                        f"solve{'s' if count.solves != 1 else ''}); a larger --work searches further")
            return f"{source}: {exc}"
        except KeyboardInterrupt:
            why = "the work budget" if count.spent and not budget.interrupted() else "Ctrl-C"
            budget.cut(f"the {source} search", why)
            return f"{source}: stopped by {why} before it had a plan"
        finally:
            budget.charge(max(count.solves, 1))  # one pipeline (--replicas 1 --tp ...) is one solve
        if count.spent and not budget.interrupted():
            result = _work_cut(result)
            budget.cut(f"the {source} search (best of {count.solves:,} replica solves shown; a larger --work "
                       "searches further)", "the work budget")
        elif getattr(result, "status", "") in ("TIME_LIMIT", "INTERRUPTED"):
            budget.cut(f"the {source} search (best so far shown)", stopped(budget))
        return deployment_candidate(result, source, Ms, workload_of(model), tuple(r for r in rows
                                                                                  if r.kind == "baseline"))

    return run


class _ReplicaSolves:
    """The --replicas search's progress call (after every replica solve): counts the solves, shows
    them on the progress line, and stops the search (WorkSpent) once they reach its share of the
    report's work budget: the work left, at least MIN_REPLICAS_WORK (no count without a work budget)."""

    def __init__(self, budget: Any, source: str, progress: Any) -> None:
        left = None if budget.work_limit is None else budget.work_limit - budget.work
        self.limit = None if left is None else max(MIN_REPLICAS_WORK, left)
        self.source, self.progress = source, progress
        self.solves = 0
        self.spent = False

    def __call__(self, *_: Any) -> None:
        self.solves += 1
        self.progress(f"{self.source}: {self.solves:,} replica solves")
        if self.limit is not None and self.solves >= self.limit:
            self.spent = True
            raise WorkSpent


def _work_cut(result: Any) -> Any:
    """The deployment the work budget stopped, its note saying so (the search reads the stop as an
    interruption: partitioner.deploy.plan)."""
    import dataclasses

    if not dataclasses.is_dataclass(result) or not hasattr(result, "notes"):
        return result
    notes = tuple(n.replace("(interrupted)", "(the report's work budget)") for n in result.notes)
    return dataclasses.replace(result, notes=notes)  # type: ignore[type-var]


def decode_search(model: Any, cluster: Any, regime: str, order: str | None, Ms: tuple[int, ...], budget: Any,
                  progress: Any, reserve: float, opts: Options) -> Any:
    """The serve objective's plan beside the baselines at its batch and in-flight count
    (partitioner.report.decode), searched in the report's work left but RESERVE_WORK, at least
    MIN_SERVE_WORK steps (and under a --time-limit what is left of it after `reserve`, at least
    MIN_DECODE_S): the search always runs (but after Ctrl-C) and returns its best plan so far,
    the same on an idle and a busy machine unless the time limit or Ctrl-C cut it. Else why there is none (a prefill workload, no plan)."""
    from partitioner.errors import PartitionerError
    from partitioner.report.decode import decode_comparison

    if getattr(getattr(model, "workload", None), "phase", "decode") == "prefill":
        return "the workload is prefill; the serve objective plans decode"
    if budget.interrupted():  # the time limit still leaves it MIN_DECODE_S and its first point
        budget.cut("the serve search (not started)", "Ctrl-C")
        return "no serve plan: Ctrl-C cut the report short before the serve search"
    reserve_work = RESERVE_WORK + (REPLICAS_WORK if _wants_deployment(opts, cluster) else 0)
    work = None if budget.work_limit is None else max(MIN_SERVE_WORK, budget.work_limit - budget.work - reserve_work)
    sub = budget.within(work)
    if sub.deadline is not None:
        sub.deadline = max(sub.deadline - reserve, sub.start + MIN_DECODE_S)
    progress("the serve objective's batch and in-flight search")

    def searched(batch: int, best: float, elapsed: float) -> None:
        progress(f"serve search: batch {batch} searched, best {best:,.4g} tokens/s")

    try:
        found = decode_comparison(model, cluster, regime=regime, order=order, Ms=Ms, engine=opts.engine,
                                  budget=sub, tpot_ms=opts.tpot_ms, ttft_ms=opts.ttft_ms, progress=searched)
    except PartitionerError as exc:
        return f"no serve plan: {exc}"
    except KeyboardInterrupt:
        budget.cut("the serve search", "Ctrl-C")
        return "no serve plan: Ctrl-C stopped the serve search before it had a plan"
    finally:
        budget.charge(sub.work)
    if found.plans and getattr(found.plans[0], "status", "") == "TIME_LIMIT":
        why = sub.why() or "the work budget"
        more = "; a larger --work searches further" if why == "the work budget" else ""
        budget.cut(f"the serve search (best of {sub.work:,} steps shown{more})", why)
    return found
