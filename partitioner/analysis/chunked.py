"""Steady-state serving of a request mix under chunked prefill over a pipeline (closed form).

The engine (vLLM 0.33.0): `Scheduler.schedule` (vllm/v1/core/sched/scheduler.py) fills one step
under a token budget C (`max_num_batched_tokens`): running requests first, in admission order,
each num_tokens - num_computed_tokens (one token when decoding, the rest of its prompt capped by
what is left of C when prefilling; num_computed_tokens advances at schedule time, so a prompt's
next chunk goes into the next step while a decoding request whose step is in flight gets none),
then waiting requests while fewer than N = `max_num_seqs` requests run in all.
`EngineCore.step_with_batch_queue` (vllm/v1/engine/core.py) keeps K steps in flight and schedules
the next step whenever the oldest returns. The step that finishes a prompt samples its first
token; each later step of the request samples one more.

Step costs (`StepCost`): stage s takes a_s + b_s·n_d + p_s·n_p for a step of n_d decode and n_p
prefill tokens, hop s takes e_s + q_s·(n_d + n_p), and the return d_ret. Per step r requests
start (fluid): n_d = r·(O - 1) decode tokens and prompts of mean I; h = max(1, I / (C - n_d)).

- concurrency M (closed loop, zero think time): n = min(M, N) run, r = n·P / (K·(first + (O - 1)·P)),
  unless the budget binds (n_d + n_p > C): then r = C / (O - 1 + I);
- request rate λ: r = λ·P / K, a fixed point; overloaded when the budget is exceeded or more
  than N would run.

P, the mean time a step takes to come back, is a step's mean round trip in the circulation of
the K steps (partitioner.analysis.circulation: prompt steps are many decode steps long and hold
the steps behind them on every stage), and at least the fluid cycle of the mean step,
max(K·τ_max, Στ + Σd + d_ret) at n_p = r·I, lifted towards exact mean value analysis of the
cyclic network with exponential stations (Reiser & Lavenberg 1980) by the weight v/(1 + v), v
the squared coefficient of variation of the bottleneck's step time (prompts per step Poisson:
Var n_p = r·E[I²], capped by Bhatia-Davis at n_p·(C - n_d - n_p)): frequent small prompts queue
there. The results are requests/s X = K·r/P, output tokens/s X·O, total tokens/s X·(I + O), and
TPOT = P, which is vLLM's benchmark definition (latency - TTFT)/(output - 1)
(vllm/benchmarks/serve.py `calculate_metrics`): a request's tokens after the first come one per
round trip. At most n steps fly with n requests (K is min(K, n) in the closed loop). Decode only
(I = 0) is the closed-loop decode period.

TTFT = wait + first, first per prompt length (`_Circ.first`): the round trip of the step carrying
it (circulation.tagged_trip, or the mean step's P plus the prompt's tokens on the bottleneck, on
the other stages and hops as far as the round trip binds, and half-way to all of them on the
stages after the bottleneck: `_Circ._mean_step_own`; whichever is larger), plus the time the step launched before it still holds the first stage; a prompt cut
into h > 1 chunks trails its first chunk's full step by h - 2 full steps' bottleneck time and its
last chunk's last-stage time. wait: the budget queue (prompts first come first served for C - n_d
tokens a step: M/G/1, Pollaczek-Khinchine); clients beyond the N slots, (M - N)/X (Little's law;
with the budget binding M/X - (O - 1)·P); at a rate also the mean residual to the next step
launch (circulation.launch_residual: returns come bunched behind prompt steps) and the wait for a
free request slot (Erlang C over max_num_seqs slots, Allen-Cunneen factor for the holding times'
spread). Checked against the event-driven simulator `partitioner.simulate.chunked`
(tests/test_chunked_agreement.py, benchmarks/mix_agreement.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from partitioner.analysis.circulation import ahead, circulation, launch_residual, step_tokens, tagged_trip
from partitioner.analysis.queues import budget_wait, mva_cycle, slot_wait
from partitioner.errors import InputError

__all__ = ["StepCost", "RequestMix", "EngineLimits", "MixServing", "steady_state", "histogram"]

Histogram = tuple[tuple[int, float], ...]  # (tokens, weight) pairs, weights summing to 1


def histogram(value: float | Mapping[int, float] | Histogram, field: str) -> Histogram:
    """A mean (one bin) or a {tokens: weight} table as normalised (tokens, weight) pairs."""
    if isinstance(value, Mapping):
        pairs = tuple((int(k), float(v)) for k, v in sorted(value.items()))
    elif isinstance(value, tuple):
        pairs = tuple((int(k), float(v)) for k, v in value)
    else:
        pairs = ((round(float(value)), 1.0),)
    total = sum(w for _, w in pairs)
    if not pairs or total <= 0 or any(k < 0 or w < 0 for k, w in pairs):
        raise InputError(f"{field}: needs tokens >= 0 and positive weights (got {value!r})")
    return tuple((k, w / total) for k, w in pairs)


@dataclass(frozen=True)
class StepCost:
    """One engine step's time per stage, affine in its tokens (module doc). Seconds."""

    base_s: tuple[float, ...]  # a_s
    per_seq_s: tuple[float, ...]  # b_s: per decode token
    per_token_s: tuple[float, ...]  # p_s: per prefill token
    hop_s: tuple[float, ...] = ()  # e_s, S - 1 hops
    hop_per_token_s: tuple[float, ...] = ()  # q_s
    return_s: float = 0.0  # d_ret

    def __post_init__(self) -> None:
        S = len(self.base_s)
        if S == 0 or len(self.per_seq_s) != S or len(self.per_token_s) != S:
            raise InputError("StepCost: base_s, per_seq_s and per_token_s need one entry per stage")
        for name in ("hop_s", "hop_per_token_s"):
            if len(getattr(self, name)) not in (0, S - 1):
                raise InputError(f"StepCost: {name} needs S - 1 = {S - 1} entries")

    @property
    def stages(self) -> int:
        return len(self.base_s)

    def stage_times(self, n_d: float, n_p: float) -> np.ndarray:
        return np.asarray(self.base_s) + np.asarray(self.per_seq_s) * n_d + np.asarray(self.per_token_s) * n_p

    def hop_times(self, n_d: float, n_p: float) -> np.ndarray:
        e = np.asarray(self.hop_s or [0.0] * (self.stages - 1))
        q = np.asarray(self.hop_per_token_s or [0.0] * (self.stages - 1))
        return e + q * (n_d + n_p)

    def period(self, K: int, n_d: float, n_p: float) -> float:
        """P = max(K·max stage, round trip) of steps of n_d decode and n_p prefill tokens."""
        tau = self.stage_times(n_d, n_p)
        return max(K * float(tau.max()), float(tau.sum() + self.hop_times(n_d, n_p).sum()) + self.return_s)

    def _affine_terms(self, K: int, dn_d: float, dn_p: float) -> list[tuple[float, float]]:
        """The terms of P's max as (c0, c1) in c0 + c1·x for n_d = dn_d·x, n_p = dn_p·x."""
        a, b, p = (np.asarray(v) for v in (self.base_s, self.per_seq_s, self.per_token_s))
        terms = [(K * float(a[s]), K * float(b[s] * dn_d + p[s] * dn_p)) for s in range(self.stages)]
        e, q = self.hop_times(0.0, 0.0), self.hop_times(1.0, 0.0) - self.hop_times(0.0, 0.0)
        c0 = float(a.sum() + e.sum()) + self.return_s
        c1 = float((b * dn_d + p * dn_p).sum() + q.sum() * (dn_d + dn_p))
        return [*terms, (c0, c1)]


