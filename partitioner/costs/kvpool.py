"""The KV-cache pool as each engine sizes it at start-up, per stage and per TP rank (pure).

Symbols (bytes per TP rank; a stage on a row of `tp` ranks holds layers [i, j)):

    M        engine-visible memory of the GPU (torch.cuda.mem_get_info()[1]: H100 80GB 79.19 GiB)
    u        gpu_memory_utilization (vLLM) / mem_fraction_static (SGLang)
    W        weights of the stage's layers / tp
    A        activation peak of the profiling run: T·(a_0 + a_1/tp), T = max_num_batched_tokens
    N        non-torch memory (NCCL buffers, custom all-reduce, cuBLAS workspaces): n_1 at TP 1; at TP >= 2
             n_t on NVLink/NVSwitch boards (NCCL's NVLS buffers), n_p on PCIe cards
    S        sampler / logits buffer of the profiling run, on the last PP rank only:
             max_num_seqs · V · 4 bytes (fp32 logits) · sampler_copies
    k        KV bytes per token of the stage's layers / tp;  b = block_size

vLLM, by the release's rule (presets/engines.yaml `pool_rules`, the newest rule whose first release
is <= the version; `peak_rule` below). Every rule sizes blocks = (u·M − peak) // block bytes per
worker and the engine takes the least over workers (vllm/executor/distributed_gpu_executor.py
`determine_num_available_blocks`, v0.4-v0.6; vllm/v1/engine/core.py `EngineCore._initialize_kv_caches`),
and refuses to start when one max_model_len request does not fit. The peak differs:

  torch_peak (v0.6.4+; vllm/worker/worker.py `Worker.determine_num_available_blocks` from PR 9352,
  vllm/v1/worker/gpu_worker.py `Worker.determine_available_memory`): torch's allocated peak of
  `profile_run` plus the non-torch memory measured apart;
  vllm/v1/core/kv_cache_utils.py `get_num_blocks`: blocks = available // page_size // num_layers:

    pool_s   = u·M − W − A − N − S·[s is last]

  free_memory (v0.2.5-v0.6.3; vllm/worker/worker.py read in the v0.2.5, v0.4.0.post1 and v0.5.3
  wheels: `profile_num_available_blocks` / `determine_num_available_blocks` empties torch's cache,
  runs vllm/worker/model_runner.py `profile_run` and takes peak = free memory before − after it,
  "before" being the total in v0.2.5 and `Worker.init_device`'s mem_get_info()[0] from v0.4):
  the same terms as torch_peak (what torch still reserves after the run, NCCL and cuBLAS buffers),
  on every PP rank but the first the empty IntermediateTensors of the profiled batch
  (`make_empty_intermediate_tensors`: hidden states and residual, T·2h·b_a), and before v0.4 at
  TP >= 2 the all-reduce inputs the caching allocator still holds (`allreduce_held`):
  vllm/model_executor/parallel_utils/communication_op.py `tensor_model_parallel_all_reduce` calls
  torch.distributed.all_reduce, which records its input on NCCL's stream, so the block is not reused
  until NCCL has run it; the CPU runs the whole forward ahead of the GPU, so every one of them, two
  per decoder layer of T·h·b_a, stays reserved (v0.4 sets TORCH_NCCL_AVOID_RECORD_STREAMS=1 in
  `Worker.init_device`, whose comment names this growth):

    pool_s   = u·M − W − A − I·[s is not first] − R − N − S·[s is last],   R = [held, tp >= 2] · n_s · T · 2h·b_a

  max_allocated (v0.2.0-v0.2.4; v0.2.4 wheel, vllm/worker/worker.py
  `Worker.profile_num_available_blocks`: peak = torch.cuda.max_memory_allocated() after `profile_run`,
  M = the device's total memory): torch's allocated tensors only, no non-torch term; freed all-reduce
  inputs no longer count as allocated even while NCCL holds them (vLLM PR 2031 replaced this rule
  because TP > 1 launches used more than gpu_memory_utilization):

    pool_s   = u·M − W − A − S·[s is last]

  blocks_s = floor(pool_s / (b·k)),   tokens = b · min_s blocks_s

SGLang (python/sglang/srt/model_executor/model_runner.py `ModelRunner.profile_max_num_token`,
v0.4: rest = available-after-load − total·(1 − f), tokens = rest // cell_size, cell_size = k):

    pool_s   = f·M − W − N,   tokens = min_s floor(pool_s / k)     (activations live in (1 − f)·M)

llama.cpp (src/llama-kv-cache.cpp `llama_kv_cache::llama_kv_cache`, b5000+: one buffer of n_ctx
cells on every device for its own layers; src/llama-context.cpp reserves the compute buffers for
n_ubatch tokens): tokens = ctx_size when n_ctx·k + W + A fits in M, else 0.

A calibrated `non_kv_bytes` (partition calibrate engine-log) replaces A + N + S of a device: what
one launch of the engine logged as its non-KV, non-weight memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from partitioner.costs.roofline import Shape, embed_params, head_params, kv_bytes_per_token, layer_params

__all__ = ["GiB", "EngineSettings", "StageMemory", "KVPool", "stage_memory", "plan_kv_tokens", "pool_for", "FLAGS",
           "version_tuple"]

GiB = float(1 << 30)

# The flags each engine's record may set (named as the engine's own CLI flags, dashes as underscores).
FLAGS: dict[str, tuple[str, ...]] = {
    "vllm": ("gpu_memory_utilization", "max_model_len", "max_num_batched_tokens", "max_num_seqs",
             "async_scheduling", "block_size"),
    "sglang": ("mem_fraction_static", "chunked_prefill_size", "max_running_requests", "context_length"),
    "llamacpp": ("ctx_size", "parallel", "batch_size", "ubatch_size"),
}


def version_tuple(version: str) -> tuple[int, ...]:
    """"0.6.5.dev" -> (0, 6, 5): the leading numeric parts."""
    out = []
    for part in version.split("."):
        if not part.isdigit():
            break
        out.append(int(part))
    return tuple(out)


@dataclass(frozen=True)
class EngineSettings:
    """An engine's resolved settings: the user's values over the engine's defaults for `version`
    (presets/engines.yaml `settings`). Field names are the engine's flags."""

    name: str = "generic"
    version: str = ""
    # vLLM (vllm/config.py CacheConfig, SchedulerConfig; vllm/engine/arg_utils.py EngineArgs)
    gpu_memory_utilization: float | None = None
    max_model_len: int | None = None
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None
    async_scheduling: bool | None = None
    block_size: int | None = None
    # SGLang (python/sglang/srt/server_args.py ServerArgs)
    mem_fraction_static: float | None = None
    chunked_prefill_size: int | None = None
    max_running_requests: int | None = None
    context_length: int | None = None
    # llama.cpp (common/common.h common_params; common/arg.cpp flags -c, -np, -b, -ub)
    ctx_size: int | None = None
    parallel: int | None = None
    batch_size: int | None = None
    ubatch_size: int | None = None
    # measured memory terms of the engine (engines.yaml `memory`), GiB per rank
    non_torch_gib_tp1: float = 0.0
    non_torch_gib_tp: float = 0.0
    non_torch_gib_tp_pcie: float = 0.0
    sampler_copies: float = 0.0
    peak_rule: str = "torch_peak"  # vLLM: how the release measured its non-KV peak (module doc)
    allreduce_held: bool = False  # free_memory before v0.4: the caching allocator holds all-reduce inputs

    def fraction(self, tp: int = 1) -> float:
        """u: the share of engine-visible memory the engine may use; SGLang's default falls with the
        TP degree (python/sglang/srt/server_args.py ServerArgs.__post_init__, v0.4: 0.88 at TP 1,
        0.87 at 2, 0.85 at 4, 0.81 at 8, 0.79 at 16)."""
        if self.name == "vllm":
            return float(self.gpu_memory_utilization or 0.9)
        if self.name == "sglang":
            if self.mem_fraction_static is not None:
                return float(self.mem_fraction_static)
            return 0.79 if tp >= 16 else 0.81 if tp >= 8 else 0.85 if tp >= 4 else 0.87 if tp >= 2 else 0.88
        return 1.0

    @property
    def profile_tokens(self) -> int:
        """T: tokens of the profiling forward pass (llama.cpp: its ubatch)."""
        if self.name == "vllm":
            return int(self.max_num_batched_tokens or 2048)
        if self.name == "llamacpp":
            return int(self.ubatch_size or 512)
        return 0

    @property
    def page_tokens(self) -> int:
        """b: tokens per KV block (vLLM block_size 16; SGLang's page size 1)."""
        return int(self.block_size or 16) if self.name == "vllm" else 1

    def non_torch_bytes(self, tp: int, nvlink: bool = True) -> float:
        """N at a TP degree, on NVLink boards or PCIe cards."""
        if tp <= 1:
            return self.non_torch_gib_tp1 * GiB
        return (self.non_torch_gib_tp if nvlink else self.non_torch_gib_tp_pcie) * GiB


