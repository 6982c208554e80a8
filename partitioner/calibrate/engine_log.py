"""Read a vLLM or SGLang start-up log: the memory each worker held besides weights and KV cache.

Pure: the log's text in, an `EngineLog` out. The lines read, with the engine source that prints them:

vLLM
  - V0/V1 0.7-0.8, vllm/worker/worker.py and vllm/v1/worker/gpu_worker.py `determine_available_memory`:
    "the current vLLM instance can use total_gpu_memory (%.2fGiB) x gpu_memory_utilization (%.2f) = %.2fGiB"
    "model weights take %.2fGiB; non_torch_memory takes %.2fGiB; PyTorch activation peak memory takes
    %.2fGiB; the rest of the memory reserved for KV Cache is %.2fGiB."
  - 0.6.4-0.6.6 vllm/worker/worker.py `determine_num_available_blocks`: "Memory profiling results:
    total_gpu_memory=%.2fGiB initial_memory_usage=... non_torch_memory=%.2fGiB kv_cache_size=%.2fGiB
    gpu_memory_utilization=%.2f"
  - V1 0.9+ vllm/v1/worker/gpu_model_runner.py `load_model`: "Model loading took %.4f GiB ...";
    vllm/v1/worker/gpu_worker.py `determine_available_memory`: "Available KV cache memory: %.2f GiB";
    vllm/v1/core/kv_cache_utils.py: "GPU KV cache size: %s tokens"
  - V0 vllm/worker/model_runner.py `load_model`: "Loading model weights took %.4f GB" (GiB), and
    vllm/executor: "# GPU blocks: %d, # CPU blocks: %d"
SGLang (python/sglang/srt/model_executor/model_runner.py `load_model`, v0.4):
    "Load weight begin. avail mem=%.2f GB", "Load weight end. type=%s, dtype=%s, avail mem=%.2f GB,
    mem usage=%.2f GB."; mem_cache/memory_pool.py `MHATokenToKVPool._create_buffers`: "KV Cache is
    allocated. #tokens: %d, K size: %.2f GB, V size: %.2f GB" (its GB is 1024^3 bytes, as is
    utils.py get_available_gpu_memory's); managers/scheduler.py:
    "max_total_num_tokens=%d, ..."; server_args: "mem_fraction_static=%s".

non-KV per worker (GiB, what costs/kvpool.py's calibrated `non_kv_bytes` replaces):
    vLLM     u·M − weights − KV   (= activation peak + non-torch memory, + the sampler on the last rank)
    SGLang   f·M0 − weights − KV  (M0: free memory before loading, the base of profile_max_num_token)
A log that leaves out u·M (V1 0.9+) takes them from the caller (the cluster's GPU and engine settings).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from partitioner.errors import InputError

__all__ = ["EngineLog", "parse_engine_log"]

_NUM = r"(-?[\d.]+)"
_VLLM_CAN_USE = re.compile(rf"total_gpu_memory \({_NUM}GiB\) x gpu_memory_utilization \({_NUM}\)")
_VLLM_TAKE = re.compile(rf"model weights take {_NUM}GiB; non_torch_memory takes {_NUM}GiB; PyTorch activation peak "
                        rf"memory takes {_NUM}GiB; the rest of the memory reserved for KV Cache is {_NUM}GiB")
_VLLM_RESULTS = re.compile(rf"total_gpu_memory={_NUM}GiB .*?kv_cache_size={_NUM}GiB gpu_memory_utilization={_NUM}")
_VLLM_WEIGHTS = re.compile(rf"(?:Model loading took|Loading model weights took) {_NUM} ?Gi?B")
_VLLM_AVAILABLE = re.compile(rf"Available KV cache memory: {_NUM} GiB")
_VLLM_TOKENS = re.compile(r"GPU KV cache size: ([\d,]+) tokens")
_VLLM_BLOCKS = re.compile(r"# (?:GPU|CUDA|cuda) blocks: (\d+)")
_SGL_BEGIN = re.compile(rf"Load weight begin\. avail mem={_NUM} GB")
_SGL_END = re.compile(rf"Load weight end\..*?mem usage={_NUM} GB")
_SGL_KV = re.compile(rf"KV Cache is allocated\. .*?#tokens: (\d+), K size: {_NUM} GB, V size: {_NUM} GB")
_SGL_TOKENS = re.compile(r"max_total_num_tokens=(\d+)")
_SGL_FRACTION = re.compile(rf"mem_fraction_static={_NUM}")


@dataclass(frozen=True)
class EngineLog:
    """What one start-up log says, GiB; `non_kv_gib` per worker line found (None: needs M and u)."""

    engine: str
    weights_gib: float
    kv_gib: float
    non_kv_gib: tuple[float, ...]
    kv_tokens: int | None = None
    total_gib: float | None = None
    fraction: float | None = None

    def non_kv_for(self, total_gib: float, fraction: float) -> float:
        """The largest non-KV share, with the GPU's memory and the engine's fraction where the log
        has none: u·M − weights − KV."""
        if self.non_kv_gib:
            return max(self.non_kv_gib)
        return fraction * total_gib - self.weights_gib - self.kv_gib


def _floats(pattern: re.Pattern[str], text: str) -> list[tuple[float, ...]]:
    return [tuple(float(g) for g in m.groups()) for m in pattern.finditer(text)]


def _vllm(text: str) -> EngineLog | None:
    takes, can = _floats(_VLLM_TAKE, text), _floats(_VLLM_CAN_USE, text)
    tokens = [int(m.group(1).replace(",", "")) for m in _VLLM_TOKENS.finditer(text)]
    kv_tokens = min(tokens) if tokens else None
    if takes:
        non_kv = tuple(n + a for _, n, a, _ in takes)
        total, frac = can[0] if can else (None, None)
        return EngineLog("vllm", max(t[0] for t in takes), min(t[3] for t in takes), non_kv, kv_tokens, total, frac)
    weights = _floats(_VLLM_WEIGHTS, text)
    results = _floats(_VLLM_RESULTS, text)
    if results and weights:
        w = max(x[0] for x in weights)
        non_kv = tuple(f * t - w - k for t, k, f in results)
        t, _, f = results[0]
        return EngineLog("vllm", w, min(r[1] for r in results), non_kv, kv_tokens, t, f)
    available = _floats(_VLLM_AVAILABLE, text)
    if available and weights:
        return EngineLog("vllm", max(x[0] for x in weights), min(x[0] for x in available), (), kv_tokens)
    return None


def _sglang(text: str) -> EngineLog | None:
    end, kv = _floats(_SGL_END, text), list(_SGL_KV.finditer(text))
    if not end or not kv:
        return None
    begin, frac = _floats(_SGL_BEGIN, text), _floats(_SGL_FRACTION, text)
    weights = max(x[0] for x in end)
    kv_gb = min(float(m.group(2)) + float(m.group(3)) for m in kv)  # SGLang's "GB" is 2^30 bytes (memory_pool.py GB)
    tokens = [int(m.group(1)) for m in kv] + [int(m.group(1)) for m in _SGL_TOKENS.finditer(text)]
    total = min(x[0] for x in begin) if begin else None
    f = frac[0][0] if frac else None
    non_kv = (f * total - weights - kv_gb,) if total is not None and f is not None else ()
    return EngineLog("sglang", weights, kv_gb, non_kv, min(tokens), total, f)


def parse_engine_log(text: str, where: str = "log") -> EngineLog:
    """The EngineLog of a vLLM or SGLang start-up log (module doc); InputError naming the lines
    looked for when the text has neither."""
    found = _vllm(text) or _sglang(text)
    if found is None:
        raise InputError(
            f"{where}: no start-up memory lines found; expected vLLM's \"model weights take ... KV Cache is ...\", "
            f"\"Memory profiling results: ...\" or \"Model loading took\" with \"Available KV cache memory\", "
            f"or SGLang's \"Load weight end. ... mem usage=\" with \"KV Cache is allocated. #tokens:\""
        )
    return found