@dataclass(frozen=True)
class RequestMix:
    """The workload's requests: prompt and output lengths, and the load (rate or concurrency)."""

    input_tokens: Histogram
    output_tokens: Histogram
    request_rate: float | None = None  # requests/s, Poisson arrivals
    concurrency: int | None = None  # clients, each sending its next request when one ends

    @property
    def mean_input(self) -> float:
        return math.fsum(k * w for k, w in self.input_tokens)

    @property
    def second_input(self) -> float:
        """E[I²]: the spread of prompt lengths makes steps uneven."""
        return math.fsum(k * k * w for k, w in self.input_tokens)

    @property
    def var_output(self) -> float:
        mean = self.mean_output
        return math.fsum(w * (k - mean) ** 2 for k, w in self.output_tokens)

    @property
    def mean_output(self) -> float:
        return math.fsum(k * w for k, w in self.output_tokens)


@dataclass(frozen=True)
class EngineLimits:
    """The engine's scheduling numbers: K steps in flight, N running requests, C tokens a step."""

    in_flight: int
    max_num_seqs: int
    token_budget: int


@dataclass(frozen=True)
class MixServing:
    """Steady-state numbers of a request mix (SI units)."""

    tpot_s: float
    ttft_s: float
    output_tokens_per_s: float
    total_tokens_per_s: float
    requests_per_s: float
    running: float  # mean requests holding a slot
    decode_tokens_per_step: float
    prefill_tokens_per_step: float
    prefill_steps: float  # h
    binding: str  # "concurrency" | "max_num_seqs" | "token_budget" | "rate" | "overloaded"


