"""The planning spine: one PlanRequest, one route() to a Plan or a Deployment, engine facts from
the engine records, and the ReplicaPlanner's hooks."""

from __future__ import annotations

import dataclasses
import math
import typing
from pathlib import Path

import pytest

from partitioner import api
from partitioner.deploy.deployment import Deployment
from partitioner.deploy.replica_result import ReplicaPlanner
from partitioner.errors import InputError
from partitioner.models import load_cluster, load_model
from partitioner.models.engines import engine_ids, resolve_engine
from partitioner.planning.request import PlanRequest, ServeLimits, parse_replicas
from partitioner.planning.routing import Progress, kind, resolve_tp, route
from partitioner.registry import LAUNCH_TARGETS, UNIFORM_TP_ENGINES
from partitioner.result import Plan

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "examples/models/qwen2.5-14b.yaml"
SEED = ROOT / "examples/clusters/seed.yaml"


@pytest.fixture(scope="module")
def inputs():
    return load_model(MODEL), load_cluster(SEED)


def test_api_plan_is_typed_plan_or_deployment():
    assert typing.get_type_hints(api.plan)["return"] == Plan | Deployment


def test_request_is_frozen(inputs):
    req = PlanRequest(*inputs)
    with pytest.raises(dataclasses.FrozenInstanceError):
        req.objective = "serve"  # type: ignore[misc]
    assert req.time_limit_s is None and req.cluster_order == "free"


def test_parse_replicas():
    assert parse_replicas("auto") is None and parse_replicas(" 3 ") == 3 and parse_replicas(2) == 2
    for bad in ("0", "x", -1):
        with pytest.raises(InputError, match="--replicas"):
            parse_replicas(bad)


def test_kind_is_the_one_decision(inputs):
    model, cluster = inputs
    assert kind(PlanRequest(model, cluster)) == "pipeline"
    assert kind(PlanRequest(model, cluster, replicas=None)) == "deployment"
    assert kind(PlanRequest(model, cluster, tp="node")) == "deployment"
    tp_cluster = cluster.model_copy(update={"tp": (1, 2)})  # cluster.yaml with `tp:`
    assert kind(PlanRequest(model, tp_cluster)) == "deployment"
    # llama.cpp cannot run TP inside its layer split: its record turns "auto" into "off"
    tp, notes = resolve_tp(PlanRequest(model, tp_cluster, engine="llamacpp"))
    assert tp == "off" and notes[0].startswith("llama.cpp cannot run tensor parallelism")
    assert kind(PlanRequest(model, tp_cluster, engine="llamacpp")) == "pipeline"
    assert resolve_tp(PlanRequest(model, tp_cluster, engine="vllm")) == ("auto", [])
    assert api.wants_deployment("1", None, cluster) is False and api.wants_deployment("auto", None, cluster) is True


def test_route_equals_the_api_and_the_single_pipeline_steps(inputs):
    model, cluster = inputs
    notes: list[str] = []
    routed = route(PlanRequest(model, cluster), Progress(note=notes.append))
    assert isinstance(routed, Plan)
    direct = api.solve_problem(api.build_problem(model, cluster))
    assert routed.stages == direct.stages and routed.objective_value == direct.objective_value
    assert routed.meta and routed.meta == api.plan(model, cluster).meta
    assert notes == []


def test_route_gives_a_deployment_for_several_replicas(inputs):
    model, cluster = inputs
    got = route(PlanRequest(model, cluster, replicas=None, objective="serve", limits=ServeLimits(max_batch=8)))
    assert isinstance(got, Deployment) and got.replicas
    assert all(p.meta for p in got.replicas)  # each replica carries the plan JSON's input fields
    assert got.tokens_per_s == pytest.approx(sum(p.serving.tokens_per_s for p in got.replicas))


def test_engine_records_hold_the_launch_facts():
    """The record of every launch engine gives its order rule, TP mode and port; the registry's
    name list of one-degree engines agrees with the records."""
    assert set(LAUNCH_TARGETS) <= set(engine_ids())
    uniform = {e for e in engine_ids() if resolve_engine(e).tensor_parallel == "uniform"}
    assert uniform == set(UNIFORM_TP_ENGINES)
    assert resolve_engine("vllm").launch_order == "ray" and resolve_engine("vllm").min_cc == (7, 0)
    assert resolve_engine("trtllm").min_cc == (8, 0) and resolve_engine("sglang").min_cc is None
    assert resolve_engine("llamacpp").tensor_parallel == "none" and resolve_engine("generic").launch_order == "any"
    assert all(resolve_engine(e).serve_port for e in LAUNCH_TARGETS)


def test_exports_read_the_same_minimum_capability():
    from partitioner.export import llamacpp, sglang, trtllm, vllm

    for mod, e in ((vllm, "vllm"), (sglang, "sglang"), (trtllm, "trtllm"), (llamacpp, "llamacpp")):
        assert mod.MIN_CC == resolve_engine(e).min_cc


def test_replica_planner_hooks():
    calls: list[tuple[tuple[int, ...], bool]] = []

    def solve(devices: list[int], quick: bool) -> tuple[object, float, bool]:
        calls.append((tuple(devices), quick))
        return object(), (math.inf if quick else 10.0 * len(devices)), not quick

    rp = ReplicaPlanner(solve)
    full, fast = rp([0, 1]), rp.quick([0, 1, 2])
    assert rp.upper(full) == 20.0 and rp.complete(full)
    assert rp.upper(fast) == math.inf and not rp.complete(fast)
    assert rp.upper(object()) == math.inf  # a plan it did not make: no bound
    only_even = rp.restricted(lambda d: [g for g in d if g % 2 == 0])
    p = only_even.value([0, 1, 2, 3])
    assert calls[-1] == ((0, 2), False) and rp.upper(p) == only_even.upper(p) == 20.0
