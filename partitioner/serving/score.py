"""The serving numbers of one plan: tokens/s, TPOT, TTFT and KV capacity (closed-loop decode).

For a plan (devices g_0..g_{S-1}, cuts) on tables built at batch B and K micro-batches in
flight (the workload's `batch` and `in_flight`):

    d_ret   = alpha(g_{S-1}, g_0) + return_bytes / beta(g_{S-1}, g_0)   (0 when S = 1)
    P       = max(K·w_max, Στ + Σd + d_ret)            TPOT, partitioner.analysis.closed_loop
    tokens/s = K·B / P
    TTFT    = Στ_p + Σd_p of one prompt (Thm 2 at M = 1); chunked: Thm 2/3 at M = C chunks of
              the engine's token budget (tables' token_budget: serving.engine_sched, 2048 for
              vLLM V1 on GPUs under 70 GiB; CHUNK_TOKENS = 512, vLLM v0.5's default, when unknown)
    max_sequences = min over stages of the sequences whose KV fits (`capacity`)

With a request mix (workload `input_tokens` / `output_tokens`, optionally `request_rate` or
`concurrency`): prompts share the steps as chunked prefill under the engine's token budget
(`partitioner.analysis.chunked.steady_state`: each stage's step time is its decode time at B plus
its per-token prefill time, one prompt's prefill cost / prompt_tokens, per prefill token; K·B
request slots). tokens_per_s is then the output tokens/s, tpot_s vLLM's benchmark TPOT and ttft_s
the TTFT under that load; `mix` holds the rest (total tokens/s, requests/s, what binds). Without
a mix, decode only (zero prompt load). A workload of phase "prefill" scored here gets a warning.

`binding` names what limits the plan: "bottleneck" or "round_trip" (which term of P binds),
or "kv_capacity" when K·B sequences do not fit. The serve search may replace it with the limit
that stopped it ("kv_capacity", "tpot_limit", "ttft_limit").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from partitioner.analysis.chunked import EngineLimits, MixServing, StepCost, steady_state
from partitioner.analysis.closed_loop import decode_bound, decode_crossover, decode_period, prefill_ttft
from partitioner.problem import CostTables, Metrics
from partitioner.serving.capacity import capacity
from partitioner.serving.engine_sched import SCHEDULED_ENGINES, batch_cap, batch_queue, schedule_of

__all__ = ["Serving", "CHUNK_TOKENS", "serving_of", "return_latency", "step_cost", "PREFILL_PHASE_WARNING"]

PREFILL_PHASE_WARNING = ("the workload's phase is prefill: its costs are one prompt's pass, and the serving "
                         "numbers treat them as decode steps (set phase: decode and input_tokens/output_tokens)")

CHUNK_TOKENS = 512


@dataclass(frozen=True)
class Serving:
    """Closed-loop decode numbers of one plan (SI units). The first eight keys are the plan JSON
    contract; the rest explain them."""

    batch: int
    in_flight: int
    max_sequences: int | None
    context: int
    tokens_per_s: float
    tpot_s: float
    ttft_s: float | None
    binding: str
    capacity_stage: int | None = None
    decode_bound: str = "bottleneck"
    round_trip_s: float = 0.0
    d_ret_s: float = 0.0
    crossover_in_flight: float = math.inf
    ttft_chunked_s: float | None = None
    prefill_chunks: int = 1
    gpus: int = 1
    kv_tokens: int | None = None  # the engine's KV pool in tokens (None: generic free-memory model)
    stage_memory: tuple[Any, ...] = ()  # costs.kvpool.StageMemory per stage (engine pool only)
    kv_note: str = ""
    token_budget: int = 0
    batch_queue: int | None = None  # steps the engine keeps scheduled (vLLM max_concurrent_batches; engine_sched)
    mix: MixServing | None = None
    warnings: tuple[str, ...] = ()

    @property
    def sequences(self) -> int:
        return self.batch * self.in_flight

    @property
    def tokens_per_s_per_gpu(self) -> float:
        return self.tokens_per_s / self.gpus

    @property
    def tokens_per_s_per_user(self) -> float:
        """One sequence's decode speed, 1 / TPOT."""
        return 1.0 / self.tpot_s if self.tpot_s > 0 else math.inf

    def with_binding(self, binding: str) -> Serving:
        return replace(self, binding=binding)

    def to_dict(self) -> dict[str, Any]:
        def num(x: float | None) -> float | None:
            return None if x is None or not math.isfinite(x) else float(x)

        return {
            "batch": self.batch,
            "in_flight": self.in_flight,
            "max_sequences": self.max_sequences,
            "context": self.context,
            "tokens_per_s": num(self.tokens_per_s),
            "tpot_s": num(self.tpot_s),
            "ttft_s": num(self.ttft_s),
            "binding": self.binding,
            "capacity_stage": self.capacity_stage,
            "decode_bound": self.decode_bound,
            "round_trip_s": self.round_trip_s,
            "d_ret_s": self.d_ret_s,
            "crossover_in_flight": num(self.crossover_in_flight),
            "ttft_chunked_s": num(self.ttft_chunked_s),
            "prefill_chunks": self.prefill_chunks,
            "tokens_per_s_per_gpu": num(self.tokens_per_s_per_gpu),
            "tokens_per_s_per_user": num(self.tokens_per_s_per_user),
            **self._pool_dict(),
            **({"token_budget": self.token_budget} if self.token_budget else {}),
            **({"batch_queue": self.batch_queue} if self.batch_queue is not None else {}),
            **({"mix": {k: num(v) if isinstance(v, float) else v for k, v in vars(self.mix).items()}} if self.mix else {}),
            **({"warnings": list(self.warnings)} if self.warnings else {}),
        }

    def _pool_dict(self) -> dict[str, Any]:
        """The engine pool's keys (only with an engine pool): kv_tokens, per-stage memory in bytes."""
        if self.kv_tokens is None and not self.stage_memory:
            return {}
        out: dict[str, Any] = {"kv_tokens": self.kv_tokens, "stages": [m.to_dict() for m in self.stage_memory]}
        if self.kv_note:
            out["kv_note"] = self.kv_note
        return out


