"""partitioner: plan pipeline-parallel LLM inference on heterogeneous GPU clusters.

Public API (imported lazily, so `import partitioner` is cheap):

- `plan(model, cluster, *, M=8, regime="async", objective="balanced", solver="auto",
  order=None, time_limit_s=None, replicas=1, tp=None) -> Plan` (a `Deployment` of weighted
  plans when replicas != 1)
- `load_model(path)`, `load_cluster(path)`, `build_tables(model, cluster)`
- `fleet(model, *, tokens_per_s=None, users=None, tpot_ms=None, budget_per_hour=None, own=None,
  market={gpu: max_count}, ...) -> FleetResult`: the cheapest GPUs to add (partitioner.fleets)
- `analyze(tau, d=None, M=1, rho=1.0)`, `simulate(tau, d, M, regime)`
- `Plan`, `Problem`, `CostTables`, `Solution` and the errors under `PartitionerError`.
"""

from __future__ import annotations

from partitioner._lazy import lazy_exports
from partitioner.errors import (
    ConfigError,
    InfeasibleError,
    InputError,
    PartitionerError,
    SolverError,
)

__all__ = [
    "plan",
    "build_problem",
    "fleet",
    "load_model",
    "load_cluster",
    "build_tables",
    "analyze",
    "simulate",
    "Plan",
    "StagePlan",
    "Deployment",
    "Problem",
    "CostTables",
    "Solution",
    "PartitionerError",
    "InputError",
    "ConfigError",
    "InfeasibleError",
    "SolverError",
]

_LAZY = {
    "plan": "partitioner.api",
    "build_problem": "partitioner.api",
    "fleet": "partitioner.fleets",
    "load_model": "partitioner.models",
    "load_cluster": "partitioner.models",
    "build_tables": "partitioner.costs",
    "analyze": "partitioner.analysis",
    "simulate": "partitioner.simulate",
    "Plan": "partitioner.result",
    "StagePlan": "partitioner.result",
    "Deployment": "partitioner.deploy.deployment",
    "Problem": "partitioner.problem",
    "CostTables": "partitioner.problem",
    "Solution": "partitioner.problem",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
