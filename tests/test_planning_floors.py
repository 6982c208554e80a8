"""Floors of route(): `--replicas auto` >= `--replicas 1` and `--tp auto` >= max(`--tp node`,
`--tp off`) under the same budget, on small stand-ins of Helix's cluster24 (one A100, L4s, T4s)
and cluster42 (multi-GPU machines of several kinds)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import pytest

from partitioner.deploy.deployment import Deployment
from partitioner.models.cluster import ClusterSpec
from partitioner.models.llm import ModelSpec
from partitioner.planning.floors import best_of, floor_requests
from partitioner.planning.request import PlanRequest, ServeLimits
from partitioner.planning.routing import route
from partitioner.result import Plan

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


class _Clock:
    """The clock every Budget and the replica search read (partitioner.solvers.budget.clock):
    still until `expire()`, then each read is a day later, so a limit of an hour set at the start
    never binds before and always binds after (no wall-clock reads, so the same on any load)."""

    def __init__(self) -> None:
        self.t, self.step = 0.0, 0.0

    def __call__(self) -> float:
        self.t += self.step
        return self.t

    def expire(self) -> None:
        self.step = 86_400.0


def _limited(monkeypatch: pytest.MonkeyPatch) -> tuple[_Clock, Callable[[PlanRequest], object]]:
    """(clock, run): `run(request)` routes it under a one-hour --time-limit on the fake clock,
    which expires when its first replica search starts (after the floors)."""
    import partitioner.deploy.replicas as rep
    from partitioner.solvers import budget
    from partitioner.solvers.budget import Budget

    clock = _Clock()
    monkeypatch.setattr(budget, "clock", clock)
    real = rep.search_replicas

    def search_then_expire(*args: object, **kwargs: object) -> object:
        clock.expire()
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(rep, "search_replicas", search_then_expire)

    def run(request: PlanRequest) -> object:
        clock.t, clock.step = 0.0, 0.0
        return route(dataclasses.replace(request, budget=Budget(3600.0)))

    return clock, run


def _stopped_with_a_finite_gap(result: object) -> None:
    assert isinstance(result, Deployment) and not result.optimal and result.stopped == "time_limit"
    assert math.isfinite(result.upper_bound_tokens_per_s)
    assert result.upper_bound_tokens_per_s >= result.tokens_per_s * (1 - 1e-9) and result.gap < 1.0


@pytest.mark.parametrize(("machines", "memory_gb"), [(CLUSTER24_LIKE, 9.0), (CLUSTER42_LIKE, 7.0)])
def test_a_limit_expiring_after_the_floors_never_beats_one_replica(
        machines: list[tuple[str, int]], memory_gb: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """The limit runs out as the replica search starts: `--replicas auto` answers its whole-cluster
    floor (solved first, with the budget `--replicas 1` gets alone), not proven, with a finite
    bound; it is never below `--replicas 1` in the same limit, nor below the unlimited answer."""
    req = PlanRequest(_model(memory_gb), _cluster(machines, [1]), objective="serve", limits=ServeLimits(max_batch=16))
    unlimited = _tps(route(dataclasses.replace(req, replicas=1)))
    _, run = _limited(monkeypatch)
    one = run(dataclasses.replace(req, replicas=1))
    auto = run(dataclasses.replace(req, replicas=None))
    _stopped_with_a_finite_gap(auto)
    assert _tps(auto) >= _tps(one) * (1 - 1e-9) and _tps(one) == pytest.approx(unlimited, rel=1e-12)


def test_tp_auto_under_an_expiring_limit_is_never_below_tp_node_or_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each floor of `--tp auto` (whole cluster, `--tp node`, `--tp off`) is the answer its own
    request gives in the same limit; the answer is the best of them, not proven, gap finite."""
    req = PlanRequest(_model(7.0), _cluster(CLUSTER42_LIKE, [1, 2, 4]), objective="serve", replicas=None,
                      limits=ServeLimits(max_batch=16))
    _, run = _limited(monkeypatch)
    node, off = run(dataclasses.replace(req, tp="node")), run(dataclasses.replace(req, tp="off"))
    auto = run(dataclasses.replace(req, tp="auto"))
    _stopped_with_a_finite_gap(auto)
    assert _tps(auto) >= max(_tps(node), _tps(off)) * (1 - 1e-9)


def test_the_search_reuses_the_whole_cluster_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    """The replica search takes the whole-cluster floor as its whole-cluster replica: no second
    serve search over every device (it took what the floor left, capped at 10 % of the limit)."""
    import partitioner.deploy.serve as serve_mod

    req = PlanRequest(_model(9.0), _cluster(CLUSTER24_LIKE, [1]), objective="serve", replicas=None,
                      limits=ServeLimits(max_batch=16))
    everything = frozenset(range(len(req.cluster.devices)))
    asked: list[frozenset[int]] = []
    real = serve_mod.ServeUnits.rows

    def rows(self: object, devices: list[int]) -> list[int]:
        asked.append(frozenset(devices))
        return real(self, devices)  # type: ignore[arg-type]

    monkeypatch.setattr(serve_mod.ServeUnits, "rows", rows)
    auto = route(req)
    assert isinstance(auto, Deployment) and auto.tokens_per_s > 0
    assert everything not in asked  # --tp auto on one-GPU machines is --tp off: its floor is the pipeline search


def test_the_whole_cluster_floor_bound_caps_the_search_bound() -> None:
    """The pipeline floor's serve bound (tokens/s no plan on every device beats) is a valid bound
    for every replica on a subset of the devices, so the search's bound never exceeds what the
    replicas' own bounds allow; and it is never below the floor's own tokens/s."""
    from partitioner.planning.routing import _serve_upper

    req = PlanRequest(_model(9.0), _cluster(CLUSTER24_LIKE), objective="serve", limits=ServeLimits(max_batch=16))
    one = route(dataclasses.replace(req, replicas=1))
    assert isinstance(one, Plan)
    upper = _serve_upper(one)
    assert math.isfinite(upper) and upper >= _tps(one) * (1 - 1e-12)
    assert upper == pytest.approx(_tps(one)) if one.optimal else upper > _tps(one)
    assert _serve_upper(dataclasses.replace(one, lower_bound=0.0)) == math.inf  # a cut-short search bounds nothing
    auto = route(dataclasses.replace(req, replicas=None))
    assert isinstance(auto, Deployment) and auto.tokens_per_s >= _tps(one) * (1 - 1e-9)
    assert auto.upper_bound_tokens_per_s >= auto.tokens_per_s * (1 - 1e-9)
