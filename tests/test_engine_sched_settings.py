"""The engine's scheduling settings reach the scheduler: `async_scheduling` and a user's
`max_num_seqs` (vLLM) / `max_running_requests` (SGLang) from `engine:` in cluster.yaml or the
workload set the batch queue, cap the batch per micro-batch at max_num_seqs // PP, bound the
request mix's running requests and the export's --max-num-seqs (hand-computed cases)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from partitioner.serving.engine_sched import EngineSchedule, batch_cap, schedule_from_settings, schedule_of

EX = Path(__file__).resolve().parents[1] / "examples"
EVEN = (0, 11, 21, 31, 41, 51, 61, 71, 82)  # 8 stages of Llama-3-70B (80 decoders + embed + head)


def test_only_the_users_flags_cap_the_batch() -> None:
    """An engine default (max_num_seqs 256 in the settings) does not cap the plan: its export
    sets the flag to B·K. A user's value does: max_num_seqs 100 over PP 8 packs 12 each."""

    class Settings:
        async_scheduling = True

    sched = schedule_from_settings("vllm", Settings(), {"max_num_seqs": 100}, 2048)
    assert sched == EngineSchedule("vllm", async_scheduling=True, max_num_seqs=100, token_budget=2048)
    assert batch_cap(sched, 8) == 12 and batch_cap(sched, 1) == 100 and batch_cap(sched, 200) == 1
    assert batch_cap(schedule_from_settings("vllm", Settings(), {}, 2048), 8) is None
    # SGLang: max_running_requests // pp_size per micro-batch (pp_max_micro_batch_size)
    sgl = schedule_from_settings("sglang", None, {"max_running_requests": 64})
    assert batch_cap(sgl, 4) == 16 and not sgl.async_scheduling
    # generic leaves B free whatever is written
    assert batch_cap(EngineSchedule("generic", max_num_seqs=4), 2) is None


def _tables(engine: dict[str, Any], batch: int, where: str = "cluster", **mix: Any) -> Any:
    from partitioner.costs import build_tables
    from partitioner.models import ClusterSpec, load_cluster, load_model

    m = load_model(EX / "models" / "llama-3-70b-fp8.yaml")
    cluster = load_cluster(EX / "clusters" / "l4x8.yaml")
    update: dict[str, Any] = {"batch": batch, "in_flight": 1, **mix}
    if where == "workload":
        update["engine"] = engine
    else:
        cluster = ClusterSpec.model_validate({**cluster.model_dump(exclude_none=True), "engine": engine})
    wl = type(m.workload).model_validate({**m.workload.model_dump(exclude_none=True), **update})
    return build_tables(m.model_copy(update={"workload": wl}), cluster)


def _plan(t: Any) -> Any:
    from partitioner.problem import Problem, Solution, evaluate, objective_key
    from partitioner.result import Plan

    p = Problem(t, M=1)
    key = objective_key(p, evaluate(p, tuple(range(8)), EVEN))
    return Plan.from_solution(p, Solution(tuple(range(8)), EVEN, "dp", True, key, key[0]))


@pytest.mark.parametrize("where", ["cluster", "workload"])
def test_settings_reach_the_plan_serving(where: str) -> None:
    """8×L4, even split over PP 8, engine {vllm, async_scheduling, max_num_seqs: 64}: the batch
    queue is PP + 1 = 9 (VllmConfig.max_concurrent_batches, V2 runner), the request groups PP = 8
    (serving.in_flight), batch 8 = 64 // 8 packs exactly; batch 12 > 8 is flagged."""
    engine = {"name": "vllm", "async_scheduling": True, "max_num_seqs": 64}
    t = _tables(engine, 8, where)
    assert schedule_of(t) == EngineSchedule("vllm", async_scheduling=True, max_num_seqs=64, token_budget=2048)
    s = _plan(t).serving
    assert (s.in_flight, s.batch, s.batch_queue, s.sequences) == (8, 8, 9, 64) and not s.warnings
    assert s.to_dict()["batch_queue"] == 9
    over = _plan(_tables(engine, 12, where)).serving
    assert over.warnings == ("batch 12 x 8 in flight = 96 exceeds max_num_seqs 64: the engine packs 8 per "
                             "micro-batch (search with --objective serve, or set batch <= 8)",)
    # without async scheduling the queue is PP
    sync = _plan(_tables({"name": "vllm", "max_num_seqs": 64}, 8, where)).serving
    assert (sync.in_flight, sync.batch_queue) == (8, 8)


def test_max_num_seqs_bounds_the_request_mix() -> None:
    """With a request mix and batch 12 over max_num_seqs 64, the mix runs at most 64 requests
    (8 per micro-batch), not 96: saturated, all 64 slots are busy."""
    t = _tables({"name": "vllm", "max_num_seqs": 64}, 12, input_tokens=256, output_tokens=256)
    s = _plan(t).serving
    assert s.mix is not None and s.mix.running == pytest.approx(64)
    free = _plan(_tables({"name": "vllm"}, 12, input_tokens=256, output_tokens=256)).serving
    assert free.mix is not None and free.mix.running == pytest.approx(96)


def test_serve_search_obeys_max_num_seqs_and_exports_it() -> None:
    """Seed cluster (4 GPUs), Llama-3.1-8B, engine {vllm, max_num_seqs: 24}: every point the
    serve search keeps has batch <= 24 // in_flight, and the export's --max-num-seqs = B·K <= 24."""
    from partitioner.costs import build_tables
    from partitioner.export.view import PlanView
    from partitioner.export.workload import VLLM_FLAGS, workload_flags
    from partitioner.models import ClusterSpec, load_cluster, load_model
    from partitioner.serving.search import search

    model = load_model(EX / "models" / "llama-3.1-8b.yaml")
    seed = load_cluster(EX / "clusters" / "seed.yaml")
    cluster = ClusterSpec.model_validate({**seed.model_dump(exclude_none=True),
                                          "engine": {"name": "vllm", "max_num_seqs": 24}})

    def at(B: int) -> Any:
        return build_tables(model.with_batch(B, 1), cluster)

    res = search(at, [4, 8, 12, 16, 24, 32], order="free")
    assert res.frontier and all(p.serving.batch * p.serving.in_flight <= 24 for p in res.frontier)
    s = res.best.serving
    assert s.batch <= 24 // s.in_flight
    doc = {"stages": [], "workload": {"context": s.context}, "serving": s.to_dict()}
    view = PlanView(stages=(), num_layers=0, model="m", feasible=True, reason="", document=doc,
                    workload=doc["workload"], serving=doc["serving"])
    flags, _ = workload_flags(view, VLLM_FLAGS)
    assert f"--max-num-seqs {s.batch * s.in_flight}" in " ".join(flags)
    # without the user's cap the same search runs larger batches
    free = search(lambda B: build_tables(model.with_batch(B, 1), seed, "vllm"), [4, 8, 12, 16, 24, 32], order="free")
    assert max(p.serving.batch * p.serving.in_flight for p in free.frontier) > 24
