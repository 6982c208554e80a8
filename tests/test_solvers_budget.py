"""One wall-clock budget for a whole solve: --time-limit, Ctrl-C and never-trivial bounds."""

from __future__ import annotations

import _thread
import math
import threading

import numpy as np
import pytest

from partitioner.errors import SolverError
from partitioner.problem import CostTables, Problem, evaluate
from partitioner.solvers import cpsat, dp, solve
from partitioner.solvers.budget import Budget, TimeUp


def cluster(L: int, G: int, types: int, distinct: bool, seed: int = 0) -> CostTables:
    r = np.random.default_rng(seed)
    type_of = np.sort(np.arange(G) % types)
    speed = np.exp(r.uniform(0, np.log(8), types))
    cost = (r.uniform(0.5, 1.5, L) * 1e-3 / speed[:, None] * r.uniform(0.8, 1.25, (types, L)))[type_of]
    mem = r.uniform(0.8, 1.2, L)
    lat = np.full((G, G), 10e-6) * (r.uniform(0.5, 2, (G, G)) if distinct else 1.0)
    bw = np.full((G, G), 25e9) * (r.uniform(0.5, 2, (G, G)) if distinct else 1.0)
    np.fill_diagonal(lat, 0.0)
    np.fill_diagonal(bw, np.inf)
    return CostTables(
        cost=cost, memory_gb=mem, cut_bytes=np.full(L, 1.3e5), capacity_gb=(r.uniform(2, 3, types) * mem.sum() / G)[type_of],
        latency_s=lat, bandwidth_Bps=bw, layer_names=tuple(f"l{i}" for i in range(L)),
        device_names=tuple(f"g{g}" for g in range(G)), gpu_names=tuple(f"t{x}" for x in type_of),
        node_names=("n",) * G,
    )


class FakeClock:
    """A clock that advances `step` seconds per read: a solve's time is the checks it makes, so the
    test does not depend on how loaded the machine is. `after` counts reads past `deadline`."""

    def __init__(self, step: float) -> None:
        self.now, self.step, self.deadline, self.after = 0.0, step, math.inf, 0

    def __call__(self) -> float:
        self.now += self.step
        self.after += self.now > self.deadline
        return self.now


def test_time_limit_bounds_the_whole_auto_solve_and_keeps_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    from partitioner.solvers import budget as budget_mod

    fake = FakeClock(step=0.01)
    fake.deadline = 2.0 + fake.step  # Budget starts at the first read
    monkeypatch.setattr(budget_mod, "clock", fake)
    p = Problem(cluster(48, 24, 2, distinct=True), objective="balanced", time_limit_s=2.0)
    assert not dp._lattice_applies(p)  # beyond the lattice: link-distinct subsets search, time-limited
    s = solve(p, "auto")
    assert fake.now > fake.deadline  # the limit was reached (200 budget reads)...
    assert fake.after <= 64  # ...and every phase stopped within a few more reads
    assert evaluate(p, s.devices, s.cuts).fits
    tau_star = dp.free_tau(p)
    assert tau_star is not None and s.lower_bound >= tau_star * (1 - 1e-9)  # the DP's tau* is kept
    assert s.objective[0] == pytest.approx(tau_star, rel=1e-9)  # and its plan: tau_max is optimal


def test_dp_past_its_deadline_returns_the_best_plan_so_far(monkeypatch: pytest.MonkeyPatch) -> None:
    p = Problem(cluster(64, 16, 4, distinct=False), objective="balanced")
    calls = {"n": 0}

    def check_after_tau(self: Budget) -> None:
        calls["n"] += 1
        if calls["n"] > 1:
            raise TimeUp

    monkeypatch.setattr(Budget, "check", check_after_tau)
    s = dp.solve(p)
    assert not s.optimal and s.status == "TIME_LIMIT"
    assert s.objective[0] == pytest.approx(dp.free_tau(p), rel=1e-12) and s.lower_bound == s.objective[0]


def test_ctrl_c_in_dp_returns_the_best_plan_so_far(monkeypatch: pytest.MonkeyPatch) -> None:
    p = Problem(cluster(64, 16, 4, distinct=False), objective="makespan")
    calls = {"n": 0}

    def interrupt(self: Budget) -> None:
        calls["n"] += 1
        if calls["n"] > 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(Budget, "check", interrupt)
    s = dp.solve(p)
    assert s.status == "INTERRUPTED" and not s.optimal
    assert 0 < s.lower_bound <= s.objective[0]