def return_latency(t: CostTables, devices: tuple[int, ...]) -> float:
    """d_ret: the last device sends one micro-batch's sampled tokens to the first (module doc)."""
    if len(devices) == 1:
        return 0.0
    g, h = devices[-1], devices[0]
    beta = float(t.bandwidth_Bps[g, h])
    return float(t.latency_s[g, h]) + (0.0 if math.isinf(beta) else t.return_bytes / beta)


def _prefill(t: CostTables, devices: tuple[int, ...], cuts: tuple[int, ...], regime: str,
             chunk_tokens: int) -> tuple[float | None, float | None, int]:
    if t.prefill_cost is None or t.prefill_cut_bytes is None:
        return None, None, 1
    S = len(devices)
    tau = np.array([float(np.sum(t.prefill_cost[g, cuts[s]:cuts[s + 1]])) for s, g in enumerate(devices)])
    alpha = np.array([float(t.latency_s[devices[s], devices[s + 1]]) for s in range(S - 1)])
    beta = np.array([float(t.bandwidth_Bps[devices[s], devices[s + 1]]) for s in range(S - 1)])
    nbytes = np.array([float(t.prefill_cut_bytes[cuts[s + 1] - 1]) for s in range(S - 1)])
    with np.errstate(divide="ignore"):
        xfer = np.where(np.isinf(beta), 0.0, nbytes / beta)
    single = prefill_ttft(tau, alpha + xfer)
    C = max(1, math.ceil(t.prompt_tokens / chunk_tokens)) if t.prompt_tokens else 1
    chunked = prefill_ttft(tau / C, alpha + xfer / C, chunks=C, regime=regime)
    return single, chunked, C


