"""dp on hand-computed instances, and every error path."""

from __future__ import annotations

import numpy as np
import pytest

from partitioner.errors import InfeasibleError, InputError
from partitioner.problem import CostTables, Problem, evaluate
from partitioner.solvers import dp, get
from partitioner.solvers.dp.tables import device_classes


def two_devices(cap: tuple[float, float] = (10.0, 10.0), lat01: float = 0.5, lat10: float = 0.25,
                tied: float = 0.0, L: int = 4) -> CostTables:
    # L unit-memory layers; device 0 ("fast") takes 1 s per layer, device 1 ("slow") 2 s.
    return CostTables(
        cost=np.array([[1.0] * L, [2.0] * L]),
        memory_gb=np.ones(L),
        cut_bytes=np.zeros(L),
        capacity_gb=np.array(cap),
        latency_s=np.array([[0.0, lat01], [lat10, 0.0]]),
        bandwidth_Bps=np.full((2, 2), np.inf),
        layer_names=tuple(f"l{i}" for i in range(L)),
        device_names=("fast", "slow"),
        gpu_names=("a", "b"),
        node_names=("n", "n"),
        tied_gb=tied,
    )


def test_free_order_balanced_mends_the_slow_link() -> None:
    # tau* = 3: three layers on fast + one on slow (fast alone 4; 2+2 gives 4 on slow).
    # fast->slow: sigma = (3 + 0.5, 2) -> 3.5; slow->fast: sigma = (2 + 0.25, 3) -> 3.
    # T_async(8) = 7 * 3 + (2 + 3) + 0.25 = 26.25.
    sol = dp.solve(Problem(two_devices()))
    assert (sol.devices, sol.cuts) == ((1, 0), (0, 1, 4))
    assert sol.objective == pytest.approx((3.0, 3.0, 26.25))
    assert sol.optimal and sol.solver == "dp" and sol.lower_bound == sol.objective[0]


def test_fixed_order_keeps_listed_order() -> None:
    # Only fast->slow is allowed: (3, 3.5); T_block(8) = 7 * 3.5 + 3.5 + 2 = 30.0.
    p = Problem(two_devices(), order="fixed", regime="blocking")
    sol = dp.solve(p)
    assert (sol.devices, sol.cuts) == ((0, 1), (0, 3, 4))
    assert sol.objective == pytest.approx((3.0, 3.5, 30.0))


def test_makespan_at_M1_prefers_one_device() -> None:
    # M = 1: T = sum tau + sum d; everything on fast (4) beats every split (>= 5.25).
    sol = dp.solve(Problem(two_devices(), M=1, objective="makespan"))
    assert (sol.devices, sol.cuts, sol.objective) == ((0,), (0, 4), (4.0,))


def test_makespan_at_large_M_balances() -> None:
    # M = 100 async: the split slow->fast gives 99 * 3 + 5.25 = 302.25 < 100 * 4 = 400.
    sol = dp.solve(Problem(two_devices(), M=100, objective="makespan"))
    assert sol.objective == pytest.approx((302.25,))


def test_throughput_blocking_minimises_sigma_then_T() -> None:
    sol = dp.solve(Problem(two_devices(), regime="blocking", objective="throughput"))
    assert sol.objective == pytest.approx((3.0, 7 * 3.0 + 5.25))


def test_memory_forces_two_by_two() -> None:
    # Capacity 2 GB each: only 2 + 2 fits; slow holds two layers: tau = 4.
    sol = dp.solve(Problem(two_devices(cap=(2.0, 2.0))))
    assert sorted(np.diff(sol.cuts).tolist()) == [2, 2] and sol.objective[0] == 4.0
    assert evaluate(Problem(two_devices(cap=(2.0, 2.0))), sol.devices, sol.cuts).fits


def test_tied_embedding_lets_one_device_hold_the_model() -> None:
    # 2 layers of 1 GB with 0.5 GB tied: a single stage needs 1.5 GB, which fast has.
    t = two_devices(cap=(1.5, 0.0), tied=0.5, L=2)
    sol = dp.solve(Problem(t, objective="makespan", M=1))
    assert (sol.devices, sol.cuts) == ((0,), (0, 2))


