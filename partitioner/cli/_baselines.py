"""vLLM's even split beside a plan, for the gain line of `partition plan` and the default answer."""

from __future__ import annotations

from typing import Any

__all__ = ["even_baseline", "even_serve"]


def even_baseline(problem: Any, solver: str) -> Any:
    """The vLLM `even` split on the same problem, for the gain line (None if it cannot be built)."""
    if solver == "even":
        return None
    from partitioner.api import solve_problem
    from partitioner.errors import PartitionerError

    try:
        return solve_problem(problem, "even")
    except PartitionerError as exc:
        return str(exc)


def even_serve(model: Any, cluster: Any, solver: str, **kwargs: Any) -> Any:
    """vLLM's even split with its best batch and in-flight count under the same limits."""
    if solver == "even":
        return None
    from partitioner.api import serve_plan
    from partitioner.errors import PartitionerError

    try:
        return serve_plan(model, cluster, solver="even", **kwargs)
    except PartitionerError as exc:
        return str(exc)
