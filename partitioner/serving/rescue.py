"""When the least-w_max route of the serve search finds no plan within a TPOT or TTFT limit: the
split of least TTFT and the split of least round trip at each searched batch, as candidates and
as bounds.

TTFT = Στ_p + Σd_p (score.py) is the makespan of one micro-batch (Thm 2 at M = 1) on the
prefill tables (cost = prefill_cost, cut_bytes = prefill_cut_bytes), so the exact "makespan"
solve at M = 1 gives the least TTFT over every split and device subset, and its lower bound
bounds it. On the decode tables the same solve gives T*(1) = min Στ + Σd, so every split's TPOT
at K = 1 is at least T*(1) + d_ret_lb (P >= R = Στ + Σd + d_ret); larger K only add. Both
splits are scored at K = 1 and kept when they meet the limits (not proven: the batch's bound
stays), and the bounds replace the cruder ones of partitioner.serving.run (`note_bounds`), so
"infeasible" is said only when they rule the limits out.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from partitioner.errors import PartitionerError
from partitioner.problem import CostTables, Problem
from partitioner.serving.points import limit_reason, with_in_flight

if TYPE_CHECKING:
    from partitioner.serving.run import _Search

__all__ = ["rescue"]


def rescue(run: _Search) -> None:
    """Candidates and bounds at every batch the least-w_max route searched (module doc)."""
    from partitioner.serving.run import _d_ret_lb

    d_ret = None
    for B in sorted(run.room):
        if run.timed_out():
            return
        base = run.tables_at(B)
        d_ret = _d_ret_lb(base) if d_ret is None else d_ret
        bounds = run.room[B]
        if run.limits.ttft_s is not None and base.prefill_cost is not None and base.prefill_cut_bytes is not None:
            pre = replace(base, cost=base.prefill_cost, cut_bytes=base.prefill_cut_bytes)
            low = _least_pass(run, base, pre)
            bounds[1] = max(bounds[1], low)
        if run.limits.tpot_s is not None:
            bounds[0] = max(bounds[0], _least_pass(run, base, base) + d_ret)


def _least_pass(run: _Search, base: CostTables, tables: CostTables) -> float:
    """The exact least Στ + Σd on `tables` at M = 1 (its split scored on `base` as a candidate);
    returns its lower bound (0 when the solve fails)."""
    problem = Problem(with_in_flight(tables, 1), M=1, regime=run.regime, objective="makespan", order=run.order)  # type: ignore[arg-type]
    run.solves += 1
    try:
        sol = run.exact_solve(problem)
    except PartitionerError:
        return 0.0
    if not sol.feasible:
        return 0.0
    decode = Problem(with_in_flight(base, 1), M=1, regime=run.regime, objective="throughput", order=run.order)  # type: ignore[arg-type]
    point = run.score(decode, replace(sol, lower_bound=0.0), float(np.sum(base.cost.min(axis=0))))
    s = point.serving
    run.all.append(point)
    if limit_reason(s, run.limits) is None and (s.max_sequences is None or s.max_sequences >= s.sequences):
        run.ok.append(point)
    return float(sol.lower_bound)
