"""dp == exhaustive enumeration on 10^4 seeded small problems (L <= 9, G <= 5).

Every (objective, regime, order) of 840 seeded cost tables: interchangeable devices,
several devices per node joined by one uniform link, link-distinct devices, and near-tie
costs (1e-8 relative) at M up to 10^5 (`oracle.instance`). The oracle is an independent
vectorised brute force (`oracle.oracle`). Checked: dp's key equals the optimum within the
1e-9 tie rule, its plan is feasible and scored exactly, its bound equals its value; and on
every tenth table, the seed `dp.hint` gives CP-SAT when the DP is switched off (tau* plan,
tau*-based bounds) never reports a bound above the optimum nor a plan below it.
"""

from __future__ import annotations

import itertools

import pytest
from oracle import KINDS, instance, oracle

from partitioner.errors import InfeasibleError
from partitioner.problem import Problem, evaluate, lex_compare, objective_key
from partitioner.solvers import dp

TABLES = 840  # x 12 (objective, regime, order) = 10,080 problems
COMBOS = list(itertools.product(("balanced", "throughput", "makespan"), ("async", "blocking"), ("free", "fixed")))


def _check(seed: int, kind: str, monkeypatch: pytest.MonkeyPatch) -> int:
    t, M = instance(seed, kind)
    want = {order: oracle(t, M, order) for order in ("free", "fixed")}
    n = 0
    for objective, regime, order in COMBOS:
        p = Problem(t, M=M, objective=objective, regime=regime, order=order)  # type: ignore[arg-type]
        best = want[order][objective, regime]
        n += 1
        if best is None:
            with pytest.raises(InfeasibleError):
                dp.solve(p)
            continue
        got = dp.solve(p)
        assert lex_compare(got.objective, best) == 0, (seed, kind, objective, regime, order, M, got, best)
        m = evaluate(p, got.devices, got.cuts)
        assert m.fits and got.objective == objective_key(p, m)
        assert got.optimal and got.lower_bound == got.objective[0]
        if seed % 10 == 0 and order == "free":
            with monkeypatch.context() as mp:
                mp.setattr(dp, "MAX_STAGE_WORK", 0)
                seed_plan = dp.hint(p)
            assert seed_plan.lower_bound <= best[0] * (1 + 1e-9) + 1e-12, (seed, kind, objective, regime)
            assert lex_compare(seed_plan.objective, best) >= 0
            assert seed_plan.lower_bound > 0 or best[0] == 0  # never a trivial bound
            if seed_plan.optimal:
                assert lex_compare(seed_plan.objective, best) == 0
    return n


def test_dp_equals_exhaustive_on_ten_thousand_problems(monkeypatch: pytest.MonkeyPatch) -> None:
    n = sum(_check(seed, KINDS[seed % len(KINDS)], monkeypatch) for seed in range(TABLES))
    assert n >= 10_000
