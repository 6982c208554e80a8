"""`PlanRequest`: everything one planning run is asked, as one frozen value.

`partitioner.planning.routing.route` takes it to a `Plan` (one pipeline) or a `Deployment` (TP groups or
several replicas); `partitioner.api.plan` and `partition plan` both build one. Fields:

- model, cluster: the loaded `ModelSpec` and `ClusterSpec` (partitioner.models); the model's
  `workload:` section (batch, prompt tokens, context, in flight) is the workload;
- engine: an engine preset id (presets/engines.yaml; None: the files' `engine:`), whose record
  also gives the launch-order rule, the minimum compute capability and the TP/DP options;
- objective, M, regime, solver, order: the pipeline problem (docs/algorithms.md);
- limits: the serve objective's TPOT/TTFT limits (ms) and largest batch;
- replicas (None: "auto"), tp ("auto", "uniform", "node", "off"; None: "auto" when cluster.yaml
  has `tp:`, else "off");
- budget: the one search budget (partitioner.solvers.budget.Budget): a wall-clock cap
  (`--time-limit`) counted from when the request was made, or none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from partitioner.solvers.budget import Budget

__all__ = ["ServeLimits", "PlanRequest", "parse_replicas"]


@dataclass(frozen=True)
class ServeLimits:
    """The serve objective's limits as the user gives them (None: no limit)."""

    tpot_ms: float | None = None  # time per output token
    ttft_ms: float | None = None  # time to first token of a prompt_tokens prompt
    max_batch: int | None = None  # largest batch per micro-batch

    @property
    def given(self) -> tuple[str, ...]:
        """The CLI names of the limits that are set."""
        pairs = (("--tpot-ms", self.tpot_ms), ("--ttft-ms", self.ttft_ms), ("--max-batch", self.max_batch))
        return tuple(n for n, v in pairs if v is not None)


@dataclass(frozen=True)
class PlanRequest:
    """One planning run (module doc)."""

    model: Any
    cluster: Any
    engine: str | None = None
    objective: str = "balanced"
    M: int = 8
    regime: str = "async"
    solver: str = "auto"
    order: str | None = None
    limits: ServeLimits = field(default_factory=ServeLimits)
    replicas: int | None = 1  # None: "auto"
    tp: str | None = None
    budget: Budget = field(default_factory=lambda: Budget(None))
    max_stages: int | None = None  # at most this many stages in one pipeline (Problem.max_stages)

    @property
    def time_limit_s(self) -> float | None:
        """What is left of the wall-clock cap now (None: no cap; at least 1 ms, so the solvers
        still return their first plan with its bound, as on a limit hit)."""
        if self.budget.deadline is None:
            return None
        return max(1e-3, self.budget.left(0.0))

    @property
    def cluster_order(self) -> str:
        return self.order or str(getattr(self.cluster, "order", "free"))


def parse_replicas(value: str | int | None) -> int | None:
    """"auto" (or None) -> None, else a positive integer (InputError otherwise)."""
    from partitioner.errors import InputError

    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        n = value
    elif isinstance(value, str) and value.strip().lower() == "auto":
        return None
    else:
        try:
            n = int(str(value))
        except ValueError:
            raise InputError(f"--replicas must be 'auto' or a positive integer (got {value!r})") from None
    if n < 1:
        raise InputError(f"--replicas must be 'auto' or a positive integer (got {value!r})")
    return n
