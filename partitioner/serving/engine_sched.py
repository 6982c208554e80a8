"""How vLLM and SGLang schedule a pipeline: micro-batches in flight, batch packing, token budget.

The serve search's free (B, K) is what `generic` plans. A real engine fixes K by the pipeline
depth and packs its running requests over those K batches:

- vLLM V1 (vLLM 0.33.0): `VllmConfig.max_concurrent_batches` (vllm/config/vllm.py) is the batch
  queue size `EngineCore.step_with_batch_queue` keeps in flight (vllm/v1/engine/core.py): the PP
  size; with async scheduling PP + 1 on the V2 model runner, and 2 at PP = 1 on the V1 runner
  (`batch_queue`). The requests those steps carry form PP groups (`engine_in_flight`, the K of
  the closed-loop model): `Scheduler.schedule` (vllm/v1/core/sched/scheduler.py) gives a running
  request num_tokens - num_computed_tokens new tokens, which is 0 while its decode step is in
  flight (num_computed_tokens advances at schedule time), so it is skipped until that step
  returns; with async scheduling `AsyncScheduler._update_after_schedule`
  (vllm/v1/core/sched/async_scheduler.py) lets it be scheduled again on output placeholders,
  but on the V2 runner only `decode_stagger` = pp_size steps later (`next_decode_eligible_step`),
  and at PP = 1 every step. Either way a request decodes in every PP-th step: the extra queued
  step overlaps the scheduler's CPU work with the pipeline and adds no micro-batch of its own.
  Admission counts every running request, in flight or not (`len(self.running) <
  max_num_running_reqs` = max_num_seqs), so the PP groups share max_num_seqs: B = max_num_seqs
  // PP each, and a user's max_num_seqs caps the batch (`batch_cap`).
SGLang (sgl-project/sglang commit 00ff98d3): `SchedulerPPMixin.init_pp_loop_state`
  (python/sglang/srt/managers/scheduler_pp_mixin.py) runs `pp_loop_size = pp_size +
  pp_async_batch_depth` micro-batches (depth 0 by default), each with its own running batch of
  at most `pp_max_micro_batch_size = max(max_running_requests // pp_size, 1)` requests
  (python/sglang/srt/managers/scheduler.py `Scheduler.__init__`).

Token budget per step (the chunked-prefill size) when the engine settings give none:
vLLM `EngineArgs.get_batch_defaults` (vllm/engine/arg_utils.py): 8192 for the OpenAI server
(16384 for the offline LLM class) on GPUs of >= 70 GiB that are not A100, else 2048 (8192);
SGLang `ServerArgs` GPU-memory defaults (python/sglang/srt/server_args.py): 2048 below 35 GiB,
8192 below 160 GiB, else 16384.

The serve search calls `admissible_in_flight` for the K it may try with S stages (the hook).
"""

from __future__ import annotations

from dataclasses import dataclass

from partitioner.errors import InputError

__all__ = ["SCHEDULED_ENGINES", "EngineSchedule", "admissible_in_flight", "engine_in_flight", "engine_batch",
           "max_sequences_flag", "default_token_budget", "in_flight_grid", "batch_queue", "batch_cap",
           "schedule_from_settings", "schedule_of"]

SCHEDULED_ENGINES = ("vllm", "sglang")
GIB = 1024**3


@dataclass(frozen=True)
class EngineSchedule:
    """The scheduling settings of one engine (None: the engine's default)."""

    engine: str = "generic"
    async_scheduling: bool = False  # vLLM --async-scheduling
    v2_model_runner: bool = True  # vLLM: VLLM_USE_V2_MODEL_RUNNER (default on where supported)
    pp_async_batch_depth: int = 0  # SGLang --pp-async-batch-depth
    max_num_seqs: int | None = None  # the user's vLLM --max-num-seqs / SGLang --max-running-requests (None: the plan's B·K)
    token_budget: int | None = None  # vLLM --max-num-batched-tokens / SGLang --chunked-prefill-size

    @property
    def scheduled(self) -> bool:
        """Whether the engine fixes K (vLLM, SGLang) or the plan may choose it (generic, ...)."""
        return self.engine in SCHEDULED_ENGINES


