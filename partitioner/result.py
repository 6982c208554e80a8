"""`Plan`: the typed result users get from `partitioner.plan` and `partition plan`.

A `Plan` is a `Solution` (what a solver returns: devices and cuts) scored exactly on its
`Problem` and named: each stage knows its device, GPU, node, layer range, tau_s, d_s,
sigma_s and memory. Metrics are the closed forms of docs/theory.md (Thm 2, Thm 3, Cor 1, Cor 4).
Everything here is pure; `to_json` is deterministic (no timings, fixed key order).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from dataclasses import replace as _replace
from typing import TYPE_CHECKING, Any

import numpy as np

from partitioner.jsonio import dumps
from partitioner.metadata import UNITS, tool_version
from partitioner.problem import Problem, Solution, evaluate

if TYPE_CHECKING:
    from partitioner.analysis import Analysis
    from partitioner.serving import Serving

__all__ = ["StagePlan", "Plan", "PLAN_FORMAT"]

PLAN_FORMAT = "partitioner.plan/1"


@dataclass(frozen=True)
class StagePlan:
    """One pipeline stage: layers [start, end) of the model's layer list on one device."""

    index: int
    device: str
    gpu: str
    node: str
    start: int
    end: int
    first_layer: str
    last_layer: str
    decoder_layers: int
    embed: bool
    head: bool
    tau: float
    d: float
    sigma: float
    memory_gb: float
    capacity_gb: float
    ordinal: int = 0  # position among the cluster's devices on the same node (listed order)
    members: tuple[str, ...] = ()  # a tensor-parallel group's devices (partitioner.costs.groups)
    tp: int = 1

    def to_dict(self) -> dict[str, Any]:
        group: dict[str, Any] = {} if self.tp == 1 else {"devices": list(self.members), "tp": self.tp}
        if self.tp > 1 and "+" in self.gpu:
            group["note"] = "mixed GPU types: the group runs at its slowest member"
        return {
            "device": self.device,
            "gpu": self.gpu,
            "node": self.node,
            "start": self.start,
            "end": self.end,
            "first_layer": self.first_layer,
            "last_layer": self.last_layer,
            "decoder_layers": self.decoder_layers,
            "embed": self.embed,
            "head": self.head,
            "tau": self.tau,
            "d": self.d,
            "sigma": self.sigma,
            "memory_gb": self.memory_gb,
            "capacity_gb": self.capacity_gb,
            "ordinal": self.ordinal,
            **group,
        }