def _prefill_steps(n_in: float, C: float, n_d: float) -> float:
    return 1.0 if n_in <= 0 else max(1.0, n_in / max(C - n_d, 1e-9))


def _step_scv(cost: StepCost, tau: np.ndarray, r: float, n_in2: float, C: float, n_d: float, n_p: float) -> float:
    """Squared coefficient of variation of the bottleneck's step time: prompts per step are
    Poisson (variance r·E[I²] of n_p), capped by Bhatia-Davis for n_p in [0, C - n_d]."""
    var = min(r * n_in2, n_p * max(C - n_d - n_p, 0.0))
    b = int(tau.argmax())
    return min(1.0, float(cost.per_token_s[b]) ** 2 * var / float(tau[b]) ** 2)


def _fluid_cycle(cost: StepCost, K: int, r: float, mix: RequestMix, C: float) -> float:
    """P of the mean step, lifted towards exact MVA by the step times' spread (module doc)."""
    n_d, n_p = r * (mix.mean_output - 1.0), r * mix.mean_input
    tau = cost.stage_times(n_d, n_p)
    delay = float(cost.hop_times(n_d, n_p).sum()) + cost.return_s
    det = max(K * float(tau.max()), float(tau.sum()) + delay)
    if K == 1 or n_p <= 0:
        return det
    scv = _step_scv(cost, tau, r, mix.second_input, C, n_d, n_p)
    return det + scv / (1.0 + scv) * max(0.0, mva_cycle(tau, delay, K) - det)