def test_equal_devices_form_one_class() -> None:
    t = two_devices()
    t3 = CostTables(
        cost=np.vstack([t.cost, t.cost[:1]]), memory_gb=t.memory_gb, cut_bytes=t.cut_bytes,
        capacity_gb=np.array([10.0, 10.0, 10.0]), latency_s=np.full((3, 3), 0.1) - 0.1 * np.eye(3),
        bandwidth_Bps=np.full((3, 3), np.inf), layer_names=t.layer_names,
        device_names=("a", "b", "c"), gpu_names=("x", "y", "x"), node_names=("n",) * 3,
    )
    assert device_classes(t3, links=True) == [[0, 2], [1]]
    assert device_classes(two_devices(), links=True) == [[0], [1]]


def test_deterministic() -> None:
    p = Problem(two_devices(), objective="makespan", M=4)
    assert dp.solve(p).devices == dp.solve(p).devices and dp.solve(p).cuts == dp.solve(p).cuts


def test_auto_uses_dp_when_it_applies() -> None:
    assert get("auto")(Problem(two_devices())).solver == "dp"


def test_infeasible_says_what_is_needed() -> None:
    with pytest.raises(InfeasibleError, match="needs 4.00 GB but the cluster has 2.00 GB"):
        dp.solve(Problem(two_devices(cap=(1.0, 1.0))))


def test_infeasible_layer_too_big() -> None:
    with pytest.raises(InfeasibleError, match="layer 'l0' needs 1.00 GB but the largest device"):
        dp.solve(Problem(two_devices(cap=(0.5, 0.5)), order="fixed"))


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("cost", np.array([[1.0, -1.0, 1.0, 1.0], [2.0] * 4]), r"cost\[0, 1\] must be finite and >= 0 \(got -1.0\)"),
        ("cost", np.array([[1.0, np.nan, 1.0, 1.0], [2.0] * 4]), r"cost\[0, 1\] must be finite"),
        ("latency_s", np.array([[0.0, -0.5], [0.0, 0.0]]), r"latency_s\[0, 1\] must be finite and >= 0"),
        ("bandwidth_Bps", np.array([[np.inf, 0.0], [1.0, np.inf]]), r"bandwidth_Bps\[0, 1\] must be > 0 \(got 0.0\)"),
    ],
)
def test_invalid_numbers(field: str, value: np.ndarray, match: str) -> None:
    t = two_devices()
    kw = {f: getattr(t, f) for f in ("cost", "memory_gb", "cut_bytes", "capacity_gb", "latency_s",
                                    "bandwidth_Bps", "layer_names", "device_names", "gpu_names", "node_names")}
    kw[field] = value
    with pytest.raises(InputError, match=match):
        dp.solve(Problem(CostTables(**kw)))


def test_refuses_instances_outside_applies(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dp, "MAX_STAGE_WORK", 10)
    p = Problem(two_devices())
    assert not dp.applies(p) and dp.applies(Problem(two_devices(), order="fixed"))
    with pytest.raises(InputError, match="dp does not apply to this instance"):
        dp.solve(p)


def test_hint_when_dp_does_not_apply(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dp, "MAX_STAGE_WORK", 10)
    monkeypatch.setattr(dp, "_relaxed", lambda problem, budget: (None, None))  # no relaxed route either
    p = Problem(two_devices())
    h = dp.hint(p)
    # Listed order only: fast -> slow, (3, 3.5, 26.5). The reachability DP's tau* plan is
    # slow -> fast, (3, 3, 26.25), which is better, so it is the hint; tau* = 3 bounds it.
    assert (h.devices, h.cuts) == ((1, 0), (0, 1, 4))
    assert h.objective == pytest.approx((3.0, 3.0, 26.25))
    assert not h.optimal and h.status == "FEASIBLE" and h.lower_bound == 3.0
    assert dp.free_tau(p) == 3.0


def test_hint_is_the_optimum_when_dp_applies() -> None:
    assert dp.hint(Problem(two_devices())).optimal
