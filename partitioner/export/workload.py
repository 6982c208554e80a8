"""The workload and serving numbers a launch command carries (dtypes, context, concurrency).

Read from the plan JSON: `workload` (model.yaml's workload section: weights, kv_cache,
activations, context, batch, in_flight) and, when present, `serving` (max_sequences,
context, batch, in_flight, token_budget). vLLM's and SGLang's request cap is the plan's batch ×
in-flight (the engine packs its running requests over the in-flight batches:
partitioner.serving.engine_sched), not the KV capacity; their token budget is the plan's. Each engine maps them to its own flags in its rule module; a value the engine
cannot take from a flag (a pre-quantised int4 checkpoint's method) becomes a warning.
"""

from __future__ import annotations

from dataclasses import dataclass

from partitioner.export.view import PlanView

__all__ = ["Launchable", "launchable", "TORCH_DTYPE", "FlagTable", "VLLM_FLAGS", "SGLANG_FLAGS", "workload_flags"]

TORCH_DTYPE = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


@dataclass(frozen=True)
class Launchable:
    """What the flags say: model id, weight/activation/KV precision, context and sequences."""

    model: str
    model_known: bool
    weights: str | None  # "bf16", "fp16", "fp8", "int8", "int4", "<bits>" or None (profile)
    kv_cache: str | None
    dtype: str | None  # torch dtype name of the activations/weights
    context: int | None
    max_sequences: int | None  # from serving only
    sequences: int | None = None  # serving batch × in_flight: the requests the plan runs at once
    token_budget: int | None = None  # serving token_budget: tokens per engine step


def _precision(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{float(value):g}-bit"
    return str(value)


def launchable(view: PlanView, placeholder: str = "MODEL") -> Launchable:
    """The engine-neutral launch values of a plan (serving wins over workload for context)."""
    wl = dict(view.workload or {})
    sv = dict(view.serving or {})
    weights = _precision(wl.get("weights"))
    dtype = TORCH_DTYPE.get(weights or "") or TORCH_DTYPE.get(str(wl.get("activations", ""))) if wl else None
    context = sv.get("context") or wl.get("context")
    seqs = sv.get("max_sequences")
    running = int(sv["batch"]) * int(sv["in_flight"]) if sv.get("batch") and sv.get("in_flight") else None
    return Launchable(
        model=view.model_id or placeholder,
        model_known=bool(view.model_id),
        weights=weights,
        kv_cache=_precision(wl.get("kv_cache")),
        dtype=dtype,
        context=int(context) if context else None,
        max_sequences=int(seqs) if seqs else None,
        sequences=running,
        token_budget=int(sv["token_budget"]) if sv.get("token_budget") else None,
    )


@dataclass(frozen=True)
class FlagTable:
    """One engine's names for the workload flags, as its argument parser spells them."""

    engine: str
    dtype: str
    quantization: str
    kv_cache_dtype: str
    kv_fp8: str  # the kv_cache_dtype value of an fp8 KV cache
    context: str
    max_sequences: str
    token_budget: str = ""


# vllm/engine/arg_utils.py EngineArgs.add_cli_args
VLLM_FLAGS = FlagTable("vLLM", "--dtype", "--quantization", "--kv-cache-dtype", "fp8", "--max-model-len", "--max-num-seqs",
                       "--max-num-batched-tokens")
# python/sglang/srt/server_args.py ServerArgs.add_cli_args (--kv-cache-dtype: auto, fp8_e5m2, fp8_e4m3)
SGLANG_FLAGS = FlagTable("SGLang", "--dtype", "--quantization", "--kv-cache-dtype", "fp8_e4m3", "--context-length",
                         "--max-running-requests", "--chunked-prefill-size")


def workload_flags(view: PlanView, table: FlagTable) -> tuple[list[str], list[str]]:
    """The workload's flags under `table`'s names, and warnings for what no flag can say."""
    w = launchable(view)
    flags: list[str] = []
    warn: list[str] = []
    if w.dtype:
        flags += [table.dtype, w.dtype]
    if w.weights == "fp8":
        flags += [table.quantization, "fp8"]
    elif w.weights not in (None, "bf16", "fp16"):
        warn.append(f"weights are {w.weights}: add {table.quantization} for your checkpoint's method (awq, gptq, ...)")
    if w.kv_cache == "fp8":
        flags += [table.kv_cache_dtype, table.kv_fp8]
    elif w.kv_cache not in (None, "bf16", "fp16"):
        warn.append(f"{table.engine} has no {w.kv_cache} KV cache; it will use the model dtype")
    if w.context:
        flags += [table.context, str(w.context)]
    # batch × in_flight where the plan has a KV model (max_sequences); its capacity without batch/in_flight
    seqs = (w.sequences or w.max_sequences) if w.max_sequences else None
    if seqs:
        flags += [table.max_sequences, str(seqs)]
    if w.token_budget and table.token_budget:
        flags += [table.token_budget, str(w.token_budget)]
    if not w.model_known:
        warn.append("the plan has no model id (hf_id:); replace MODEL with the model to serve")
    return flags, warn
