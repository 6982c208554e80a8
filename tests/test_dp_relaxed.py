"""The relaxed free-order steps (dp.relaxed): lower bounds while classes go uncounted, exact
once the plan respects every class count, and the route beyond `dp.applies` agrees with the
exhaustive oracle."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from oracle import KINDS, instance, oracle

from partitioner.problem import CostTables, Problem, evaluate, lex_compare, objective_key
from partitioner.solvers import dp
from partitioner.solvers.dp import space as dp_space
from partitioner.solvers.dp.banded import lattice_stages
from partitioner.solvers.dp.lattice import Lattice
from partitioner.solvers.dp.relaxed import Unaffordable, one_link, relaxed_bound, relaxed_stages
from partitioner.solvers.dp.relaxed_tau import relaxed_sigma, relaxed_tau
from partitioner.solvers.dp.tables import build_tables, cap, device_classes

INF = float("inf")


def scarce_fast() -> CostTables:
    """One fast device (1 per layer) and three slow ones (3 per layer), two layers fit a device:
    uncounted, the fast class would take every stage."""
    G, L = 4, 6
    lat = np.full((G, G), 1e-3)
    np.fill_diagonal(lat, 0.0)
    bw = np.full((G, G), np.inf)
    return CostTables(
        cost=np.array([[1.0] * L] + [[3.0] * L] * 3), memory_gb=np.ones(L), cut_bytes=np.zeros(L),
        capacity_gb=np.full(G, 2.0), latency_s=lat, bandwidth_Bps=bw,
        layer_names=tuple(f"l{i}" for i in range(L)), device_names=tuple(f"d{g}" for g in range(G)),
        gpu_names=("fast", "slow", "slow", "slow"), node_names=("n",) * G,
    )


def test_uncounted_pass_is_a_bound_and_refinement_counts_the_scarce_class() -> None:
    t = scarce_fast()
    T, classes = build_tables(t), tuple(tuple(c) for c in device_classes(t, links=True))
    assert classes == ((0,), (1, 2, 3))
    loose, _, _ = relaxed_bound(T, classes, "sum", INF, INF, K=set())
    # uncounted, the fast device is used twice: fast, slow, fast (a one-device class cannot
    # follow itself), 2 + 6 + 2 and two links
    assert loose == pytest.approx(10.0 + 2e-3)
    K: set[int] = set()
    value, devices, cuts = relaxed_stages(T, classes, "sum", INF, INF, K=K)
    assert K == {0}
    assert value == pytest.approx(2.0 + 12.0 + 2e-3) and sorted(devices) == [0, 1, 2]
    assert value >= loose
    p = Problem(t, objective="makespan", M=1)
    assert evaluate(p, devices, cuts).T_async == pytest.approx(value)


def test_relaxed_step_equals_the_lattice_step() -> None:
    rng = np.random.default_rng(7)
    for seed in range(40):
        t, _ = instance(seed, KINDS[seed % len(KINDS)])
        T, cls = build_tables(t), device_classes(t, links=True)
        lat = Lattice.build(cls)
        tau = dp.free_tau(Problem(t))
        if tau is None or not np.isfinite(tau):
            continue
        for mode, tc, sc in (("max", cap(tau), INF), ("sum", cap(tau), INF), ("sum", INF, cap(2 * tau)),
                             ("max", INF, INF)):
            want = lattice_stages(T, lat, mode, tc, sc)[0]
            got = relaxed_stages(T, lat.classes, mode, tc, sc)[0]
            assert got == pytest.approx(want, rel=1e-12, abs=1e-15) or got == want == INF, (seed, mode)
            K = {int(x) for x in np.flatnonzero(rng.random(lat.T) < 0.5)}
            assert relaxed_bound(T, lat.classes, mode, tc, sc, K=K)[0] <= want * (1 + 1e-12)


def test_state_cap_raises_unaffordable() -> None:
    t = scarce_fast()
    T, classes = build_tables(t), tuple(tuple(c) for c in device_classes(t, links=True))
    with pytest.raises(Unaffordable):
        relaxed_stages(T, classes, "sum", INF, INF, max_states=10)


COMBOS = list(itertools.product(("balanced", "throughput", "makespan"), ("async", "blocking")))


def test_relaxed_route_beyond_applies_equals_the_oracle(monkeypatch: pytest.MonkeyPatch) -> None:
    """Free order with `applies` switched off and no banded fallback: dp.hint must prove and
    match the exhaustive optimum, or fall back with a bound <= the optimum."""
    monkeypatch.setattr(dp, "MAX_STAGE_WORK", 0)
    monkeypatch.setattr(dp_space, "SMALL_BAND", -1)
    proven = 0
    for seed in range(2000, 2160):
        t, M = instance(seed, KINDS[seed % len(KINDS)])
        want = oracle(t, M, "free")
        for objective, regime in COMBOS:
            best = want[objective, regime]
            if best is None:
                continue
            p = Problem(t, M=M, objective=objective, regime=regime, order="free")  # type: ignore[arg-type]
            got = dp.hint(p)
            m = evaluate(p, got.devices, got.cuts)
            assert m.fits and got.objective == objective_key(p, m)
            assert lex_compare(got.objective, best) >= 0
            assert 0 < got.lower_bound <= best[0] * (1 + 1e-9) + 1e-12 or best[0] == 0
            if got.optimal:
                proven += 1
                assert lex_compare(got.objective, best) == 0, (seed, objective, regime, got, best)
    assert proven >= 600


def test_relaxed_reach_bounds_tau_and_its_plans_attain_it() -> None:
    for seed in range(300):
        t, _ = instance(seed, KINDS[seed % len(KINDS)])
        p = Problem(t)
        want = dp.free_tau(p)
        assert want is not None
        got, devices, cuts = relaxed_tau(build_tables(t), device_classes(t, links=False))
        assert got <= want * (1 + 1e-12) or got == want, seed
        if devices:
            m = evaluate(p, devices, cuts)
            assert m.fits and m.tau_max == pytest.approx(want, rel=1e-9), seed


def test_relaxed_reach_counts_the_scarce_class() -> None:
    # uncounted, the one fast device would hold every stage of 2 layers (tau 2); counted, it
    # holds 2 layers and the slow devices the other 4 (1 slow layer alone leaves 5 of 6 covered
    # by 4 devices), so tau* = 6
    t = scarce_fast()
    T, classes = build_tables(t), device_classes(t, links=False)
    got, devices, cuts = relaxed_tau(T, classes)
    assert got == pytest.approx(6.0) and dp.free_tau(Problem(t)) == pytest.approx(6.0)
    assert evaluate(Problem(t), devices, cuts).tau_max == pytest.approx(6.0)


@pytest.mark.parametrize("fine", [True, False])
def test_beyond_every_lattice_equals_the_oracle(monkeypatch: pytest.MonkeyPatch, fine: bool) -> None:
    """No lattice listed at all (tau from the merged-class reach, every later step relaxed):
    proven answers equal the exhaustive optimum and every bound is below it."""
    monkeypatch.setattr(dp, "MAX_TAU_LATTICE", 0)
    monkeypatch.setattr(dp, "MAX_STAGE_WORK", 0)
    if not fine:
        monkeypatch.setattr(dp, "MAX_FINE_LATTICE", 0)
    proven = total = 0
    for seed in range(3000, 3080):
        t, M = instance(seed, KINDS[seed % len(KINDS)])
        want = oracle(t, M, "free")
        for objective, regime in COMBOS:
            best = want[objective, regime]
            if best is None:
                continue
            p = Problem(t, M=M, objective=objective, regime=regime, order="free")  # type: ignore[arg-type]
            got = dp.hint(p)
            total += 1
            m = evaluate(p, got.devices, got.cuts)
            assert m.fits and got.objective == objective_key(p, m)
            assert lex_compare(got.objective, best) >= 0
            assert 0 < got.lower_bound <= best[0] * (1 + 1e-9) + 1e-12 or best[0] == 0
            if got.optimal:
                proven += 1
                assert lex_compare(got.objective, best) == 0, (seed, objective, regime, got, best)
    assert proven >= 0.9 * total


def one_node(seed: int) -> CostTables:
    """Two or three GPU types of two or more devices each on one node (every class may follow
    every class over the same link: the relaxed pass's one-link path)."""
    rng = np.random.default_rng(seed)
    types = int(rng.integers(2, 4))
    type_of = np.repeat(np.arange(types), rng.integers(2, 4, size=types))
    G, L = type_of.size, int(rng.integers(4, 10))
    lat = np.full((G, G), 1e-3 * rng.uniform(0.1, 1))
    np.fill_diagonal(lat, 0.0)
    bw = np.full((G, G), 1e9)
    np.fill_diagonal(bw, np.inf)
    return CostTables(
        cost=(rng.uniform(0.5, 1.5, size=L) / rng.uniform(1, 4, size=types)[:, None])[type_of],
        memory_gb=rng.uniform(0.8, 1.2, size=L), cut_bytes=rng.uniform(1e5, 1e6, size=L),
        capacity_gb=rng.uniform(1.5, 4.0, size=types)[type_of], latency_s=lat, bandwidth_Bps=bw,
        layer_names=tuple(f"l{i}" for i in range(L)), device_names=tuple(f"d{g}" for g in range(G)),
        gpu_names=tuple(f"t{k}" for k in type_of), node_names=("n",) * G,
    )


def test_one_link_path_equals_the_lattice_step() -> None:
    for seed in range(60):
        t = one_node(seed)
        T, lat = build_tables(t), Lattice.build(device_classes(t, links=True))
        assert all(len(c) >= 2 for c in lat.classes)
        tau = dp.free_tau(Problem(t))
        if tau is None or not np.isfinite(tau):
            continue
        for mode, tc, sc in (("max", cap(tau), INF), ("sum", cap(1.5 * tau), INF), ("sum", INF, cap(2 * tau)),
                             ("max", INF, INF)):
            want = lattice_stages(T, lat, mode, tc, sc)[0]
            got, devices, cuts = relaxed_stages(T, lat.classes, mode, tc, sc)
            assert got == pytest.approx(want, rel=1e-12, abs=1e-15) or got == want == INF, (seed, mode)
            if devices:
                m = evaluate(Problem(t, regime="blocking"), devices, cuts)
                sig = m.sigma_max if mode == "max" else sum(m.sigma)
                assert m.fits and sig == pytest.approx(got, rel=1e-9), (seed, mode)


def test_sigma_step_by_merged_reach_equals_the_lattice_step() -> None:
    """On one link the sigma step is a bisected reach (dp.relaxed_tau.relaxed_sigma)."""
    tables = [one_node(seed) for seed in range(60, 120)] + [scarce_fast()]
    certified = 0
    for t in tables:
        T, lat = build_tables(t), Lattice.build(device_classes(t, links=True))
        d = one_link(T, lat.classes)
        assert d is not None
        tau = dp.free_tau(Problem(t))
        if tau is None or not np.isfinite(tau):
            continue
        for tc in (cap(tau), INF):
            want = lattice_stages(T, lat, "max", tc, INF)[0]
            got, devices, cuts = relaxed_sigma(T, [list(c) for c in lat.classes], tc, d)
            assert got <= want * (1 + 1e-9)
            if devices:
                m = evaluate(Problem(t, regime="blocking"), devices, cuts)
                assert m.fits and m.tau_max <= tc and m.sigma_max == pytest.approx(want, rel=1e-9)
                assert got == pytest.approx(want, rel=1e-9)
                certified += 1
    assert certified >= len(tables)


def test_time_limit_in_the_relaxed_route_keeps_a_positive_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    from partitioner import solvers
    from partitioner.errors import SolverError

    monkeypatch.setattr(dp, "MAX_STAGE_WORK", 0)
    monkeypatch.setattr(dp, "MAX_TAU_LATTICE", 0)  # the merged-class reach, then the relaxed steps
    t = one_node(5)
    G, L = 4 * t.G, 4 * t.L
    big = CostTables(  # each device four times over, 4x the layers: a few classes of 8-12 devices
        cost=np.tile(np.repeat(t.cost, 4, axis=0), (1, 4)), memory_gb=np.tile(t.memory_gb, 4),
        cut_bytes=np.tile(t.cut_bytes, 4), capacity_gb=np.repeat(t.capacity_gb, 4) * 2,
        latency_s=np.full((G, G), 1e-4) * (1 - np.eye(G)), bandwidth_Bps=np.where(np.eye(G) > 0, np.inf, 1e9),
        layer_names=tuple(f"l{i}" for i in range(L)), device_names=tuple(f"d{g}" for g in range(G)),
        gpu_names=tuple(np.repeat(t.gpu_names, 4)), node_names=("n",) * G,
    )
    seen = 0
    for limit in (0.01, 0.1, 0.3):
        for objective in ("balanced", "makespan"):
            p = Problem(big, M=8, objective=objective, regime="blocking", order="free", time_limit_s=limit)  # type: ignore[arg-type]
            try:
                got = solvers.solve(p, "auto")
            except SolverError:
                continue
            seen += 1
            assert 0 < got.lower_bound <= got.objective[0] * (1 + 1e-9)
            assert got.optimal == (got.status == "OPTIMAL")
    assert seen >= 2
