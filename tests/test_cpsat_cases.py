"""cpsat: tiny hand-computed plans, integer ticks, symmetry classes and every error path."""

from __future__ import annotations

import math

import numpy as np
import pytest

from partitioner.errors import InfeasibleError, InputError, SolverError
from partitioner.problem import CostTables, Problem, evaluate, objective_key
from partitioner.solvers import cpsat
from partitioner.solvers.cpsat import model as cpmodel
from partitioner.solvers.cpsat.ticks import build_ticks, plan_ticks, time_scale, to_ticks

INF = float("inf")


def tables(
    cost: list[list[float]],
    memory: list[float],
    capacity: list[float],
    latency: float | list[list[float]] = 0.0,
    bandwidth: float | list[list[float]] = INF,
    cut_bytes: list[float] | None = None,
    tied_gb: float = 0.0,
) -> CostTables:
    c = np.array(cost, dtype=float)
    G, L = c.shape
    return CostTables(
        cost=c,
        memory_gb=np.array(memory, dtype=float),
        cut_bytes=np.array(cut_bytes if cut_bytes is not None else [0.0] * L, dtype=float),
        capacity_gb=np.array(capacity, dtype=float),
        latency_s=np.broadcast_to(np.array(latency, dtype=float), (G, G)).copy(),
        bandwidth_Bps=np.broadcast_to(np.array(bandwidth, dtype=float), (G, G)).copy(),
        layer_names=tuple(f"layer{i}" for i in range(L)),
        device_names=tuple(f"dev{g}" for g in range(G)),
        gpu_names=("gpu",) * G,
        node_names=("node",) * G,
        tied_gb=tied_gb,
    )


def test_one_device_holds_everything() -> None:
    # tau = 1 + 2 + 3 = 6; no link; T_async(M=2) = 1*6 + 6 = 12 (Thm 2)
    p = Problem(tables([[1.0, 2.0, 3.0]], [1, 1, 1], [10.0]), M=2)
    s = cpsat.solve(p)
    assert (s.devices, s.cuts) == ((0,), (0, 3))
    assert s.objective == pytest.approx((6.0, 6.0, 12.0))
    assert s.optimal and s.status == "OPTIMAL" and s.solver == "cpsat"


@pytest.mark.parametrize(
    ("regime", "T"),
    [("async", 3 * 1.0 + 2.0 + 0.5), ("blocking", 3 * 1.5 + 2.5)],  # Thm 2 / Thm 3
)
def test_two_devices_one_layer_each(regime: str, T: float) -> None:
    # memory allows one layer per device; device 0 is fast on layer 0, device 1 on layer 1;
    # d = alpha = 0.5 (infinite bandwidth), so sigma = (1.5, 1)
    t = tables([[1.0, 3.0], [3.0, 1.0]], [1, 1], [1.0, 1.0], latency=0.5)
    s = cpsat.solve(Problem(t, M=4, regime=regime))  # type: ignore[arg-type]
    assert (s.devices, s.cuts) == ((0, 1), (0, 1, 2))
    assert s.objective == pytest.approx((1.0, 1.5, T))


def test_fixed_order_keeps_listed_order() -> None:
    t = tables([[5.0, 1.0], [1.0, 5.0]], [1, 1], [1.0, 1.0])
    free = cpsat.solve(Problem(t, order="free"))
    fixed = cpsat.solve(Problem(t, order="fixed"))
    assert free.devices == (1, 0) and free.objective[0] == pytest.approx(1.0)
    assert fixed.devices == (0, 1) and fixed.objective[0] == pytest.approx(5.0)


def test_cut_goes_where_bytes_are_small() -> None:
    # equal devices and compute; cutting after layer 0 sends 8 bytes, after layer 1 only 2
    t = tables([[1.0, 1.0, 1.0]] * 2, [1, 1, 1], [2.0, 2.0], bandwidth=1.0, cut_bytes=[8.0, 2.0, 0.0])
    s = cpsat.solve(Problem(t, objective="makespan", M=1))
    # T_async(M=1) = sum tau + d = 3 + 2
    assert s.cuts == (0, 2, 3) and s.objective == pytest.approx((5.0,))


def test_tied_embedding_saving_only_for_the_whole_model() -> None:
    # [0,3) needs 1 + 1.2 + 0.1 - 0.5 = 1.8 <= 2 but [0,2) needs 2.2 > 2: the only plan is the
    # whole model on device 0 (device 1 can hold layer 2 only, which would leave [0,2) on device 0)
    t = tables([[1.0, 1.0, 1.0], [1.0, 1.0, 0.1]], [1.0, 1.2, 0.1], [2.0, 0.2], tied_gb=0.5)
    s = cpsat.solve(Problem(t))
    assert (s.devices, s.cuts) == ((0,), (0, 3))
    assert evaluate(Problem(t), s.devices, s.cuts).fits


def test_objective_is_recomputed_from_the_plan() -> None:
    t = tables([[0.1, 0.2, 0.3], [0.3, 0.1, 0.2]], [1, 1, 1], [2.0, 2.0], latency=0.01)
    p = Problem(t, M=3, regime="blocking")
    s = cpsat.solve(p)
    assert s.objective == objective_key(p, evaluate(p, s.devices, s.cuts))
    assert s.lower_bound <= s.objective[0]
    assert s.gap == pytest.approx(0.0, abs=1e-6)  # bound is lowered by the rounding slack
    assert dict(s.stats)["phases"] == 3.0 and dict(s.stats)["wall_time"] >= 0


