"""Every closed-form quantity of one stage chain in a single frozen record (docs/theory.md, `partition analyze`).

`analyze(tau, d, M, rho)` evaluates the functions of `closed_forms` and `overlap` once and keeps
their values under the names `partition analyze --json` prints. Sources: docs/theory.md Thms 1-3,
Cors 1-5, Prop 1, §9, Errors 1.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from partitioner.analysis import closed_forms as cf
from partitioner.analysis import overlap as ov
from partitioner.analysis.inputs import ArrayLike, as_d, as_M, as_rho, as_tau

__all__ = ["Analysis", "analyze"]


@dataclass(frozen=True)
class Analysis:
    """Closed-form analysis of one pipeline; field names are the JSON keys of `partition analyze`."""

    S: int  # number of stages
    M: int  # number of micro-batches
    tau: tuple[float, ...]  # stage times, s
    d: tuple[float, ...]  # link latencies, s (S-1 values)
    rho: float  # overlap ratio used for T_real and effective_slope (§9)
    tau_max: float
    sigma_max: float
    sigma: tuple[float, ...]  # blocking stage times tau_s + d_s (Thm 3)
    T_free: float  # Thm 1
    T_async: float  # Thm 2
    T_block: float  # Thm 3
    T_gpipe: float  # (S+M-1) tau_max, Cor 1
    T_real: float  # T_block - rho (T_block - T_async), §9
    homogeneity_bias: float  # sum (tau_max - tau_j), Cor 1
    full_bias: float  # homogeneity_bias - sum d, Cor 3
    gpipe_error: float  # (T_gpipe - T_async)/T_async, signed
    phase_transition: bool  # sigma_max > tau_max, Cor 4
    slack: tuple[float, ...]  # tau_max - tau_s per link s = 0..S-2
    binding_links: tuple[int, ...]  # links with d_s > slack_s
    first_binding_link: int | None  # argmax_{s <= S-2} tau_s (Errors 1)
    overlap_gap: float  # (M-1)(sigma_max - tau_max), Cor 5
    effective_slope: float  # tau_max + (1-rho)(sigma_max - tau_max)
    asymptotic_throughput_async: float  # 1/tau_max, Prop 1
    asymptotic_throughput_blocking: float  # 1/sigma_max, Prop 1
    crossover_batches: float  # M* = 1 + (sum tau + sum d)/tau_max
    bubble_fraction: float  # 1 - M sum tau / (S T_async)
    first_latency: float  # sum tau + sum d

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready plain Python values (tuples become lists)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


def analyze(tau: ArrayLike, d: ArrayLike | None = None, M: int = 1, rho: float = 1.0) -> Analysis:
    """All closed-form quantities of the chain (tau, d) at M micro-batches and overlap ratio rho."""
    t = as_tau(tau)
    dd = as_d(d, t.size)
    M = as_M(M)
    rho = as_rho(rho)
    return Analysis(
        S=int(t.size),
        M=M,
        tau=tuple(float(x) for x in t),
        d=tuple(float(x) for x in dd),
        rho=rho,
        tau_max=cf.tau_max(t),
        sigma_max=cf.sigma_max(t, dd),
        sigma=tuple(float(x) for x in cf.sigma(t, dd)),
        T_free=cf.makespan_free(t, M),
        T_async=cf.makespan_async(t, dd, M),
        T_block=cf.makespan_blocking(t, dd, M),
        T_gpipe=cf.makespan_gpipe(t, M),
        T_real=ov.makespan_real(t, dd, M, rho),
        homogeneity_bias=cf.homogeneity_bias(t),
        full_bias=cf.full_bias(t, dd),
        gpipe_error=cf.gpipe_relative_error(t, dd, M),
        phase_transition=ov.phase_transition(t, dd),
        slack=ov.slack(t),
        binding_links=ov.binding_links(t, dd),
        first_binding_link=ov.first_binding_link(t),
        overlap_gap=ov.overlap_gap(t, dd, M),
        effective_slope=ov.effective_slope(t, dd, rho),
        asymptotic_throughput_async=cf.throughput_async(t),
        asymptotic_throughput_blocking=cf.throughput_blocking(t, dd),
        crossover_batches=cf.crossover_batches(t, dd),
        bubble_fraction=cf.bubble_fraction(t, dd, M),
        first_latency=cf.first_latency(t, dd),
    )