@pytest.mark.parametrize("checks", [1, 3, 10])
def test_ctrl_c_in_cpsat_returns_the_best_plan_so_far(checks: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C lands at the `checks`-th budget check: in the DP seed phase (1, 3) or later. The
    plan so far keeps a positive bound wherever it lands (it was 0.0 in the seed phase)."""
    p = Problem(cluster(60, 10, 10, distinct=True), objective="makespan", time_limit_s=60)
    calls = {"n": 0}
    real = Budget.check

    def interrupt(self: Budget) -> None:
        calls["n"] += 1
        if calls["n"] == checks:
            raise KeyboardInterrupt
        real(self)

    monkeypatch.setattr(Budget, "check", interrupt)
    try:
        s = cpsat.solve(p)
    except KeyboardInterrupt:  # before any plan was known: the CLI reports that, nothing to check
        assert checks == 1
        return
    assert s.status in ("INTERRUPTED", "OPTIMAL")
    assert evaluate(p, s.devices, s.cuts).fits and 0 < s.lower_bound <= s.objective[0]


def test_ctrl_c_right_after_the_dp_seed_keeps_a_positive_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """The race of a loaded CI box: the seed offered its plan but the interrupt came before any
    phase recorded a bound (here: while the CP-SAT model is built). It reported lower_bound 0.0."""
    from partitioner.solvers.cpsat import model as cpmodel

    def interrupted(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cpmodel, "build", interrupted)
    p = Problem(cluster(60, 10, 10, distinct=True), objective="makespan", time_limit_s=60)
    s = cpsat.solve(p)
    assert s.status == "INTERRUPTED" and evaluate(p, s.devices, s.cuts).fits
    assert 0 < s.lower_bound <= s.objective[0]


def test_ctrl_c_in_a_cpsat_phase_returns_the_best_plan_so_far(monkeypatch: pytest.MonkeyPatch) -> None:
    """A real SIGINT during CP-SAT's own search (it runs in a worker thread; partitioner.solvers.
    cpsat.search stops it): sent 0.2 s after the first phase starts, however long the seed took."""
    import partitioner.solvers.cpsat as cpsat_mod

    real_run = cpsat_mod.run
    timers: list[threading.Timer] = []

    def run_then_interrupt(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        if not timers:
            timers.append(threading.Timer(0.2, _thread.interrupt_main))
            timers[0].start()
        return real_run(*args, **kwargs)

    monkeypatch.setattr(cpsat_mod, "run", run_then_interrupt)
    p = Problem(cluster(60, 10, 10, distinct=True), objective="makespan", time_limit_s=60)
    try:
        s = cpsat.solve(p)
    finally:
        for t in timers:
            t.cancel()
    assert timers and s.status in ("INTERRUPTED", "OPTIMAL")
    assert evaluate(p, s.devices, s.cuts).fits and 0 < s.lower_bound <= s.objective[0]


@pytest.mark.parametrize("objective", ["balanced", "throughput", "makespan"])
def test_bounds_are_never_zero_for_a_positive_objective(objective: str) -> None:
    p = Problem(cluster(40, 12, 12, distinct=True), objective=objective, time_limit_s=1.0)  # type: ignore[arg-type]
    found = [cpsat.solve(p), solve(p, "auto")]
    try:
        found.append(cpsat.solve(p, use_dp=False))  # CP-SAT alone may find nothing in 1 s
    except SolverError as err:
        assert "no plan found within the time limit" in str(err)
    for s in found:
        assert s.objective[0] > 0 and s.lower_bound > 0.5 * s.objective[0]


def test_score_evaluates_each_plan_once_and_keys_on_tables_M_and_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    from partitioner.solvers import budget as budget_mod

    calls = []

    def counted(problem: Problem, devices: tuple[int, ...], cuts: tuple[int, ...]):  # type: ignore[no-untyped-def]
        calls.append((devices, cuts))
        return evaluate(problem, devices, cuts)

    monkeypatch.setattr(budget_mod, "evaluate", counted)
    p = Problem(cluster(6, 3, 2, distinct=False), M=4)
    b = Budget(None)
    first = b.score(p, (0, 1), (0, 3, 6))
    assert b.score(p, (0, 1), (0, 3, 6)) is first and len(calls) == 1
    b.offer(p, (0, 1), (0, 3, 6))  # offer reuses it
    assert len(calls) == 1
    other_M = b.score(dataclasses.replace(p, M=9), (0, 1), (0, 3, 6))
    assert len(calls) == 2 and other_M.T_async != first.T_async
    assert b.score(p, (1, 0), (0, 3, 6)) is not first and len(calls) == 3
    from partitioner.errors import InputError

    with pytest.raises(InputError, match="not in listed order"):  # the fixed order's plan check still runs
        b.score(dataclasses.replace(p, order="fixed"), (1, 0), (0, 3, 6))
    for M in range(10, 10 + budget_mod.SCORED):  # the oldest entries give way
        b.score(dataclasses.replace(p, M=M), (0, 1), (0, 3, 6))
    assert len(b._scored) <= budget_mod.SCORED
    n = len(calls)
    b.score(p, (0, 1), (0, 3, 6))
    assert len(calls) == n + 1  # evicted, so scored again
