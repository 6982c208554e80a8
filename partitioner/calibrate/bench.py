"""Measured against predicted: a benchmark result beside a plan, and the correction for cluster.yaml.

vLLM's result JSON is the dict `benchmark()` returns and `--save-result` writes
(vllm/benchmarks/serve.py, v0.31.0): `output_throughput` (output tokens/s), `mean_tpot_ms`,
`mean_ttft_ms` (from `process_one_metric`: mean/median/std/p99 of each of ttft, tpot, itl, e2el),
`request_throughput`, `completed`, `max_concurrency`. llama.cpp's `llama-bench -o json` writes a
list of records (tools/llama-bench/llama-bench.cpp `test::get_fields`): `n_prompt`, `n_gen`,
`avg_ts` (tokens/s); the generation record (n_prompt 0) gives one sequence's TPOT = 1/avg_ts.

The correction is one time scale r = measured TPOT / predicted TPOT for the plan's GPU types:
every compute and memory term of the roofline (docs/costmodel.md §1) is divided by an efficiency
and the overheads add, so eta_compute/r, eta_memory/r, overhead·r scale each stage's time by r
(an efficiency is capped at 1: then that stage moves less). Links are not scaled.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from partitioner.errors import InputError

__all__ = ["Measured", "read_bench", "time_scale", "corrected_cluster"]


@dataclass(frozen=True)
class Measured:
    """A benchmark's decode numbers in SI units (None: not in the file)."""

    tokens_per_s: float
    tpot_s: float
    ttft_s: float | None
    source: str  # "vllm bench serve" or "llama-bench"


def _number(doc: Mapping[str, Any], key: str, file: str) -> float:
    value = doc.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < float(value) < float("inf"):
        raise InputError(f"{file}: {key} must be a number > 0 (got {value!r})")
    return float(value)


def read_bench(doc: Any, file: str) -> Measured:
    """The numbers of a vLLM result dict or a llama-bench record list (module doc)."""
    if isinstance(doc, Mapping):
        if "output_throughput" not in doc or "mean_tpot_ms" not in doc:
            raise InputError(f"{file}: not a `vllm bench serve --save-result` file (needs output_throughput "
                             "and mean_tpot_ms)")
        ttft = doc.get("mean_ttft_ms")
        return Measured(_number(doc, "output_throughput", file), _number(doc, "mean_tpot_ms", file) / 1e3,
                        None if ttft is None else _number(doc, "mean_ttft_ms", file) / 1e3, "vllm bench serve")
    if isinstance(doc, list):
        gen = [r for r in doc if isinstance(r, Mapping) and r.get("n_gen") and not r.get("n_prompt")]
        if not gen:
            raise InputError(f"{file}: a llama-bench JSON list needs a generation record (n_prompt 0, n_gen > 0)")
        ts = _number(gen[0], "avg_ts", file)
        return Measured(ts, 1.0 / ts, None, "llama-bench")
    raise InputError(f"{file}: expected a vLLM result object or a llama-bench list (got {type(doc).__name__})")


def time_scale(measured: Measured, predicted_tpot_s: float) -> float:
    """r = measured TPOT / predicted TPOT (module doc)."""
    if not predicted_tpot_s > 0:
        raise InputError(f"the plan predicts no TPOT (got {predicted_tpot_s!r}): plan a decode workload")
    return measured.tpot_s / predicted_tpot_s


def corrected_cluster(data: Mapping[str, Any], factors: Mapping[str, tuple[float, float, float, float]],
                      gpu_of_device: Mapping[str, str], r: float) -> tuple[dict[str, Any], tuple[str, ...]]:
    """(new cluster mapping, devices updated): each device whose GPU type is in `factors`
    ((eta_c, eta_m, overhead per layer s, overhead per token s) now in force) gets them scaled by r."""
    out = copy.deepcopy(dict(data))
    updated = []
    for dev in out.get("devices", []):
        gpu = gpu_of_device.get(str(dev.get("name")))
        if gpu is None or gpu not in factors:
            continue
        eta_c, eta_m, t_layer, t_token = factors[gpu]
        new = {"eta_compute": _sig(min(1.0, eta_c / r)), "eta_memory": _sig(min(1.0, eta_m / r)),
               "overhead_ms": _sig(t_layer * r * 1e3), "token_overhead_ms": _sig(t_token * r * 1e3)}
        spec = dev["gpu"]
        dev["gpu"] = {**spec, **new} if isinstance(spec, dict) else {"base": spec, **new}
        updated.append(str(dev["name"]))
    return out, tuple(updated)


def _sig(x: float) -> float:
    return float(f"{x:.6g}")
