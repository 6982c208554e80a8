"""Engine scheduling (partitioner.serving.engine_sched): in-flight counts and batch packing as
vLLM V1 and SGLang run them, default token budgets, the serve search's hook, the workload's
request-mix fields, the serving numbers with a mix, and the export flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from partitioner.errors import ConfigError, InputError
from partitioner.export.view import PlanView
from partitioner.export.workload import SGLANG_FLAGS, VLLM_FLAGS, workload_flags
from partitioner.serving.engine_sched import (
    EngineSchedule,
    admissible_in_flight,
    batch_queue,
    default_token_budget,
    engine_batch,
    engine_in_flight,
    in_flight_grid,
    max_sequences_flag,
)

EX = Path(__file__).resolve().parents[1] / "examples"
GIB = 1024**3


def test_in_flight_as_the_engines_run_it() -> None:
    vllm, sglang, generic = EngineSchedule("vllm"), EngineSchedule("sglang"), EngineSchedule("generic")
    # vLLM VllmConfig.max_concurrent_batches (the batch queue): PP; async on the V2 runner PP + 1;
    # V1 runner: 2 at PP 1. The requests form PP groups either way (decode_stagger = pp_size).
    asy = EngineSchedule("vllm", async_scheduling=True)
    v1 = EngineSchedule("vllm", async_scheduling=True, v2_model_runner=False)
    assert [engine_in_flight(vllm, S) for S in (1, 2, 8)] == [1, 2, 8]
    assert [batch_queue(vllm, S) for S in (1, 2, 8)] == [1, 2, 8]
    assert [batch_queue(asy, S) for S in (1, 2, 8)] == [2, 3, 9]
    assert [batch_queue(v1, S) for S in (1, 2, 8)] == [2, 2, 8]
    assert [engine_in_flight(s, S) for s in (asy, v1) for S in (1, 2, 8)] == [1, 2, 8] * 2
    assert batch_queue(generic, 4) is None
    # SGLang pp_loop_size = pp_size + pp_async_batch_depth
    assert [engine_in_flight(sglang, S) for S in (1, 4)] == [1, 4]
    assert engine_in_flight(EngineSchedule("sglang", pp_async_batch_depth=2), 4) == 6
    assert engine_in_flight(generic, 5) is None and not generic.scheduled and vllm.scheduled
    with pytest.raises(InputError, match="stages must be >= 1"):
        engine_in_flight(vllm, 0)


def test_the_hook_batch_packing_and_flags() -> None:
    vllm = EngineSchedule("vllm")
    assert admissible_in_flight(vllm, 8, 8) and not admissible_in_flight(vllm, 8, 7)
    assert admissible_in_flight(EngineSchedule("generic"), 8, 7)
    assert in_flight_grid(vllm, 4, [1, 2, 3]) == [1, 2, 3, 4]
    assert in_flight_grid(EngineSchedule("llamacpp"), 4, [1, 2, 3]) == [1, 2, 3]
    # 256 running requests over 8 in-flight batches: 32 each; the flag packs B·K back
    assert engine_batch(vllm, 8, 256) == 32 and engine_batch(vllm, 8, 4) == 1
    assert max_sequences_flag(32, 8) == 256
    # SGLang pp_max_micro_batch_size = max_running_requests // pp_size, whatever the async depth
    assert engine_batch(EngineSchedule("sglang", pp_async_batch_depth=2), 6, 256) == 64
    with pytest.raises(InputError, match="must be >= 1"):
        engine_batch(vllm, 0, 256)


def test_default_token_budgets() -> None:
    # vLLM EngineArgs.get_batch_defaults: >= 70 GiB and not A100 -> 8192 (server) / 16384 (LLM class)
    assert default_token_budget("vllm", 24e9, "l4") == 2048
    assert default_token_budget("vllm", 80 * GIB, "h100") == 8192
    assert default_token_budget("vllm", 80 * GIB, "h100", offline=True) == 16384
    assert default_token_budget("vllm", 80 * GIB, "a100-80gb") == 2048
    # SGLang ServerArgs: below 35 GiB 2048, below 160 GiB 8192, else 16384
    assert [default_token_budget("sglang", g * GIB) for g in (16, 80, 192)] == [2048, 8192, 16384]


def test_workload_mix_fields_are_validated(tmp_path: Path) -> None:
    from partitioner.models import load_model

    base = "preset: llama-3.1-8b\nworkload:\n  batch: 4\n"
    cases = {
        "  input_tokens: 512\n": "input_tokens and output_tokens go together",
        "  input_tokens: 512\n  output_tokens: 128\n  request_rate: 2\n  concurrency: 8\n": "not both",
        "  concurrency: 8\n": "a load needs input_tokens",
        "  input_tokens: 512\n  output_tokens: {128: -1}\n": "output_tokens",
    }
    for extra, message in cases.items():
        f = tmp_path / "m.yaml"
        f.write_text(base + extra)
        with pytest.raises(ConfigError, match=message):
            load_model(f)
    f.write_text(base + "  input_tokens: {256: 1, 1024: 3}\n  output_tokens: 128\n  concurrency: 16\n")
    wl = load_model(f).workload
    assert wl.input_tokens == {256: 1, 1024: 3} and wl.concurrency == 16


def _l4x8(**update: object) -> object:
    from partitioner.costs import build_tables
    from partitioner.models import load_cluster, load_model

    m = load_model(EX / "models" / "llama-3-70b-fp8.yaml")
    m = m.model_copy(update={"workload": m.workload.model_copy(update=update)})
    return build_tables(m, load_cluster(EX / "clusters" / "l4x8.yaml"))


def test_plan_serving_with_vllm_runs_pp_in_flight_and_carries_the_mix() -> None:
    """8×L4 Llama-3-70B-FP8, even split over 8 stages: with engine vllm the plan's serving runs
    K = PP = 8 whatever the workload's in_flight; prompts of 1024 and outputs of 1024 share the
    steps under vLLM's 2048-token budget (L4: < 70 GiB) and cost decode tokens/s."""
    from partitioner.problem import Problem, Solution, evaluate, objective_key
    from partitioner.result import Plan

    t = _l4x8(batch=4, in_flight=3, engine="vllm", input_tokens=1024, output_tokens=1024)
    assert t.token_budget == 2048 and t.engine_id == "vllm"
    cuts = (0, 11, 21, 31, 41, 51, 61, 71, 82)
    p = Problem(t, M=3)
    key = objective_key(p, evaluate(p, tuple(range(8)), cuts))
    plan = Plan.from_solution(p, Solution(tuple(range(8)), cuts, "dp", True, key, key[0]))
    s = plan.serving
    assert s is not None and s.in_flight == 8 and s.batch == 4 and s.mix is not None
    assert s.to_dict()["token_budget"] == 2048 and s.to_dict()["mix"]["binding"] == "max_num_seqs"
    decode = plan.serving.batch * 8 / s.round_trip_s  # upper bound of decode tokens/s
    assert s.tokens_per_s < decode and s.tpot_s > 0 and s.ttft_s is not None and s.ttft_s > s.tpot_s
    plain = _l4x8(batch=4, in_flight=3)
    assert plain.request_mix is None and plain.engine_id == "generic"


