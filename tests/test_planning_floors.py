"""Floors of route(): `--replicas auto` >= `--replicas 1` and `--tp auto` >= max(`--tp node`,
`--tp off`) under the same budget, on small stand-ins of Helix's cluster24 (one A100, L4s, T4s)
and cluster42 (multi-GPU machines of several kinds)."""

from __future__ import annotations

import dataclasses
import math

import pytest

from partitioner.deploy.deployment import Deployment
from partitioner.models.cluster import ClusterSpec
from partitioner.models.llm import ModelSpec
from partitioner.planning.floors import best_of, floor_requests
from partitioner.planning.request import PlanRequest, ServeLimits
from partitioner.planning.routing import route

BASE = {"a100-40gb": 1.4e-3, "l4": 7.0e-3, "t4": 7.5e-3}
LINKS = {"intra_node": "pcie4", "inter_node": {"latency_ms": 1.0, "bandwidth_gb_s": 0.125}}


def _model(memory_gb: float, L: int = 6) -> ModelSpec:
    layers = [{"name": "layer", "repeat": L, "cost": dict(BASE), "memory_gb": memory_gb, "out_bytes": 262144,
               "kv_bytes_per_token": 4096}]
    return ModelSpec.model_validate({"name": "m", "layers": layers,
                                     "workload": {"batch": 8, "in_flight": 2, "context": 1024}})


def _cluster(machines: list[tuple[str, int]], tp: list[int] | None = None) -> ClusterSpec:
    devices = [{"name": f"{gpu}-{m}-{i}", "gpu": gpu, "node": f"m{m}"}
               for m, (gpu, n) in enumerate(machines) for i in range(n)]
    return ClusterSpec.model_validate({"devices": devices, "links": LINKS, **({"tp": tp} if tp else {})})


def _tps(result: object) -> float:
    if isinstance(result, Deployment):
        return result.tokens_per_s
    return float(result.serving.tokens_per_s)  # type: ignore[attr-defined]


CLUSTER24_LIKE = [("a100-40gb", 1), ("l4", 1), ("l4", 1), ("t4", 1), ("t4", 1)]
CLUSTER42_LIKE = [("l4", 2), ("t4", 4), ("t4", 2), ("a100-40gb", 1)]


@pytest.mark.parametrize(("machines", "memory_gb"), [(CLUSTER24_LIKE, 9.0), (CLUSTER42_LIKE, 7.0)])
def test_replicas_auto_is_never_below_one_replica(machines: list[tuple[str, int]], memory_gb: float) -> None:
    req = PlanRequest(_model(memory_gb), _cluster(machines, [1]), objective="serve", limits=ServeLimits(max_batch=16))
    auto = route(dataclasses.replace(req, replicas=None))
    one = route(dataclasses.replace(req, replicas=1))
    assert isinstance(auto, Deployment) and _tps(auto) >= _tps(one) * (1 - 1e-9)
    assert auto.upper_bound_tokens_per_s >= _tps(auto) * (1 - 1e-9)  # a bound that holds, and finite
    assert math.isfinite(auto.upper_bound_tokens_per_s)


def test_tp_auto_is_never_below_tp_node_or_off() -> None:
    req = PlanRequest(_model(7.0), _cluster(CLUSTER42_LIKE, [1, 2, 4]), objective="serve",
                      limits=ServeLimits(max_batch=16))
    auto = route(dataclasses.replace(req, tp="auto"))
    node = route(dataclasses.replace(req, tp="node"))
    off = route(dataclasses.replace(req, tp="off"))
    assert _tps(auto) >= max(_tps(node), _tps(off)) * (1 - 1e-9)


def test_floor_requests_follow_the_search_space() -> None:
    req = PlanRequest(_model(7.0), _cluster(CLUSTER42_LIKE), replicas=None)
    assert [label for label, _ in floor_requests(req, "auto")] == ["--replicas 1", "--tp node", "--tp off"]
    assert [label for label, _ in floor_requests(req, "off")] == ["--replicas 1"]
    single = PlanRequest(_model(7.0), _cluster(CLUSTER24_LIKE), replicas=None)
    assert [label for label, _ in floor_requests(single, "auto")] == ["--replicas 1", "--tp off"]  # no multi-GPU machine


def test_best_of_keeps_the_better_floor_and_the_search_bound() -> None:
    req = PlanRequest(_model(9.0), _cluster(CLUSTER24_LIKE, [1]), objective="serve", limits=ServeLimits(max_batch=16))
    one = route(dataclasses.replace(req, replicas=1))
    weak = Deployment(replicas=(), unused=(), optimal=False, upper_bound_tokens_per_s=10 * _tps(one))
    got = best_of(weak, [("--replicas 1", one)], serve=True, cluster=req.cluster)
    assert isinstance(got, Deployment) and got.replicas == (one,)
    assert got.upper_bound_tokens_per_s == 10 * _tps(one) and not got.optimal
    assert any("--replicas 1 plan is better" in n for n in got.notes)
    strong = dataclasses.replace(weak, upper_bound_tokens_per_s=_tps(one))
    assert best_of(strong, [("--replicas 1", one)], serve=True, cluster=req.cluster).optimal == one.optimal
    assert best_of(got, [("--replicas 1", one)], serve=True, cluster=req.cluster) is got  # not better: unchanged


def test_a_search_stopped_after_its_floors_returns_the_best_floor_with_a_finite_bound(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The replica search runs out of time after the floors: the answer is the best floor as a
    deployment, not proven, with the fluid bound (finite, and above the answer)."""
    import partitioner.deploy.replicas as rep
    from partitioner.errors import SolverError

    req = PlanRequest(_model(9.0), _cluster(CLUSTER24_LIKE, [1]), objective="serve", limits=ServeLimits(max_batch=16))
    one = route(dataclasses.replace(req, replicas=1))

    def stopped(*args: object, **kwargs: object) -> None:
        raise SolverError("not proven: the search stopped (time_limit) before a replica was solved")

    monkeypatch.setattr(rep, "search_replicas", stopped)
    got = route(dataclasses.replace(req, replicas=None))
    assert isinstance(got, Deployment) and not got.optimal and got.stopped == "time_limit"
    assert got.tokens_per_s == pytest.approx(_tps(one))
    assert math.isfinite(got.upper_bound_tokens_per_s) and got.upper_bound_tokens_per_s >= got.tokens_per_s
