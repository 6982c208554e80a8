"""Closed-form makespan analysis of a heterogeneous pipeline (docs/theory.md).

Pure functions over stage times `tau` (S values) and link latencies `d` (S-1 values):
`closed_forms` (Thms 1-3, Cors 1-3, Prop 1), `overlap` (Cor 4-5, §9: slack, binding links,
rho), `vectorized` (the same over N configurations), `summary` (`analyze` -> `Analysis`),
`closed_loop` (decode: K micro-batches circulate; P = max(K·tau_max, Στ + Σd + d_ret)).
"""

from __future__ import annotations

from partitioner.analysis.closed_forms import (
    bubble_fraction,
    crossover_batches,
    first_latency,
    full_bias,
    gpipe_relative_error,
    homogeneity_bias,
    makespan_async,
    makespan_blocking,
    makespan_free,
    makespan_gpipe,
    sigma,
    sigma_max,
    tau_max,
    throughput_async,
    throughput_blocking,
)
from partitioner.analysis.closed_loop import (
    decode_bound,
    decode_crossover,
    decode_period,
    decode_throughput,
    prefill_ttft,
    round_trip,
)
from partitioner.analysis.overlap import (
    RhoUndefinedError,
    binding_links,
    effective_slope,
    first_binding_link,
    makespan_real,
    overlap_gap,
    phase_transition,
    rho_from_makespan,
    rho_from_measurements,
    slack,
)
from partitioner.analysis.summary import Analysis, analyze
from partitioner.analysis.vectorized import (
    homogeneity_bias_batch,
    makespan_async_batch,
    makespan_blocking_batch,
    makespan_free_batch,
    makespan_gpipe_batch,
    sigma_batch,
    sigma_max_batch,
    tau_max_batch,
)

__all__ = [
    "Analysis",
    "analyze",
    "RhoUndefinedError",
    "tau_max",
    "sigma",
    "sigma_max",
    "first_latency",
    "makespan_free",
    "makespan_async",
    "makespan_blocking",
    "makespan_gpipe",
    "makespan_real",
    "homogeneity_bias",
    "full_bias",
    "gpipe_relative_error",
    "throughput_async",
    "throughput_blocking",
    "crossover_batches",
    "bubble_fraction",
    "slack",
    "binding_links",
    "phase_transition",
    "first_binding_link",
    "overlap_gap",
    "effective_slope",
    "rho_from_makespan",
    "rho_from_measurements",
    "tau_max_batch",
    "sigma_batch",
    "sigma_max_batch",
    "makespan_free_batch",
    "makespan_async_batch",
    "makespan_blocking_batch",
    "makespan_gpipe_batch",
    "homogeneity_bias_batch",
    "round_trip",
    "decode_period",
    "decode_bound",
    "decode_throughput",
    "decode_crossover",
    "prefill_ttft",
]