@dataclass(frozen=True)
class StageMemory:
    """One stage's memory per TP rank, bytes: what the engine counts before sizing its KV pool."""

    visible: float
    weights: float
    activation: float
    non_torch: float
    sampler: float
    kv: float  # the pool the engine allocates (whole blocks)
    kv_tokens: int | None  # None: the stage holds no KV cache (no attention layer)
    calibrated: bool = False  # `activation` is a calibrated non-KV share (activation + non-torch + sampler)

    @property
    def free(self) -> float:
        """What stays unused on the rank: M − (weights + KV + activation + non-torch + sampler)."""
        return self.visible - (self.weights + self.kv + self.activation + self.non_torch + self.sampler)

    def to_dict(self) -> dict[str, float | int | None]:
        return {"weights_bytes": self.weights, "kv_bytes": self.kv, "activation_bytes": self.activation,
                "non_torch_bytes": self.non_torch, "sampler_bytes": self.sampler, "free_bytes": self.free,
                "kv_tokens": self.kv_tokens, "calibrated": self.calibrated}


@dataclass(frozen=True, eq=False)
class KVPool:
    """What the engine's pool sizing needs from a plan's tables.

    visible_bytes[g]  M of row g (a TP group: its smallest member)
    tp[g]             ranks of row g
    weight_bytes[l]   weights of layer l over all ranks
    kv_bytes[l]       KV bytes per token of layer l over all ranks
    act_fixed, act_sharded  activation bytes per profiled token, unsharded / split over tp ranks
    vocab             V, for the sampler buffer
    non_kv_bytes[g]   calibrated A + N + S per rank (None or nan: modelled)
    nvlink[g]         the row's GPUs are NVLink/NVSwitch boards (None: all are)
    """

    settings: EngineSettings
    visible_bytes: np.ndarray
    tp: np.ndarray
    weight_bytes: np.ndarray
    kv_bytes: np.ndarray
    act_fixed: float
    act_sharded: float
    vocab: int
    non_kv_bytes: np.ndarray | None = None
    nvlink: np.ndarray | None = None

    def select(self, rows: list[int]) -> KVPool:
        """The pool of the sub-cluster of `rows` (partitioner.problem.select_rows): per-row arrays sliced."""
        ix = list(rows)
        return replace(self, visible_bytes=self.visible_bytes[ix], tp=self.tp[ix],
                       non_kv_bytes=None if self.non_kv_bytes is None else self.non_kv_bytes[ix],
                       nvlink=None if self.nvlink is None else self.nvlink[ix])

    def regroup(self, members: list[tuple[int, ...]]) -> KVPool:
        """The pool for rows that are TP groups of the current rows (costs/groups.py)."""
        vis = np.array([min(float(self.visible_bytes[g]) for g in m) for m in members])
        nk = None if self.non_kv_bytes is None else np.array([float(np.max(self.non_kv_bytes[list(m)])) for m in members])
        nv = None if self.nvlink is None else np.array([bool(np.all(self.nvlink[list(m)])) for m in members])
        return replace(self, visible_bytes=vis, tp=np.array([len(m) for m in members]), non_kv_bytes=nk, nvlink=nv)