def test_prefill_phase_is_never_scored_as_decode_silently() -> None:
    from partitioner.problem import Problem, evaluate
    from partitioner.serving.score import PREFILL_PHASE_WARNING, serving_of

    t = _l4x8(phase="prefill")
    cuts = (0, 11, 21, 31, 41, 51, 61, 71, 82)
    s = serving_of(t, tuple(range(8)), cuts, evaluate(Problem(t), tuple(range(8)), cuts), "async")
    assert s.warnings == (PREFILL_PHASE_WARNING,) and s.to_dict()["warnings"] == [PREFILL_PHASE_WARNING]


def test_export_flags_carry_batch_times_in_flight_and_the_token_budget() -> None:
    doc = {"stages": [], "workload": {"context": 4096},
           "serving": {"batch": 32, "in_flight": 8, "max_sequences": 900, "context": 4096, "token_budget": 2048}}
    view = PlanView(stages=(), num_layers=0, model="m", feasible=True, reason="", document=doc,
                    workload=doc["workload"], serving=doc["serving"])
    flags, _ = workload_flags(view, VLLM_FLAGS)
    assert " ".join(flags) == "--max-model-len 4096 --max-num-seqs 256 --max-num-batched-tokens 2048"
    flags, _ = workload_flags(view, SGLANG_FLAGS)
    assert " ".join(flags) == "--context-length 4096 --max-running-requests 256 --chunked-prefill-size 2048"


def test_serve_search_under_vllm_keeps_only_points_the_engine_runs() -> None:
    """With engine vllm every point of the serve search runs K = PP (the hook in
    partitioner.serving.run), on a cluster where shorter pipelines fit too (seed: 4 GPUs)."""
    from partitioner.costs import build_tables
    from partitioner.models import load_cluster, load_model
    from partitioner.serving.search import search

    model, cluster = load_model(EX / "models" / "llama-3.1-8b.yaml"), load_cluster(EX / "clusters" / "seed.yaml")

    def at(B: int) -> object:
        return build_tables(model.with_batch(B, 1), cluster, "vllm")

    res = search(at, [4, 16], order="free")
    assert res.best.serving.in_flight == len(res.best.solution.devices)
    assert all(p.serving.in_flight == len(p.solution.devices) for p in res.frontier)
    assert res.points > len(res.frontier)  # points at other K were scored, none of them kept


def test_token_budget_follows_the_engine_settings():
    """engine: as a mapping sets the engine's tokens per step (vLLM max_num_batched_tokens,
    SGLang chunked_prefill_size); without it the engine's default for the GPUs."""
    from partitioner.costs import build_tables
    from partitioner.models import ClusterSpec, load_model

    model = load_model("examples/models/llama-3.1-8b.yaml")
    base = {"devices": [{"name": "a", "gpu": "l4", "node": "n"}, {"name": "b", "gpu": "l4", "node": "n"}]}
    default = build_tables(model, ClusterSpec.model_validate({**base, "engine": "vllm"}))
    given = build_tables(model, ClusterSpec.model_validate(
        {**base, "engine": {"name": "vllm", "max_num_batched_tokens": 4096}}))
    sgl = build_tables(model, ClusterSpec.model_validate(
        {**base, "engine": {"name": "sglang", "chunked_prefill_size": 1024}}))
    assert default.token_budget == 2048 and given.token_budget == 4096 and sgl.token_budget == 1024