class _Circ:
    """The steps at r requests a step: P and a prompt's first-token time (module doc)."""

    def __init__(self, cost: StepCost, K: int, r: float, mix: RequestMix, C: float) -> None:
        self.cost, self.K, self.n_d = cost, K, r * (mix.mean_output - 1.0)
        self.n_p = r * mix.mean_input
        self.cap = max(C - self.n_d, 1.0)
        self.tau0 = cost.stage_times(self.n_d, 0.0)
        self.p = np.asarray(cost.per_token_s, dtype=float)
        q = cost.hop_times(1.0, 0.0) - cost.hop_times(0.0, 0.0)
        self.trip0 = float(self.tau0.sum() + cost.hop_times(self.n_d, 0.0).sum()) + cost.return_s
        self.rho = float(self.p.sum() + q.sum())
        sizes = np.array([k for k, _ in mix.input_tokens], dtype=float)
        weights = np.array([w for _, w in mix.input_tokens])
        self.X = step_tokens(r, sizes, weights, self.cap)
        self.blocking = ahead(K, self.trip0, self.rho, self.X, self.tau0) if K > 1 else None
        self.P = max(circulation(K, self.tau0, self.p, self.trip0, self.rho, self.X), _fluid_cycle(cost, K, r, mix, C))

    def _mean_step_own(self, k: np.ndarray) -> np.ndarray:
        """Prompts of k tokens in the mean step: the cycle P plus their tokens on the bottleneck,
        on the earlier stages and hops as far as the round trip binds (share R/P), and on the later
        ones half-way between that share and all of it (past the bottleneck the step ahead is one
        bottleneck step ahead, which absorbs part: an interpolation matched to the simulator),
        less the prefill they displace when the budget is full."""
        tau = self.cost.stage_times(self.n_d, self.n_p)
        b = int(tau.argmax())
        q = self.cost.hop_times(1.0, 0.0) - self.cost.hop_times(0.0, 0.0)
        p_b, after = float(self.p[b]), float(self.p[b + 1:].sum() + q[b:].sum())
        trip = float(tau.sum() + self.cost.hop_times(self.n_d, self.n_p).sum()) + self.cost.return_s
        share = min(1.0, trip / self.P)
        spare = 1.0 - min(1.0, self.n_p / self.cap)
        extra = p_b + (1.0 + share) / 2.0 * after + share * (self.rho - p_b - after)
        return self.P + k * spare * extra

    def first(self, mix: RequestMix) -> float:
        """Mean time from a prompt's first launch to its first token. One chunk (h = 1): the round
        trip of its step, the larger of the circulation's (tagged_trip) and the mean step's. A cut
        prompt (h > 1): vLLM schedules a running prompt's next chunk in the next step, so the
        chunks trail the first (a full step) one full step's bottleneck time apart, and the last
        adds its own last-stage time."""
        full = max(self.P / self.K, float(np.max(self.tau0 + self.p * self.cap)))
        k = np.array([k for k, _ in mix.input_tokens], dtype=float)
        w = np.array([w for _, w in mix.input_tokens])
        h = np.maximum(1.0, np.ceil(k / self.cap))
        last = k - (h - 1.0) * self.cap
        head = np.where(h > 1.0, self.cap, last)
        trip = tagged_trip(self.K, self.tau0, self.p, self.trip0, self.rho, self.X, head, self.cap, self.blocking)
        trip = np.maximum(trip, self._mean_step_own(head))
        trail = np.where(h > 1.0, (h - 2.0) * full + self.tau0[-1] + self.p[-1] * last, 0.0)
        # the step launched just before is still on the first stage when its time there exceeds
        # the launch spacing Δ (circulation.ahead): the prompt's step waits that much before it starts
        first_stage = self.tau0[0] + self.p[0] * self.X.x
        start = float(self.X.pmf @ np.maximum(0.0, first_stage - float(self.tau0.max()))) if self.K > 1 else 0.0
        return float(w @ (trip + trail)) + start


def _closed(cost: StepCost, mix: RequestMix, lim: EngineLimits, M: float) -> MixServing:
    N, C = lim.max_num_seqs, float(lim.token_budget)
    n_in, n_in2, n_out = mix.mean_input, mix.second_input, mix.mean_output
    n = min(M, N)
    K = max(1, min(lim.in_flight, int(n)))  # a request is in one step at a time: at most n steps fly
    binding = "concurrency" if M <= N else "max_num_seqs"
    r, P, first = 0.0, cost.period(K, 0.0, 0.0), 0.0
    for _ in range(200):  # r, P and the TTFT depend on each other: a damped fixed point
        hold = first + (n_out - 1.0) * P  # a request's time in the engine: its TTFT plus n_out - 1 cycles
        r_new = n * P / (K * hold) if hold > 0 else C
        if r_new * (n_out - 1.0 + n_in) >= C:
            r_new, binding = C / (n_out - 1.0 + n_in), "token_budget"
        r_old, r = r, (0.5 * (r + r_new) if r else r_new)
        circ = _Circ(cost, K, r, mix, C)
        P = circ.P
        wait = 0.0 if binding == "token_budget" else budget_wait(r, n_in, n_in2, C, circ.n_d, K, P)
        first = wait + circ.first(mix)
        if abs(r - r_old) <= 1e-9 * r:
            break
    X = K * r / P
    # clients beyond the slots queue: Little's law over them, (M - N)/X; with the budget binding,
    # prompts also queue in the engine: M/X less the decode time
    ttft = M / X - (n_out - 1.0) * P if binding == "token_budget" else first + max(0.0, M - N) / X
    return MixServing(P, ttft, X * n_out, X * (n_out + n_in), X, min(n, X * (first + (n_out - 1.0) * P)),
                      r * (n_out - 1.0), r * n_in, _prefill_steps(n_in, C, r * (n_out - 1.0)), binding)