def stage_memory(p: KVPool, g: int, i: int, j: int, last: bool) -> StageMemory:
    """Module doc, for layers [i, j) on row g; `last`: the stage holds the last layer (sampler)."""
    st, t = p.settings, max(1, int(p.tp[g]))
    M = float(p.visible_bytes[g])
    W = float(np.sum(p.weight_bytes[i:j])) / t
    k = float(np.sum(p.kv_bytes[i:j])) / t
    T = st.profile_tokens
    A = T * (p.act_fixed + p.act_sharded / t) if st.name in ("vllm", "llamacpp") else 0.0
    N = st.non_torch_bytes(t, True if p.nvlink is None else bool(p.nvlink[g]))
    if st.name == "vllm" and st.peak_rule == "free_memory" and i > 0:
        A += T * p.act_fixed  # IntermediateTensors of the profiled batch on a non-first PP rank
    if st.name == "vllm" and st.peak_rule == "free_memory" and st.allreduce_held and t > 1:
        A += int(np.count_nonzero(p.kv_bytes[i:j])) * T * p.act_fixed  # two held all-reduce inputs per layer
    if st.name == "vllm" and st.peak_rule == "max_allocated":
        N = 0.0  # max_memory_allocated counts torch's tensors only
    S = 0.0
    if last and st.name == "vllm":
        S = min(int(st.max_num_seqs or 256), T or 1) * p.vocab * 4.0 * st.sampler_copies
    cal = p.non_kv_bytes is not None and not math.isnan(float(p.non_kv_bytes[g]))
    if cal:
        A, N, S = float(p.non_kv_bytes[g]), 0.0, 0.0  # type: ignore[index]
    if k <= 0:
        return StageMemory(M, W, A, N, S, 0.0, None, cal)
    if st.name == "llamacpp":
        n = int(st.ctx_size or 4096)
        fits = W + A + N + n * k <= M
        return StageMemory(M, W, A, N, S, n * k if fits else 0.0, n if fits else 0, cal)
    b = st.page_tokens
    pool = st.fraction(t) * M - W - A - N - S
    blocks = max(0, math.floor(pool / (b * k)))
    return StageMemory(M, W, A, N, S, blocks * b * k, blocks * b, cal)