@dataclass(frozen=True)
class Plan:
    """A scored plan. `feasible=False` marks a baseline that breaks a memory limit (`reason`)."""

    stages: tuple[StagePlan, ...]
    M: int
    regime: str
    objective: str
    solver: str
    optimal: bool
    lower_bound: float
    status: str
    objective_value: tuple[float, ...]
    feasible: bool
    reason: str
    model: str
    num_layers: int
    wall_time_s: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)  # partitioner.metadata.plan_metadata
    serving: Serving | None = None  # closed-loop decode numbers (partitioner.serving.score)
    frontier: tuple[dict[str, Any], ...] = ()  # serve objective: Pareto points tokens/s vs TPOT
    notes: tuple[str, ...] = ()  # TP groups: what engines cannot express (partitioner.deploy)

    # -- construction -------------------------------------------------------------------
    @classmethod
    def from_solution(cls, problem: Problem, solution: Solution) -> Plan:
        """Score `solution` on `problem` from scratch and name every stage."""
        from partitioner.serving import serving_of
        from partitioner.serving.engine_sched import engine_in_flight, schedule_of

        t = problem.tables
        m = evaluate(problem, solution.devices, solution.cuts)
        k_engine = engine_in_flight(schedule_of(t), len(solution.devices))  # vLLM/SGLang: PP depth
        st = t if k_engine is None or k_engine == t.in_flight else _replace(t, in_flight=k_engine)
        serving = serving_of(st, solution.devices, solution.cuts, m, problem.regime)
        kinds = t.kinds
        stages = []
        for s, g in enumerate(solution.devices):
            i, j = solution.cuts[s], solution.cuts[s + 1]
            stages.append(
                StagePlan(
                    index=s,
                    device=t.device_names[g],
                    gpu=t.gpu_names[g],
                    node=t.node_names[g],
                    start=i,
                    end=j,
                    first_layer=t.layer_names[i],
                    last_layer=t.layer_names[j - 1],
                    decoder_layers=sum(1 for k in kinds[i:j] if k == "decoder"),
                    embed="embed" in kinds[i:j],
                    head="head" in kinds[i:j],
                    tau=float(m.tau[s]),
                    d=float(m.d[s]) if s < len(m.d) else 0.0,
                    sigma=float(m.sigma[s]),
                    memory_gb=float(m.memory_gb[s]),
                    capacity_gb=float(m.capacity_gb[s]),
                    ordinal=t.node_names[:g].count(t.node_names[g]),
                )
            )
        return cls(
            stages=tuple(stages),
            M=int(problem.M),
            regime=problem.regime,
            objective=problem.objective,
            solver=solution.solver,
            optimal=solution.optimal,
            lower_bound=float(solution.lower_bound),
            status=solution.status,
            objective_value=tuple(float(x) for x in solution.objective),
            feasible=solution.feasible and m.fits,
            reason=_kv_reason(solution.reason, serving, t.device_names, solution.devices),
            model=t.model_name,
            num_layers=t.L,
            wall_time_s=solution.wall_time_s,
            serving=serving,
        )

    # -- per-stage arrays and closed forms ------------------------------------------------
    @property
    def S(self) -> int:
        return len(self.stages)

    @property
    def tau(self) -> np.ndarray:
        return np.array([st.tau for st in self.stages])

    @property
    def d(self) -> np.ndarray:
        return np.array([st.d for st in self.stages[:-1]])

    @property
    def sigma(self) -> np.ndarray:
        return np.array([st.sigma for st in self.stages])

    @property
    def tau_max(self) -> float:
        return float(self.tau.max())

    @property
    def sigma_max(self) -> float:
        return float(self.sigma.max())

    @property
    def T_async(self) -> float:
        """Thm 2: (M-1) tau_max + sum tau + sum d."""
        from partitioner.analysis import makespan_async

        return makespan_async(self.tau, self.d, self.M)

    @property
    def T_block(self) -> float:
        """Thm 3: (M-1) sigma_max + sum sigma."""
        from partitioner.analysis import makespan_blocking

        return makespan_blocking(self.tau, self.d, self.M)

    @property
    def T(self) -> float:
        """The makespan in this plan's regime."""
        return self.T_async if self.regime == "async" else self.T_block

    @property
    def T_gpipe(self) -> float:
        """Cor 1: the homogeneous GPipe estimate (S + M - 1) tau_max."""
        from partitioner.analysis import makespan_gpipe

        return makespan_gpipe(self.tau, self.M)

    @property
    def period(self) -> float:
        """Steady-state period: tau_max (async) or sigma_max (blocking), Prop 1."""
        return self.tau_max if self.regime == "async" else self.sigma_max

    @property
    def throughput(self) -> float:
        """Asymptotic micro-batches per second, 1/period (Prop 1)."""
        return 1.0 / self.period if self.period > 0 else float("inf")

    @property
    def first_latency(self) -> float:
        """Latency of the first micro-batch, sum tau + sum d (order-invariant; docs/theory.md Errors 2)."""
        from partitioner.analysis import first_latency

        return first_latency(self.tau, self.d)

    def violating_links(self) -> list[dict[str, Any]]:
        """Cor 4: links with d_s > tau_max - tau_s, with the slack and the latency that would fix each."""
        out = []
        for s, st in enumerate(self.stages[:-1]):
            slack = self.tau_max - st.tau
            if st.d > slack * (1 + 1e-9) + 1e-15:
                nxt = self.stages[s + 1]
                out.append(
                    {
                        "link": s,
                        "from": st.device,
                        "to": nxt.device,
                        "d": st.d,
                        "slack": slack,
                        "excess": st.d - slack,
                        "max_latency_to_fix": slack,
                    }
                )
        return out

    def analysis(self, M: int | None = None, rho: float = 1.0) -> Analysis:
        """The closed forms of `partition analyze` (docs/theory.md) for this plan's tau and d."""
        from partitioner.analysis import analyze

        return analyze(self.tau.tolist(), self.d.tolist(), M=self.M if M is None else M, rho=rho)

    # -- serialisation ----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready and deterministic: the same input gives the same dict (no timings)."""
        gpipe_error = (self.T_gpipe - self.T_async) / self.T_async if self.T_async > 0 else 0.0
        return {
            "format": PLAN_FORMAT,
            "model": self.model,
            "model_id": self.meta.get("model_id"),
            "num_layers": self.num_layers,
            "num_decoder_layers": sum(st.decoder_layers for st in self.stages),
            "workload": self.meta.get("workload"),
            "hosts": self.meta.get("hosts", []),
            "units": UNITS,
            "tool_version": self.meta.get("tool_version", tool_version()),
            "input_hash": self.meta.get("input_hash"),
            "M": self.M,
            "regime": self.regime,
            "objective": self.objective,
            "solver": self.solver,
            "optimal": self.optimal,
            "status": self.status,
            "feasible": self.feasible,
            "reason": self.reason,
            "objective_value": list(self.objective_value),
            "lower_bound": self.lower_bound,
            "S": self.S,
            "stages": [st.to_dict() for st in self.stages],
            "tau_max": self.tau_max,
            "sigma_max": self.sigma_max,
            "T_async": self.T_async,
            "T_block": self.T_block,
            "T_gpipe": self.T_gpipe,
            "gpipe_error": gpipe_error,
            "period": self.period,
            "throughput": self.throughput,
            "first_latency": self.first_latency,
            "violating_links": self.violating_links(),
            "serving": self._serving_dict(),
            **({"serving_frontier": list(self.frontier)} if self.frontier else {}),
            **({"notes": list(self.notes)} if self.notes else {}),
        }

    def _serving_dict(self) -> dict[str, Any] | None:
        """`Serving.to_dict` plus the name of the device whose KV capacity binds."""
        if self.serving is None:
            return None
        out = self.serving.to_dict()
        k = self.serving.capacity_stage
        out["capacity_device"] = None if k is None or k >= self.S else self.stages[k].device
        return out

    def to_json(self) -> str:
        return dumps(self.to_dict(), indent=2) + "\n"


def _kv_reason(reason: str, serving: Serving, names: tuple[str, ...], devices: tuple[int, ...]) -> str:
    """The solver's reason, plus the KV cache's when K·B sequences do not fit (capacity.py)."""
    N, k = serving.max_sequences, serving.capacity_stage
    if N is None or k is None or serving.sequences <= N:
        return reason
    kv = (f"KV cache: stage {k} ({names[devices[k]]}) holds {N} sequences at context {serving.context}, "
          f"the workload needs {serving.in_flight} × {serving.batch} = {serving.sequences}")
    return f"{reason}; {kv}" if reason else kv