def _open(cost: StepCost, mix: RequestMix, lim: EngineLimits, rate: float) -> MixServing | None:
    K, C = lim.in_flight, float(lim.token_budget)
    n_in, n_in2, n_out = mix.mean_input, mix.second_input, mix.mean_output
    P = cost.period(K, 0.0, 0.0)
    for _ in range(200):  # P = cycle(rate·P/K): increasing in P; diverges when overloaded
        r = rate * P / K
        if r * (n_out - 1.0 + n_in) > C:
            return None
        P_new = _Circ(cost, K, r, mix, C).P
        if abs(P_new - P) <= 1e-12 * P_new:
            break
        P = P_new
    else:
        return None
    r = rate * P / K
    circ = _Circ(cost, K, r, mix, C)
    n_d, n_p = r * (n_out - 1.0), r * n_in
    scv = _step_scv(cost, cost.stage_times(n_d, n_p), r, n_in2, C, n_d, n_p)
    launch = max(P / (2 * K) * (1.0 + scv),  # mean residual time to the next step launch
                 launch_residual(K, circ.tau0, circ.p, circ.trip0, circ.rho, circ.X))
    first = launch + budget_wait(r, n_in, n_in2, C, n_d, K, P) + circ.first(mix)
    hold = first + (n_out - 1.0) * P  # a slot's holding time
    running = rate * hold
    if not math.isfinite(first) or running >= lim.max_num_seqs:
        return None
    queue = slot_wait(rate, hold, (P * P * mix.var_output) / (hold * hold), lim.max_num_seqs)
    return MixServing(P, first + queue, rate * n_out, rate * (n_out + n_in), rate, running, n_d, n_p,
                      _prefill_steps(n_in, C, n_d), "rate")


def steady_state(cost: StepCost, mix: RequestMix, lim: EngineLimits) -> MixServing:
    """Serving numbers of `mix` on a pipeline of step costs `cost` under the engine's limits
    (module doc). Without a rate or concurrency: saturated (every slot busy). A rate above
    capacity gives the saturated numbers with TTFT = inf and binding "overloaded"."""
    if lim.in_flight < 1 or lim.max_num_seqs < 1 or lim.token_budget < 1:
        raise InputError(f"engine limits must be >= 1 (got {lim})")
    n_out = mix.mean_output
    if n_out < 1:
        raise InputError(f"output_tokens must average >= 1 (got {n_out:g})")
    if mix.request_rate is not None:
        if mix.request_rate <= 0:
            raise InputError(f"request_rate must be > 0 (got {mix.request_rate:g})")
        got = _open(cost, mix, lim, mix.request_rate)
        if got is not None:
            return got
        full = _closed(cost, mix, lim, float(lim.max_num_seqs))
        return MixServing(full.tpot_s, math.inf, full.output_tokens_per_s, full.total_tokens_per_s,
                          full.requests_per_s, full.running, full.decode_tokens_per_step,
                          full.prefill_tokens_per_step, full.prefill_steps, "overloaded")
    if mix.concurrency is None:  # saturated: every slot busy
        full = _closed(cost, mix, lim, float(lim.max_num_seqs))
        return full if full.binding == "token_budget" else replace(full, binding="max_num_seqs")
    if mix.concurrency < 1:
        raise InputError(f"concurrency must be >= 1 (got {mix.concurrency})")
    return _closed(cost, mix, lim, float(mix.concurrency))