def plan_kv_tokens(p: KVPool, devices: tuple[int, ...], cuts: tuple[int, ...]) -> tuple[int | None, tuple[StageMemory, ...]]:
    """The engine's pool in tokens (the least over stages: every stage holds every sequence's KV on
    its own layers, and the engine sizes the pool by its worst worker) and each stage's memory."""
    L = len(p.weight_bytes)
    stages = tuple(stage_memory(p, g, cuts[s], cuts[s + 1], cuts[s + 1] == L) for s, g in enumerate(devices))
    known = [m.kv_tokens for m in stages if m.kv_tokens is not None]
    return (min(known) if known else None), stages


def pool_for(s: Shape, b_w: float, b_e: float, b_kv: float, b_a: float, visible_bytes: np.ndarray,
             settings: EngineSettings, non_kv_bytes: np.ndarray | None = None,
             nvlink: np.ndarray | None = None) -> KVPool:
    """The KVPool of a roofline model (layers: embed, L decoders, LM head) on devices of
    `visible_bytes`: weights b_w per decoder parameter and b_e for the embedding and the head (the
    head's own copy even when tied: a last PP rank without the embedding loads one), KV b_kv, and
    the activation peak per profiled token of a decoder layer in the profiling run: the residual and
    hidden states (2h, unsharded) and the MLP's gate/up output and its activation (3·i·k, split
    over TP ranks), b_a bytes each."""
    weights = np.array([b_e * embed_params(s)] + [b_w * layer_params(s)] * s.L + [b_e * head_params(s)], dtype=float)
    kv = np.array([0.0] + [kv_bytes_per_token(s, b_kv)] * s.L + [0.0])
    return KVPool(settings=settings, visible_bytes=np.asarray(visible_bytes, dtype=float),
                  tp=np.ones(len(visible_bytes), dtype=int), weight_bytes=weights, kv_bytes=kv,
                  act_fixed=2.0 * s.h * b_a, act_sharded=3.0 * s.i * s.k * b_a, vocab=s.V, non_kv_bytes=non_kv_bytes,
                  nvlink=nvlink)
