"""Plan scoring and serialisation: tiny hand-computed cases (issue 4, theory.md Thm 2/3, Cor 1/4)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from partitioner.errors import InputError
from partitioner.problem import CostTables, Problem, Solution, evaluate, lex_compare, objective_key
from partitioner.result import PLAN_FORMAT, Plan


def tables(tied_gb: float = 0.0) -> CostTables:
    # g0 takes 1 s per layer, g1 2 s; cutting after layer 1 sends 1e9 bytes over a 1 GB/s, 0.5 s link.
    return CostTables(
        cost=np.array([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]]),
        memory_gb=np.array([1.0, 2.0, 3.0]),
        cut_bytes=np.array([0.0, 1e9, 0.0]),
        capacity_gb=np.array([10.0, 4.0]),
        latency_s=np.array([[0.0, 0.5], [0.5, 0.0]]),
        bandwidth_Bps=np.array([[np.inf, 1e9], [1e9, np.inf]]),
        layer_names=("embed", "layer.0", "lm_head"),
        device_names=("fast", "slow"),
        gpu_names=("rtx-3090", "gtx-1070"),
        node_names=("a", "b"),
        layer_kinds=("embed", "decoder", "head"),
        tied_gb=tied_gb,
        model_name="toy",
    )


def plan_for(problem: Problem, devices: tuple[int, ...], cuts: tuple[int, ...]) -> Plan:
    key = objective_key(problem, evaluate(problem, devices, cuts))
    return Plan.from_solution(problem, Solution(devices, cuts, "hand", False, key, 0.0, status="FEASIBLE"))


def test_hand_computed_two_stage_plan() -> None:
    p = plan_for(Problem(tables(), M=4), (0, 1), (0, 2, 3))
    assert p.tau.tolist() == [2.0, 2.0]
    assert p.d.tolist() == [1.5]  # 0.5 s + 1e9 B / 1e9 B/s
    assert p.sigma.tolist() == [3.5, 2.0]
    assert p.T_async == pytest.approx(3 * 2 + 4 + 1.5)  # Thm 2
    assert p.T_block == pytest.approx(3 * 3.5 + 5.5)  # Thm 3
    assert p.T_gpipe == pytest.approx((2 + 4 - 1) * 2)  # Cor 1
    assert p.throughput == pytest.approx(0.5)
    assert p.first_latency == pytest.approx(5.5)
    [weak] = p.violating_links()  # slack of stage 0 is 0 < d = 1.5 (Cor 4)
    assert (weak["from"], weak["to"], weak["slack"], weak["excess"]) == ("fast", "slow", 0.0, 1.5)
    assert [(s.decoder_layers, s.embed, s.head) for s in p.stages] == [(1, True, False), (0, False, True)]


def test_blocking_period_and_memory() -> None:
    p = plan_for(Problem(tables(), M=4, regime="blocking"), (0, 1), (0, 2, 3))
    assert p.period == 3.5 and p.T == p.T_block
    assert [s.memory_gb for s in p.stages] == [3.0, 3.0]
    assert p.feasible


def test_memory_violation_marks_plan_infeasible() -> None:
    p = plan_for(Problem(tables(), M=1), (0, 1), (0, 1, 3))  # slow gets 5 GB > 4 GB
    assert not p.feasible


def test_tied_embeddings_counted_once_on_a_single_stage() -> None:
    problem = Problem(tables(tied_gb=0.5), M=1)
    assert evaluate(problem, (0,), (0, 3)).memory_gb.tolist() == [5.5]
    assert evaluate(problem, (0, 1), (0, 2, 3)).memory_gb.tolist() == [3.0, 3.0]


def test_json_is_deterministic_and_complete() -> None:
    problem = Problem(tables(), M=4)
    a = plan_for(problem, (0, 1), (0, 2, 3)).to_json()
    b = plan_for(problem, (0, 1), (0, 2, 3)).to_json()
    assert a == b
    data = json.loads(a)
    assert data["format"] == PLAN_FORMAT
    for key in ("stages", "tau_max", "sigma_max", "M", "regime", "objective", "T_async", "T_block",
                "T_gpipe", "throughput", "solver", "optimal", "lower_bound"):
        assert key in data
    assert data["stages"][0] | {} == data["stages"][0]
    assert {k: data["stages"][1][k] for k in ("device", "gpu", "start", "end", "tau", "d", "sigma")} == {
        "device": "slow", "gpu": "gtx-1070", "start": 2, "end": 3, "tau": 2.0, "d": 0.0, "sigma": 2.0,
    }


@pytest.mark.parametrize(
    ("devices", "cuts", "match"),
    [
        ((0, 0), (0, 1, 3), "distinct"),
        ((0, 1), (0, 2, 2, 3), "S\\+1 cuts"),
        ((0, 1), (0, 3, 3), "rise strictly"),
        ((0, 5), (0, 1, 3), "distinct indices"),
        ((), (0,), "S >= 1"),
    ],
)
def test_invalid_plans_are_rejected(devices: tuple[int, ...], cuts: tuple[int, ...], match: str) -> None:
    with pytest.raises(InputError, match=match):
        evaluate(Problem(tables()), devices, cuts)


def test_fixed_order_rejects_reordered_devices() -> None:
    with pytest.raises(InputError, match="fixed"):
        evaluate(Problem(tables(), order="fixed"), (1, 0), (0, 1, 3))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"M": 0}, "M must be"), ({"M": True}, "M must be"), ({"regime": "sync"}, "regime"),
     ({"objective": "speed"}, "objective"), ({"order": "any"}, "order")],
)
def test_problem_options_are_validated(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(InputError, match=match):
        Problem(tables(), **kwargs)  # type: ignore[arg-type]


def test_cost_table_shapes_are_validated() -> None:
    with pytest.raises(InputError, match="memory_gb has shape"):
        CostTables(
            cost=np.ones((1, 2)), memory_gb=np.ones(3), cut_bytes=np.zeros(2), capacity_gb=np.ones(1),
            latency_s=np.zeros((1, 1)), bandwidth_Bps=np.full((1, 1), np.inf), layer_names=("a", "b"),
            device_names=("g",), gpu_names=("x",), node_names=("n",),
        )


def test_lex_compare_tolerance() -> None:
    assert lex_compare((1.0, 2.0), (1.0 + 1e-12, 1.0)) == 1
    assert lex_compare((1.0, 2.0), (1.0 + 1e-12, 2.0 - 1e-12)) == 0
    assert lex_compare((1.0,), (1.1,)) == -1