def step_cost(t: CostTables, devices: tuple[int, ...], cuts: tuple[int, ...], m: Metrics) -> StepCost:
    """A plan's engine step as StepCost: stage s's decode time at batch B plus, per prefill token,
    its share of one prompt's prefill cost (prefill_cost / prompt_tokens); hops likewise."""
    S = len(devices)
    per_tok = [0.0] * S
    hop_tok = [0.0] * (S - 1)
    if t.prefill_cost is not None and t.prefill_cut_bytes is not None and t.prompt_tokens > 0:
        per_tok = [float(np.sum(t.prefill_cost[g, cuts[s]:cuts[s + 1]])) / t.prompt_tokens for s, g in enumerate(devices)]
        for s in range(S - 1):
            beta = float(t.bandwidth_Bps[devices[s], devices[s + 1]])
            hop_tok[s] = 0.0 if math.isinf(beta) else float(t.prefill_cut_bytes[cuts[s + 1] - 1]) / t.prompt_tokens / beta
    return StepCost(tuple(float(x) for x in m.tau), (0.0,) * S, tuple(per_tok), tuple(float(x) for x in m.d),
                    tuple(hop_tok), return_latency(t, devices))


def serving_of(
    t: CostTables, devices: tuple[int, ...], cuts: tuple[int, ...], m: Metrics, regime: str,
    *, chunk_tokens: int | None = None,
) -> Serving:
    """The Serving of a scored plan on tables `t` (batch and in_flight are the tables')."""
    chunk_tokens = chunk_tokens or t.token_budget or CHUNK_TOKENS
    B, K = t.batch, t.in_flight
    ret = return_latency(t, devices)
    P = decode_period(m.tau, m.d, K, ret, regime=regime)
    bound = decode_bound(m.tau, m.d, K, ret, regime=regime)
    cap = capacity(t, devices, cuts)
    binding = "kv_capacity" if cap.max_sequences is not None and cap.max_sequences < B * K else bound
    ttft, chunked, C = _prefill(t, devices, cuts, regime, chunk_tokens)
    warnings: list[str] = [PREFILL_PHASE_WARNING] if t.phase == "prefill" else []
    sched = schedule_of(t)
    packed = batch_cap(sched, K)
    if packed is not None and packed < B:
        warnings.append(f"batch {B} x {K} in flight = {B * K} exceeds max_num_seqs {sched.max_num_seqs}: the engine "
                        f"packs {packed} per micro-batch (search with --objective serve, or set batch <= {packed})")
    mix = None
    tokens, tpot = (K * B / P) if P > 0 else math.inf, P
    if t.request_mix is not None:
        if t.prefill_cost is None:
            warnings.append("the model has no prefill costs: prompts are scored as free")
        running = B * K if packed is None else min(B, packed) * K  # the engine's running requests (engine_sched)
        mix = steady_state(step_cost(t, devices, cuts, m), t.request_mix, EngineLimits(K, running, max(1, t.token_budget)))
        tokens, tpot, ttft = mix.output_tokens_per_s, mix.tpot_s, mix.ttft_s
    return Serving(
        batch=B, in_flight=K, max_sequences=cap.max_sequences, context=t.context,
        tokens_per_s=tokens, tpot_s=tpot, ttft_s=ttft, binding=binding,
        capacity_stage=cap.stage, decode_bound=bound,
        round_trip_s=math.fsum([*m.tau.tolist(), *m.d.tolist(), ret]), d_ret_s=ret,
        crossover_in_flight=decode_crossover(m.tau, m.d, ret, regime=regime),
        ttft_chunked_s=chunked, prefill_chunks=C, gpus=t.gpus(devices),
        kv_tokens=cap.kv_tokens, stage_memory=cap.memory, kv_note=cap.note,
        token_budget=t.token_budget if mix is not None or t.engine_id in SCHEDULED_ENGINES else 0,
        batch_queue=batch_queue(sched, len(devices)), mix=mix, warnings=tuple(warnings),
    )