def test_progress_callback_sees_incumbents() -> None:
    t = tables([[1.0, 2.0, 3.0, 1.0], [2.0, 1.0, 1.0, 3.0], [1.5] * 4], [1] * 4, [2.0, 2.0, 2.0])
    seen: list[tuple[float, float, float]] = []
    s = cpsat.solve(Problem(t, objective="makespan"), progress=lambda a, b, c: seen.append((a, b, c)))
    assert seen
    assert all(bound <= inc and elapsed >= 0 for inc, bound, elapsed in seen)
    assert seen[-1][0] == pytest.approx(s.objective[0], rel=1e-9)


def test_hint_is_accepted_and_same_input_same_plan() -> None:
    t = tables([[1.0, 2.0, 3.0, 1.0], [2.0, 1.0, 1.0, 3.0], [2.0, 1.0, 1.0, 3.0]], [1] * 4, [2.0] * 3)
    p = Problem(t)
    first = cpsat.solve(p, hint=((2, 0), (0, 2, 4)))
    second = cpsat.solve(p)
    assert (first.devices, first.cuts, first.objective) == (second.devices, second.cuts, second.objective)


def test_bad_hint_is_rejected() -> None:
    p = Problem(tables([[1.0, 1.0]] * 2, [1, 1], [2.0, 2.0]))
    with pytest.raises(InputError, match="cuts must rise"):
        cpsat.solve(p, hint=((0, 1), (0, 2, 2)))


def test_memory_that_cannot_fit_is_infeasible() -> None:
    p = Problem(tables([[1.0, 1.0]] * 2, [3.0, 3.0], [4.0, 2.0]))
    with pytest.raises(InfeasibleError, match="no split|needs"):
        cpsat.solve(p)


def test_layer_bigger_than_every_device_is_infeasible() -> None:
    p = Problem(tables([[1.0, 1.0]] * 2, [1.0, 9.0], [4.0, 4.0]))
    with pytest.raises(InfeasibleError, match="layer 'layer1' needs 9.00 GB"):
        cpsat.solve(p)


def test_negative_time_is_rejected() -> None:
    p = Problem(tables([[1.0, -1.0]], [1, 1], [4.0]))
    with pytest.raises(InputError, match=r"cost\[0, 1\] = -1.0"):
        cpsat.solve(p)


def _hard(time_limit_s: float) -> Problem:
    r = np.random.default_rng(7)
    G, L = 8, 40
    t = tables(r.uniform(0.5, 2.0, (G, L)).tolist(), r.uniform(1, 2, L).tolist(), r.uniform(8, 20, G).tolist(),
               latency=r.uniform(0, 0.1, (G, G)).tolist(), bandwidth=1e9, cut_bytes=[1e8] * L)
    return Problem(t, objective="makespan", time_limit_s=time_limit_s)


def test_tiny_time_limit_returns_a_plan_or_says_why() -> None:
    p = _hard(0.05)
    try:
        s = cpsat.solve(p)
    except SolverError as err:
        assert "no plan found within the time limit" in str(err)
    else:
        assert evaluate(p, s.devices, s.cuts).fits and s.lower_bound <= s.objective[0]


def test_no_plan_in_time_raises_solver_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpsat, "_dp_plan", lambda problem, budget=None: None)
    monkeypatch.setattr(cpsat, "phase_limit", lambda *args: 1e-9)
    with pytest.raises(SolverError, match=r"no plan found within the time limit .*G=8, L=40"):
        cpsat.solve(_hard(1.0))


def test_time_scale_is_a_power_of_two_with_headroom() -> None:
    k = time_scale(stage_seconds=3.0, total_seconds=30.0)
    assert math.log2(k) == int(math.log2(k))
    assert 2.0**39 < 3.0 * k <= 2.0**40
    assert time_scale(1.0, 1e20) * 1e20 <= 2.0**50
    assert to_ticks(np.array([0.5, 1.25]), 4.0).tolist() == [2, 5]


def test_plan_ticks_match_evaluate_within_slack() -> None:
    t = tables([[0.1, 0.2, 0.3], [0.3, 0.1, 0.2]], [1, 1, 1], [2.0, 2.0], latency=0.01, bandwidth=3.0,
               cut_bytes=[0.1, 0.2, 0.3])
    p = Problem(t, M=5, regime="blocking")
    ticks = build_ticks(p)
    got = plan_ticks(ticks, "blocking", (1, 0), (0, 1, 3))
    m = evaluate(p, (1, 0), (0, 1, 3))
    for name, exact in (("tau", m.tau_max), ("sigma", m.sigma_max), ("T", m.T_block)):
        assert abs(got[name] - exact * ticks.scale) <= ticks.slack(name)


def test_interchangeable_devices_and_canonical_plans() -> None:
    t = tables([[1.0, 2.0], [2.0, 1.0], [1.0, 2.0]], [1, 1], [2.0, 3.0, 2.0])
    p = Problem(t)
    assert cpmodel.device_classes(p) == [[0, 2], [1]]
    assert cpmodel.canonical(p, (2, 1, 0)) == (0, 1, 2)
    assert cpmodel.canonical(p, (1, 2)) == (1, 0)
    assert cpmodel.canonical(Problem(t, order="fixed"), (1, 2)) == (1, 2)


def test_asymmetric_links_break_interchangeability() -> None:
    lat = [[0.0, 0.1, 0.2], [0.1, 0.0, 0.1], [0.3, 0.1, 0.0]]
    t = tables([[1.0, 2.0]] * 3, [1, 1], [2.0] * 3, latency=lat)
    assert cpmodel.device_classes(Problem(t)) == [[0, 1], [2]] or cpmodel.device_classes(Problem(t)) != [[0, 1, 2]]
