"""The every-state subset step (`dp.dense`) and its batched threshold search (`dp.sweep`).

`Dense.sum_steps` must give, row by row, the value of the pruned subset step (`subsets.sum_step`
with `dense` switched off) for the same caps, and a plan whose exact sum of sigma is that value;
the sweep's T(M) must equal the exhaustive oracle's (seeded, every link structure) and, when
stopped after a round or two, return a plan with a bound in (0, optimum].
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import KINDS, instance, oracle
from test_distinct_subsets import _distinct

from partitioner.problem import Problem, evaluate, lex_compare
from partitioner.solvers.budget import Budget, TimeUp
from partitioner.solvers.dp import dense, distinct, subsets, sweep
from partitioner.solvers.dp.tables import build_tables, cap

INF = float(np.inf)


def _ctx(p: Problem, on: bool, monkeypatch: pytest.MonkeyPatch) -> subsets.Ctx:
    with monkeypatch.context() as m:
        if not on:
            m.setattr(dense, "MAX_ELEMENTS", 0)
        return subsets.Ctx(p, None)


@pytest.mark.parametrize("seed", range(24))
def test_dense_rows_equal_the_pruned_step(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    t, M = instance(seed, KINDS[seed % len(KINDS)])
    p = Problem(t, M=M, objective="makespan", regime="blocking", order="free")
    fast, slow = _ctx(p, True, monkeypatch), _ctx(p, False, monkeypatch)
    assert fast.dense is not None and slow.dense is None
    finite = np.concatenate([c[np.isfinite(c)] for c in fast.T.C])
    r = np.random.default_rng(seed)
    levels = np.quantile(finite, r.uniform(0.2, 1.0, 6)) if finite.size else np.ones(6)
    caps = np.array([[INF, INF], *[[cap(x), INF] for x in levels[:3]], *[[INF, cap(x)] for x in levels[3:]]])
    rows = fast.dense.sum_steps(caps)
    for (value, lv, level, row, start), (tc, sc) in zip(rows, caps, strict=True):
        want = subsets.sum_step(slow, float(tc), float(sc))
        if not np.isfinite(want[0]):
            assert not np.isfinite(value)
            continue
        assert value == pytest.approx(want[0], rel=1e-12)
        devices, cuts = subsets.backtrack(fast, lv, level, row, start, float(tc), float(sc))
        m = evaluate(p, devices, cuts)
        assert m.fits and float(m.sigma.sum()) == pytest.approx(value, rel=1e-9)
        assert (m.tau <= tc).all() and (m.sigma <= sc).all()


@pytest.mark.parametrize("regime", ["async", "blocking"])
@pytest.mark.parametrize("K", [1, 3, 16])
def test_sweep_finds_the_oracle_optimum_for_any_round_size(regime: str, K: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sweep, "K", K)
    for seed in range(8000, 8060):
        t, M = instance(seed, KINDS[seed % len(KINDS)])
        best = oracle(t, M, "free")["makespan", regime]
        if best is None:
            continue
        p = Problem(t, M=M, objective="makespan", regime=regime, order="free")  # type: ignore[arg-type]
        got = distinct.solve(p, Budget(None))
        assert got.optimal and lex_compare(got.objective, best) == 0, (seed, K, got.objective, best)


@pytest.mark.parametrize("rounds", [1, 2, 3])
def test_a_stopped_sweep_keeps_its_plan_and_a_real_bound(rounds: int, monkeypatch: pytest.MonkeyPatch) -> None:
    t = _distinct(5, 16, 3)
    p = Problem(t, M=8, objective="makespan", regime="blocking", order="free")
    assert dense.Dense.fits(build_tables(t))
    exact = distinct.solve(p, Budget(None))
    calls = {"n": 0}

    def soon(self: Budget) -> None:
        calls["n"] += 1
        if calls["n"] > rounds:
            raise TimeUp

    monkeypatch.setattr(Budget, "check", soon)
    got = distinct.solve(p, Budget(None))
    assert 0 < got.lower_bound <= exact.objective[0] * (1 + 1e-9)
    assert got.objective[0] >= exact.objective[0] * (1 - 1e-9)
    assert evaluate(p, got.devices, got.cuts).fits


def test_points_probe_every_open_gap_end_first() -> None:
    gaps = [(1.0, 0, 9), (2.0, 12, 12), (3.0, 20, 40)]
    pts = sweep._points(gaps)
    assert {9, 12, 40} <= set(pts.tolist()) and len(pts) <= sweep.K
    assert all(0 <= i <= 40 and not 10 <= i <= 11 and not 13 <= i <= 19 for i in pts)
