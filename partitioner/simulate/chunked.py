"""Event-driven simulation of chunked-prefill serving over a pipeline (one engine, requests).

An independent check of `partitioner.analysis.chunked` (its fluid closed form): requests arrive
(Poisson at a rate, or a closed loop of clients), an engine schedules steps as vLLM V1 does and
the steps flow through S stages, K at a time.

- Scheduler (vllm/v1/core/sched/scheduler.py `Scheduler.schedule`, vLLM 0.33.0): a step holds at
  most C tokens. Running requests first, in admission order, each num_tokens - num_computed_tokens
  capped by what is left of C, where num_computed_tokens advances when a step is scheduled
  (`_update_after_schedule`): a prefilling request gets the next chunk of its prompt even while
  its previous chunk is in flight; a decoding request gets 1 token, and none (num_new_tokens == 0,
  skipped) while its previous step, or its prompt's last chunk, is in flight. Then waiting
  requests, first come first served, while fewer than N (`max_num_seqs`) requests run in all and
  tokens are left (a prompt may be cut: chunked).
- Engine loop (vllm/v1/engine/core.py `EngineCore.step_with_batch_queue`): while fewer than K
  steps are in flight the loop schedules again at once (an empty schedule takes a queue slot and
  returns at once, so the loop spins and picks arrivals up); with K in flight it blocks on the
  oldest. So a step is scheduled at every return and at every arrival while fewer than K fly.
- Pipeline: stage s serves steps first come first served, taking a_s + b_s·n_d + p_s·n_p for n_d
  decode and n_p prefill tokens; hop s delays by e_s + q_s·(n_d + n_p); the sampled tokens come
  back after d_ret. A step that finishes a prompt samples the request's first token, every later
  step of it one more; the request ends at its output length.

Metrics over the steady window (requests arriving after the first `warmup` share, up to the
last arrival): output and total tokens/s; mean TTFT; mean TPOT as vLLM's benchmark computes it,
(latency - TTFT)/(output - 1) for outputs > 1 (vllm/benchmarks/serve.py `calculate_metrics`).
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass

import numpy as np

from partitioner.analysis.chunked import EngineLimits, RequestMix, StepCost
from partitioner.errors import InputError

__all__ = ["MixRun", "simulate_mix"]


@dataclass(frozen=True)
class MixRun:
    """Measured means of one simulation (SI units)."""

    output_tokens_per_s: float
    total_tokens_per_s: float
    tpot_s: float
    ttft_s: float
    requests_per_s: float
    completed: int
    offered_per_s: float = 0.0  # arrivals in the window / its length (a rate's realised value)


class _Engine:
    def __init__(self, cost: StepCost, lim: EngineLimits, prompt: np.ndarray, output: np.ndarray) -> None:
        self.cost, self.lim = cost, lim
        self.a, self.b, self.p = list(cost.base_s), list(cost.per_seq_s), list(cost.per_token_s)
        self.e = list(cost.hop_s or [0.0] * (cost.stages - 1))
        self.q = list(cost.hop_per_token_s or [0.0] * (cost.stages - 1))
        self.prompt, self.output = prompt.tolist(), output.tolist()
        n = len(prompt)
        self.done = [0] * n  # prompt tokens computed (returned)
        self.sched = [0] * n  # prompt tokens scheduled (vLLM's num_computed_tokens, advanced at schedule time)
        self.made = [0] * n  # output tokens sampled
        self.busy = [0] * n  # in-flight steps holding the request
        self.first = [float("nan")] * n
        self.finish = [float("nan")] * n
        self.waiting: deque[int] = deque()
        self.running: dict[int, None] = {}  # admission order
        self.free = [0.0] * cost.stages
        self.steps: dict[int, list[tuple[int, int, bool]]] = {}
        self.flying = 0
        self.tokens: list[tuple[float, int, int]] = []  # (time, output tokens, prompt tokens) per return

    def build(self) -> list[tuple[int, int, bool]]:
        """One step's (request, tokens, prefill?) under the budget (module doc, "Scheduler")."""
        budget, items = self.lim.token_budget, []
        for q in self.running:
            if budget <= 0:
                break
            rest = self.prompt[q] - self.sched[q]
            if rest <= 0 and self.busy[q]:
                continue  # decoding (or its last chunk) in flight: no new token yet
            take = min(rest, budget) if rest > 0 else 1
            items.append((q, take, rest > 0))
            budget -= take
        while self.waiting and budget > 0 and len(self.running) < self.lim.max_num_seqs:
            q = self.waiting.popleft()
            take = min(self.prompt[q], budget)
            self.running[q] = None
            items.append((q, take, True))
            budget -= take
        return items

    def launch(self, now: float, items: list[tuple[int, int, bool]], events: list[tuple[float, int, str, int]],
               sid: int) -> None:
        n_d = sum(1 for _, _, pre in items if not pre)
        n_p = sum(take for _, take, pre in items if pre)
        t = now
        last = self.cost.stages - 1
        for s in range(last + 1):
            t = max(t, self.free[s]) + self.a[s] + self.b[s] * n_d + self.p[s] * n_p
            self.free[s] = t
            if s < last:
                t += self.e[s] + self.q[s] * (n_d + n_p)
        for q, take, pre in items:
            self.busy[q] += 1
            if pre:
                self.sched[q] += take
        self.steps[sid] = items
        self.flying += 1
        heapq.heappush(events, (t + self.cost.return_s, sid, "return", sid))

    def returned(self, now: float, sid: int) -> list[int]:
        """Apply a step's tokens; the requests it finished."""
        self.flying -= 1
        ended, out, prompt_tokens = [], 0, 0
        for q, take, prefill in self.steps.pop(sid):
            self.busy[q] -= 1
            if prefill:
                self.done[q] += take
                prompt_tokens += take
                if self.done[q] < self.prompt[q]:
                    continue
                self.first[q] = now
            self.made[q] += 1
            out += 1
            if self.made[q] >= self.output[q]:
                self.finish[q] = now
                del self.running[q]
                ended.append(q)
        self.tokens.append((now, out, prompt_tokens))
        return ended