def engine_in_flight(sched: EngineSchedule, stages: int) -> int | None:
    """Micro-batches of distinct requests the engine keeps in flight on `stages` pipeline stages,
    the closed-loop model's K (module doc): vLLM PP, with or without async scheduling; SGLang
    pp_size + pp_async_batch_depth. None when the engine leaves K free."""
    if stages < 1:
        raise InputError(f"stages must be >= 1 (got {stages})")
    if sched.engine == "vllm":
        return stages
    if sched.engine == "sglang":
        return stages + max(0, sched.pp_async_batch_depth)
    return None


def batch_queue(sched: EngineSchedule, stages: int) -> int | None:
    """Steps the engine keeps scheduled at once (vLLM `VllmConfig.max_concurrent_batches`: PP, PP + 1
    with async scheduling on the V2 model runner, 2 at PP = 1 on the V1 runner); SGLang its K;
    None for free-K engines."""
    if sched.engine == "vllm" and stages >= 1 and sched.async_scheduling:
        if sched.v2_model_runner:
            return stages + 1
        if stages <= 1:
            return 2
    return engine_in_flight(sched, stages)


def batch_cap(sched: EngineSchedule, K: int) -> int | None:
    """The most requests per micro-batch the engine packs with the user's max_num_seqs /
    max_running_requests over K micro-batches (`engine_batch`); None when the user gave none."""
    if sched.max_num_seqs is None or not sched.scheduled:
        return None
    return engine_batch(sched, K, sched.max_num_seqs)


def schedule_of(tables: object) -> EngineSchedule:
    """The EngineSchedule a CostTables carries (`schedule`), else its engine id's defaults."""
    sched = getattr(tables, "schedule", None)
    return sched if isinstance(sched, EngineSchedule) else EngineSchedule(str(getattr(tables, "engine_id", "generic")))


def schedule_from_settings(engine: str, settings: object = None, flags: dict[str, object] | None = None,
                           token_budget: int | None = None) -> EngineSchedule:
    """The EngineSchedule of `engine` from its resolved settings (costs.kvpool.EngineSettings:
    async_scheduling) and the user's own flags (`engine:` mapping: max_num_seqs /
    max_running_requests; an engine default does not cap the plan, whose export sets the flag)."""
    flags = flags or {}
    asynchronous = bool(getattr(settings, "async_scheduling", None) or flags.get("async_scheduling", False))
    key = {"vllm": "max_num_seqs", "sglang": "max_running_requests"}.get(engine)
    user = flags.get(key) if key else None
    return EngineSchedule(engine, async_scheduling=asynchronous,
                          max_num_seqs=int(user) if isinstance(user, int) else None, token_budget=token_budget)


def admissible_in_flight(sched: EngineSchedule, stages: int, K: int) -> bool:
    """THE HOOK for the serve search: may a point with K micro-batches in flight on a split of
    `stages` stages be scored for this engine? Always for free-K engines."""
    want = engine_in_flight(sched, stages)
    return want is None or want == K


def in_flight_grid(sched: EngineSchedule, max_stages: int, free: list[int]) -> list[int]:
    """The K values the serve search should try: the engine's K for 1..max_stages stages, or
    `free` (the search's own K loop) when the engine leaves K free."""
    if not sched.scheduled:
        return free
    return sorted({k for S in range(1, max_stages + 1) if (k := engine_in_flight(sched, S)) is not None})


def engine_batch(sched: EngineSchedule, K: int, max_num_seqs: int) -> int:
    """Requests per micro-batch when K batches share max_num_seqs: max(N // K, 1); SGLang divides
    by the PP size, K less its async batch depth (module doc)."""
    if K < 1 or max_num_seqs < 1:
        raise InputError(f"in_flight and max_num_seqs must be >= 1 (got {K}, {max_num_seqs})")
    if sched.engine == "sglang":
        K = max(1, K - max(0, sched.pp_async_batch_depth))
    return max(max_num_seqs // K, 1)


def max_sequences_flag(batch: int, in_flight: int) -> int:
    """--max-num-seqs / --max-running-requests that packs `batch` per micro-batch: B·K."""
    return batch * in_flight


def default_token_budget(engine: str, gpu_memory_bytes: float, gpu_name: str = "",
                         offline: bool = False) -> int:
    """The engine's default tokens per step on the smallest GPU of the plan (module doc)."""
    if engine == "sglang":
        gib = gpu_memory_bytes / GIB
        return 2048 if gib < 35 else 8192 if gib < 160 else 16384
    large = gpu_memory_bytes >= 70 * GIB and "a100" not in gpu_name.lower()
    if large:
        return 16384 if offline else 8192
    return 8192 if offline else 2048
