"""The link-distinct Held-Karp path (`dp.distinct`, `dp.subsets`) and the class relaxation (`dp.relax`) against
the exhaustive oracle, on seeded small problems of every link structure (L <= 9, G <= 5).

`distinct.solve` is called directly (the lattice would take these small instances), for every
objective and regime: its key must equal the optimum
within the 1e-9 tie rule, its plan must fit and be scored exactly. The relaxed problem's optimum
(every link replaced by its class pair's fastest) must never exceed the true optimum, for every
objective and regime, and the bound a timed-out search reports must stay below the optimum too.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from oracle import KINDS, instance, oracle

from partitioner.errors import InfeasibleError
from partitioner.problem import CostTables, Problem, evaluate, lex_compare, objective_key
from partitioner.solvers import dp
from partitioner.solvers.budget import Budget, TimeUp
from partitioner.solvers.dp import dense, distinct, relax, subsets

TABLES = 240
SERVED = tuple((o, r) for o in ("balanced", "throughput", "makespan") for r in ("async", "blocking"))


@pytest.mark.parametrize("path", ["dense", "sparse", "guided"])
@pytest.mark.parametrize("kind", KINDS)
def test_subsets_equal_exhaustive(kind: str, path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """dense: what these tiny instances take (every state, `sweep` for T(M)); sparse: the pruned
    subset search (`dense` switched off); guided: the search as on large instances (relaxation
    heuristic, beam pass, interval splitting), forced by lowering SMALL_G as well."""
    if path != "dense":
        monkeypatch.setattr(dense, "MAX_ELEMENTS", 0)
    if path == "guided":
        monkeypatch.setattr(subsets, "SMALL_G", 0)
    n = 0
    for seed in range(5000, 5000 + TABLES // len(KINDS)):
        t, M = instance(seed, kind)
        want = oracle(t, M, "free")
        for objective, regime in SERVED:
            p = Problem(t, M=M, objective=objective, regime=regime, order="free")  # type: ignore[arg-type]
            best = want[objective, regime]
            if best is None:
                with pytest.raises(InfeasibleError):
                    distinct.solve(p, Budget(None))
                continue
            got = distinct.solve(p, Budget(None))
            assert got.optimal and got.status == "OPTIMAL"
            assert lex_compare(got.objective, best) == 0, (seed, kind, objective, regime, M, got, best)
            m = evaluate(p, got.devices, got.cuts)
            assert m.fits and objective_key(p, m) == got.objective
            n += 1
    assert n > 100


@pytest.mark.parametrize("kind", KINDS)
def test_relaxation_bounds_every_objective(kind: str) -> None:
    for seed in range(7000, 7000 + 40):
        t, M = instance(seed, kind)
        want = oracle(t, M, "free")
        loose = relax.relaxed_tables(t)
        for (objective, regime), best in want.items():
            if best is None:
                continue
            p = Problem(loose, M=M, objective=objective, regime=regime, order="free")  # type: ignore[arg-type]
            lower = dp.solve(p).objective[0]
            assert lower <= best[0] * (1 + 1e-9) + 1e-12, (seed, kind, objective, regime, lower, best)


def _distinct(G: int, L: int, seed: int) -> CostTables:
    r = np.random.default_rng(seed)
    kinds = np.arange(G) % 3
    cost = r.uniform(0.5, 1.5, (3, L))[kinds]
    mem = r.uniform(0.5, 1.5, L)
    lat = r.uniform(0.01, 0.2, (G, G))
    bw = r.uniform(1.0, 4.0, (G, G))
    np.fill_diagonal(lat, 0.0)
    np.fill_diagonal(bw, np.inf)
    return CostTables(
        cost=cost, memory_gb=mem, cut_bytes=r.uniform(0.1, 1.0, L), capacity_gb=np.full(G, mem.sum() / 3),
        latency_s=lat, bandwidth_Bps=bw, layer_names=tuple(f"l{i}" for i in range(L)),
        device_names=tuple(f"d{g}" for g in range(G)), gpu_names=tuple(f"t{k}" for k in kinds),
        node_names=tuple(f"n{g}" for g in range(G)),
    )


def test_dispatch_takes_link_distinct_makespan_beyond_the_lattice() -> None:
    """G = 10 link-distinct, L = 60: the lattice's makespan budget is exceeded, `dp` still applies
    (through subsets) and proves the optimum; a brute force over 9! orders is out of reach, so the
    answer is checked against the lattice DP, which is exact too, with its budget lifted."""
    t = _distinct(10, 60, 3)
    for regime in ("async", "blocking"):
        p = Problem(t, M=8, objective="makespan", regime=regime, order="free")  # type: ignore[arg-type]
        assert not dp._lattice_applies(p) and dp.applies(p)
        got = dp.solve(p)
        assert got.optimal
        lattice = dp._solve(p, Budget(None))
        assert lex_compare(got.objective, lattice.objective) == 0


def test_timed_out_search_reports_a_real_bound() -> None:
    t = _distinct(10, 30, 4)
    p = Problem(t, M=8, objective="makespan", regime="blocking", order="free", time_limit_s=0.05)
    got = distinct.solve(p, Budget(0.05))
    exact = distinct.solve(dataclasses.replace(p, time_limit_s=None), Budget(None))
    assert 0 < got.lower_bound <= exact.objective[0] * (1 + 1e-9)
    assert got.objective[0] >= exact.objective[0] * (1 - 1e-9)


@pytest.mark.parametrize("seed", range(30))
def test_fixed_windows_hold_every_start_of_every_fitting_plan(seed: int) -> None:
    """`fixed.windows(T, B)` contains the start of every stage of every fixed-order plan whose
    stages all have C <= B (enumerated), so restricting the fixed-order steps to them is exact."""
    import itertools

    from partitioner.solvers.dp.fixed import windows
    from partitioner.solvers.dp.tables import build_tables

    t, _ = instance(seed, KINDS[seed % len(KINDS)])
    T = build_tables(t)
    finite = np.concatenate([c[np.isfinite(c)] for c in T.C])
    if finite.size == 0:
        return
    B = float(np.quantile(finite, 0.5))
    lo, hi = windows(T, B)
    for S in range(1, min(t.G, t.L) + 1):
        for inner in itertools.combinations(range(1, t.L), S - 1):
            cuts = (0, *inner, t.L)
            for devices in itertools.combinations(range(t.G), S):
                if all(T.C[int(T.cost_id[g])][cuts[s], cuts[s + 1]] <= B for s, g in enumerate(devices)):
                    for s, g in enumerate(devices):
                        assert lo[g] <= cuts[s] <= hi[g], (seed, devices, cuts, lo, hi)



@pytest.mark.parametrize("objective,regime", SERVED)
def test_a_search_stopped_at_once_keeps_a_positive_bound(objective: str, regime: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the deadline right after the tau* plan: the plan and a bound in (0, optimum]."""
    t = _distinct(10, 30, 5)
    p = Problem(t, M=1, objective=objective, regime=regime, order="free")  # type: ignore[arg-type]
    exact = distinct.solve(p, Budget(None))
    calls = {"n": 0}

    def soon(self: Budget) -> None:
        calls["n"] += 1
        if calls["n"] > 2:
            raise TimeUp

    monkeypatch.setattr(Budget, "check", soon)
    got = distinct.solve(p, Budget(None))
    assert 0 < got.lower_bound <= exact.objective[0] * (1 + 1e-9)
    assert got.objective[0] >= exact.objective[0] * (1 - 1e-9)