def _lengths(rng: np.random.Generator, hist: tuple[tuple[int, float], ...], n: int, field: str, low: int) -> np.ndarray:
    tokens = np.array([k for k, _ in hist])
    if tokens.min() < low:
        raise InputError(f"simulate_mix: {field} needs >= {low} tokens per request (got {tokens.min()})")
    return rng.choice(tokens, size=n, p=np.array([w for _, w in hist]))


def simulate_mix(cost: StepCost, mix: RequestMix, lim: EngineLimits, *, requests: int = 2000, seed: int = 0,
                 warmup: float = 0.25) -> MixRun:
    """Simulate `requests` requests of `mix` (module doc). Without a rate or concurrency: a closed
    loop of max_num_seqs clients (saturated)."""
    rng = np.random.default_rng(seed)
    prompt = _lengths(rng, mix.input_tokens, requests, "input_tokens", 1)
    output = _lengths(rng, mix.output_tokens, requests, "output_tokens", 1)
    eng = _Engine(cost, lim, prompt, output)
    arrival = np.full(requests, np.nan)
    events: list[tuple[float, int, str, int]] = []
    seq = requests  # event ids after the request ids: steps
    if mix.request_rate is not None:
        times = np.cumsum(rng.exponential(1.0 / mix.request_rate, size=requests))
        for q, t in enumerate(times):
            heapq.heappush(events, (float(t), q, "arrive", q))
        created = requests
    else:
        clients = min(requests, mix.concurrency if mix.concurrency is not None else lim.max_num_seqs)
        for q in range(clients):
            heapq.heappush(events, (0.0, q, "arrive", q))
        created = clients
    while events:
        now, _, kind, x = heapq.heappop(events)
        if kind == "arrive":
            arrival[x] = now
            eng.waiting.append(x)
        else:
            for _ in eng.returned(now, x):
                if mix.request_rate is None and created < requests:
                    arrival[created] = now
                    eng.waiting.append(created)
                    created += 1
        while eng.flying < lim.in_flight:
            items = eng.build()
            if not items:
                break
            eng.launch(now, items, events, seq)
            seq += 1
    return _measure(eng, arrival, warmup)


def _measure(eng: _Engine, arrival: np.ndarray, warmup: float) -> MixRun:
    order = np.sort(arrival)
    t0, t1 = float(order[int(warmup * (len(order) - 1))]), float(order[-1])
    if t1 <= t0:
        raise InputError("simulate_mix: too few requests for a steady window")
    tok = np.array(eng.tokens)
    inside = (tok[:, 0] > t0) & (tok[:, 0] <= t1)
    out, pre = float(tok[inside, 1].sum()), float(tok[inside, 2].sum())
    first, finish, output = np.array(eng.first), np.array(eng.finish), np.array(eng.output)
    sel = (arrival >= t0) & (arrival <= t1) & np.isfinite(finish)
    ttft = first[sel] - arrival[sel]
    many = sel & (output > 1)
    tpot = (finish[many] - first[many]) / (output[many] - 1)
    ends = np.isfinite(finish) & (finish > t0) & (finish <= t1)
    span = t1 - t0
    came = float(((arrival > t0) & (arrival <= t1)).sum())
    return MixRun(out / span, (out + pre) / span, float(tpot.mean()), float(ttft.mean()), float(ends.sum()) / span,
                  int(sel.sum()), came / span)
