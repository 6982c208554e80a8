"""The planning problem as plain arrays, and the exact scoring of a candidate plan.

This module is the contract between the cost model (`partitioner.costs`), which fills a
`CostTables`, and the solvers (`partitioner.solvers`), which read a `Problem` and return a
`Solution`. Everything here is pure: numpy arrays and frozen dataclasses, no I/O.

Notation (docs/algorithms.md): layers 0..L-1, devices g = 0..G-1.
A plan is a sequence of distinct devices g_0..g_{S-1} and cut points
0 = e_0 < e_1 < ... < e_S = L; stage s holds layers [e_s, e_{s+1}) on g_s.

    tau_s   = sum_{l in [e_s, e_{s+1})} c[g_s][l]
    d_s     = alpha(g_s, g_{s+1}) + b[e_{s+1} - 1] / beta(g_s, g_{s+1})      (s < S-1)
    sigma_s = tau_s + d_s (s < S-1),  sigma_{S-1} = tau_{S-1}               (Thm 3)
    T_async = (M-1) tau_max + sum tau + sum d                               (Thm 2)
    T_block = (M-1) sigma_max + sum sigma                                   (Thm 3)
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from partitioner.errors import InputError
from partitioner.registry import OBJECTIVES, ORDERS, REGIMES

__all__ = [
    "select_rows",
    "CostTables",
    "capped_note",
    "Problem",
    "Solution",
    "Metrics",
    "REGIMES",
    "OBJECTIVES",
    "ORDERS",
    "RTOL",
    "stage_memory",
    "link_delay",
    "evaluate",
    "objective_key",
    "lex_compare",
    "check_structure",
    "explain_infeasible",
]

Regime = Literal["async", "blocking"]
Objective = Literal["balanced", "throughput", "makespan", "serve"]
Order = Literal["free", "fixed"]
# The name lists live in partitioner.registry. "serve" is an outer search over (batch, in_flight)
# (partitioner.serving.search) that calls the exact solvers on "throughput" problems; a Problem
# given "serve" becomes "throughput".
RTOL = 1e-9  # relative tolerance for comparing objective values


@dataclass(frozen=True, eq=False)
class CostTables:
    """Per-layer, per-device numbers (docs/costmodel.md). Units: seconds, GB (1e9 bytes), bytes, bytes/s.

    cost[g, l]        seconds per micro-batch of layer l on device g  (c[g][l])
    memory_gb[l]      GB layer l needs on any device                  (m[l])
    cut_bytes[l]      activation bytes sent on if the pipeline is cut after l (b[l])
    capacity_gb[g]    usable memory of device g: memory minus reserve (C_g)
    latency_s[g, h]   link latency alpha from g to h, seconds
    bandwidth_Bps[g, h] link bandwidth beta from g to h, bytes/s (inf: free)
    tied_gb           memory counted on both ends (tied embedding + LM head) that is
                      saved when layer 0 and layer L-1 share one stage
    layer_kinds[l]    "embed", "decoder" or "head" (engine exports count decoder layers)
    params[l]         parameter count of layer l (DeepSpeed's `parameters` balance)

    Serving (closed-loop decode, partitioner.serving; all optional, defaults keep old tables):
    weight_gb[l]      the part of memory_gb[l] that is not KV cache (weights + workspace);
                      memory_gb = weight_gb + kv_bytes_per_token·context·batch·in_flight / 1e9
    kv_bytes_per_token[l]  KV-cache bytes one token of one sequence holds in layer l
    context           KV positions held per sequence; batch B, in_flight K of the workload
    prefill_cost[g, l], prefill_cut_bytes[l]  one prompt of `prompt_tokens` tokens (TTFT)
    return_bytes      bytes of one micro-batch's sampled tokens sent back to stage 0
    kv_pool           the engine's KV-pool sizing (partitioner.costs.kvpool.KVPool, with the
                      resolved EngineSettings as kv_pool.settings) under engine vllm / sglang /
                      llamacpp; then capacity_gb and weight_gb are the engine's view (costs/tables.py)
    phase, request_mix, token_budget, engine_id  the workload's phase and request mix, the
                      engine's tokens per step and its id (serving.score: chunked prefill)
    schedule          the engine's scheduling settings (async scheduling, the user's max_num_seqs)
    gpus_per_row[g]   GPUs row g stands for (a tensor-parallel group's size); () = 1 each
    """

    cost: np.ndarray
    memory_gb: np.ndarray
    cut_bytes: np.ndarray
    capacity_gb: np.ndarray
    latency_s: np.ndarray
    bandwidth_Bps: np.ndarray
    layer_names: tuple[str, ...]
    device_names: tuple[str, ...]
    gpu_names: tuple[str, ...]
    node_names: tuple[str, ...]
    layer_kinds: tuple[str, ...] = ()
    params: np.ndarray | None = None
    tied_gb: float = 0.0
    model_name: str = ""
    weight_gb: np.ndarray | None = None
    kv_bytes_per_token: np.ndarray | None = None
    context: int = 0
    batch: int = 1
    in_flight: int = 1
    prefill_cost: np.ndarray | None = None
    prefill_cut_bytes: np.ndarray | None = None
    prompt_tokens: int = 0
    return_bytes: float = 0.0
    kv_pool: Any = None  # partitioner.costs.kvpool.KVPool: the engine's KV-pool sizing (None: free-memory model)
    phase: str = "decode"
    request_mix: Any = None  # partitioner.analysis.chunked.RequestMix: the workload's input/output tokens
    token_budget: int = 0  # tokens per engine step (chunked prefill; serving.engine_sched)
    engine_id: str = "generic"
    gpus_per_row: tuple[int, ...] = ()
    schedule: Any = None  # serving.engine_sched.EngineSchedule: the engine's scheduling settings (None: engine_id's defaults)

    def gpus(self, rows: tuple[int, ...]) -> int:
        """GPUs the rows `rows` stand for (group sizes; one each without groups)."""
        return sum(self.gpus_per_row[g] for g in rows) if self.gpus_per_row else len(rows)

    def __post_init__(self) -> None:
        G, L = np.shape(self.cost)
        optional = {"weight_gb": (L,), "kv_bytes_per_token": (L,), "prefill_cost": (G, L), "prefill_cut_bytes": (L,)}
        for name, want in optional.items():
            value = getattr(self, name)
            if value is not None and np.shape(value) != want:
                raise InputError(f"CostTables.{name} has shape {np.shape(value)}, expected {want}")
        checks = {
            "memory_gb": (np.shape(self.memory_gb), (L,)),
            "cut_bytes": (np.shape(self.cut_bytes), (L,)),
            "capacity_gb": (np.shape(self.capacity_gb), (G,)),
            "latency_s": (np.shape(self.latency_s), (G, G)),
            "bandwidth_Bps": (np.shape(self.bandwidth_Bps), (G, G)),
        }
        for name, (got, want) in checks.items():
            if got != want:
                raise InputError(f"CostTables.{name} has shape {got}, expected {want}")
        if len(self.layer_names) != L or len(self.device_names) != G:
            raise InputError(
                f"CostTables names: {len(self.layer_names)} layers / {len(self.device_names)} "
                f"devices for a cost table of shape {(G, L)}"
            )
        if L == 0 or G == 0:
            raise InputError(f"CostTables needs at least one layer and one device (got {(G, L)})")

    @property
    def G(self) -> int:
        return int(self.cost.shape[0])

    @property
    def L(self) -> int:
        return int(self.cost.shape[1])

    @property
    def kinds(self) -> tuple[str, ...]:
        return self.layer_kinds or ("decoder",) * self.L


@dataclass(frozen=True, eq=False)
class Problem:
    """A `CostTables` plus what the user asked for."""

    tables: CostTables
    M: int = 8
    regime: Regime = "async"
    objective: Objective = "balanced"
    order: Order = "free"
    time_limit_s: float | None = None
    max_stages: int | None = None  # at most this many stages (one device each); None: no cap

    def __post_init__(self) -> None:
        if isinstance(self.M, bool) or not isinstance(self.M, (int, np.integer)) or self.M < 1:
            raise InputError(f"M must be an integer >= 1 (got {self.M!r})")
        ms = self.max_stages
        if ms is not None and (isinstance(ms, bool) or not isinstance(ms, (int, np.integer)) or ms < 1):
            raise InputError(f"max_stages must be an integer >= 1 (got {ms!r})")
        from partitioner.limits import exceeded, limit

        if limit("MAX_MICROBATCHES") < self.M:  # beyond it T(M) overflows the solvers' integer ticks
            raise InputError(f"M = {self.M}: " + exceeded("MAX_MICROBATCHES", "the number of micro-batches"))
        for name, value, allowed in (
            ("regime", self.regime, REGIMES),
            ("objective", self.objective, OBJECTIVES),
            ("order", self.order, ORDERS),
        ):
            if value not in allowed:
                raise InputError(f"{name} must be one of {', '.join(allowed)} (got {value!r})")
        if self.objective == "serve":
            # for one (batch, in_flight) the serve objective's inner problem is the throughput one
            # (partitioner.serving.search); solvers only ever see the latter
            object.__setattr__(self, "objective", "throughput")

    @property
    def G(self) -> int:
        return self.tables.G

    @property
    def L(self) -> int:
        return self.tables.L


@dataclass(frozen=True)
class Solution:
    """What every solver returns (`solve(problem) -> Solution`).

    `objective` is `objective_key(problem, metrics)` of this plan; `lower_bound` bounds its
    first component from below (equal to it when `optimal`). A baseline that breaks a memory
    limit has `feasible=False` and says why in `reason`; it is never silently repaired.
    """

    devices: tuple[int, ...]
    cuts: tuple[int, ...]
    solver: str
    optimal: bool
    objective: tuple[float, ...]
    lower_bound: float
    status: str = "OPTIMAL"
    feasible: bool = True
    reason: str = ""
    wall_time_s: float = 0.0
    stats: tuple[tuple[str, float], ...] = field(default_factory=tuple)

    @property
    def gap(self) -> float:
        """Relative gap between the first objective component and its lower bound."""
        top = self.objective[0] if self.objective else 0.0
        if top <= 0:
            return 0.0
        return max(0.0, (top - self.lower_bound) / top)


@dataclass(frozen=True, eq=False)
class Metrics:
    """Exact per-stage numbers of one plan (recomputed from scratch, never incrementally)."""

    tau: np.ndarray
    d: np.ndarray
    sigma: np.ndarray
    memory_gb: np.ndarray
    capacity_gb: np.ndarray
    M: int
    max_stages: int | None = None  # the problem's stage cap: more stages do not fit

    @property
    def tau_max(self) -> float:
        return float(self.tau.max())

    @property
    def sigma_max(self) -> float:
        return float(self.sigma.max())

    @property
    def fits(self) -> bool:
        if self.max_stages is not None and len(self.tau) > self.max_stages:
            return False
        return bool(np.all(self.memory_gb <= self.capacity_gb * (1 + RTOL) + 1e-12))

    @property
    def T_async(self) -> float:
        """Thm 2: (M-1) tau_max + sum tau + sum d."""
        return (self.M - 1) * self.tau_max + float(self.tau.sum() + self.d.sum())

    @property
    def T_block(self) -> float:
        """Thm 3: (M-1) sigma_max + sum sigma."""
        return (self.M - 1) * self.sigma_max + float(self.sigma.sum())


def stage_memory(tables: CostTables, i: int, j: int) -> float:
    """GB that layers [i, j) need on one device; tied embeddings counted once if both ends are here."""
    mem = float(np.sum(tables.memory_gb[i:j]))
    if i == 0 and j == tables.L and tables.tied_gb:
        mem -= tables.tied_gb
    return mem


def link_delay(tables: CostTables, g: int, h: int, last_layer: int) -> float:
    """d = alpha(g, h) + b[last_layer] / beta(g, h): the cost of a cut after `last_layer` (docs/costmodel.md)."""
    beta = tables.bandwidth_Bps[g, h]
    transfer = 0.0 if np.isinf(beta) else float(tables.cut_bytes[last_layer]) / float(beta)
    return float(tables.latency_s[g, h]) + transfer


def check_structure(problem: Problem, devices: tuple[int, ...], cuts: tuple[int, ...]) -> None:
    """Raise InputError unless (devices, cuts) is a structurally valid plan for `problem`."""
    S, L, G = len(devices), problem.L, problem.G
    if S == 0 or len(cuts) != S + 1:
        raise InputError(f"a plan needs S >= 1 devices and S+1 cuts (got {devices}, {cuts})")
    if cuts[0] != 0 or cuts[-1] != L or any(a >= b for a, b in itertools.pairwise(cuts)):
        raise InputError(f"cuts must rise strictly from 0 to L={L} (got {list(cuts)})")
    if len(set(devices)) != S or any(not 0 <= g < G for g in devices):
        raise InputError(f"devices must be distinct indices in [0, {G}) (got {list(devices)})")
    if problem.order == "fixed" and list(devices) != sorted(devices):
        raise InputError(f"order is fixed but devices are not in listed order (got {list(devices)})")


def evaluate(problem: Problem, devices: tuple[int, ...], cuts: tuple[int, ...]) -> Metrics:
    """Score a plan exactly: tau, d, sigma and memory of every stage (formulas in the module doc)."""
    check_structure(problem, devices, cuts)
    t = problem.tables
    S = len(devices)
    tau = np.array([float(np.sum(t.cost[g, cuts[s]:cuts[s + 1]])) for s, g in enumerate(devices)])
    d = np.array([link_delay(t, devices[s], devices[s + 1], cuts[s + 1] - 1) for s in range(S - 1)])
    sigma = tau.copy()
    sigma[:-1] += d
    mem = np.array([stage_memory(t, cuts[s], cuts[s + 1]) for s in range(S)])
    cap = np.array([float(t.capacity_gb[g]) for g in devices])
    return Metrics(tau=tau, d=d.reshape(S - 1), sigma=sigma, memory_gb=mem, capacity_gb=cap, M=int(problem.M),
                   max_stages=problem.max_stages)


def objective_key(problem: Problem, m: Metrics) -> tuple[float, ...]:
    """The lexicographic objective (docs/algorithms.md §1), smaller is better.

    balanced:   (tau_max, sigma_max, T(M))
    throughput: (period, T(M)), period = tau_max (async) or sigma_max (blocking); also the key
                of "serve" for a fixed (batch, in_flight), the search's inner problem
    makespan:   (T(M),)
    with T from Thm 2 (async) or Thm 3 (blocking).
    """
    T = m.T_async if problem.regime == "async" else m.T_block
    if problem.objective == "balanced":
        return (m.tau_max, m.sigma_max, T)
    if problem.objective in ("throughput", "serve"):  # serve: the search's inner problem
        return (m.tau_max if problem.regime == "async" else m.sigma_max, T)
    return (T,)


def lex_compare(a: tuple[float, ...], b: tuple[float, ...], rtol: float = RTOL) -> int:
    """-1, 0 or 1 as a <, ==, > b lexicographically, each component equal within `rtol`."""
    for x, y in zip(a, b, strict=False):
        if abs(x - y) <= max(rtol * max(abs(x), abs(y)), 1e-12):
            continue
        return -1 if x < y else 1
    return 0


def capped_note(problem: Problem) -> str:
    """"" or the stage cap an infeasible problem was solved under (said after `explain_infeasible`)."""
    return "" if problem.max_stages is None else f"; with at most {problem.max_stages} stage(s)"
def _split(tables: CostTables, need: float, have: float) -> str:
    """`` (weights W GB + KV cache K GB) but ...; nearest fix: ...``: what to change first. The
    KV cache scales with batch x in_flight, so the largest batch whose KV fits beside the weights
    is named; weights alone too large: quantize (int4 is about a quarter of bf16) or add GPUs."""
    tail = f" but the cluster has {have:.2f} GB usable in all"
    if tables.weight_gb is None or tables.kv_bytes_per_token is None:
        return tail
    weights = float(tables.weight_gb.sum()) - (tables.tied_gb if tables.L > 1 else 0.0)
    kv = max(need - weights, 0.0)
    seqs = tables.batch * tables.in_flight
    per_seq = kv / seqs if seqs else 0.0
    out = f" (weights {weights:.2f} GB + KV cache {kv:.2f} GB for {seqs} sequence{'s' if seqs != 1 else ''})" + tail
    if weights < have and per_seq > 0:
        fit = int((have - weights) // per_seq)
        if fit >= 1:
            return out + (f"; nearest fix: at most {fit} sequences in flight fit beside the weights (a smaller "
                          "`batch:`), or a smaller `context:`, or `kv_cache: fp8`")
        return out + "; nearest fix: a smaller `context:` (not one sequence's KV cache fits beside the weights)"
    return out + ("; nearest fix: quantized weights (`weights: int4` needs about a quarter of bf16), or more GPUs "
                  f"(short by {weights - have:.2f} GB for the weights alone)")


def select_rows(t: CostTables, rows: list[int]) -> CostTables:
    """The tables restricted to `rows` (a sub-cluster of devices or of TP groups): per-row arrays
    sliced (the engine's KV pool too: it is sized per row), links by both ends."""
    ix = np.ix_(rows, rows)
    return dataclasses.replace(
        t, cost=t.cost[rows], capacity_gb=t.capacity_gb[rows], latency_s=t.latency_s[ix],
        bandwidth_Bps=t.bandwidth_Bps[ix], device_names=tuple(t.device_names[r] for r in rows),
        gpu_names=tuple(t.gpu_names[r] for r in rows), node_names=tuple(t.node_names[r] for r in rows),
        prefill_cost=None if t.prefill_cost is None else t.prefill_cost[rows],
        gpus_per_row=tuple(t.gpus_per_row[r] for r in rows) if t.gpus_per_row else (),
        kv_pool=None if t.kv_pool is None else t.kv_pool.select(rows),
    )


def explain_infeasible(tables: CostTables) -> str:
    """One line saying what the model needs and what the cluster offers (for exit code 3)."""
    need = float(tables.memory_gb.sum()) - (tables.tied_gb if tables.L > 1 else 0.0)
    have = float(tables.capacity_gb.clip(min=0).sum())
    worst = int(tables.memory_gb.argmax())
    biggest = int(tables.capacity_gb.argmax())
    if tables.memory_gb[worst] > tables.capacity_gb[biggest]:
        return (
            f"layer {tables.layer_names[worst]!r} needs {tables.memory_gb[worst]:.2f} GB but the largest "
            f"device {tables.device_names[biggest]!r} has {tables.capacity_gb[biggest]:.2f} GB usable"
            "; nearest fix: --tp auto (tensor parallelism splits a layer over the GPUs of a node), or "
            "quantized weights (model.yaml `weights: int4`)"
        )
    if need > have:
        return f"the model needs {need:.2f} GB{_split(tables, need, have)}"
    return (
        f"no split of the model ({need:.2f} GB) into contiguous stages fits the devices "
        f"({have:.2f} GB usable in all; layers cannot be divided)"
    )
