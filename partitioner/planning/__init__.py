"""The planning spine: a `PlanRequest` goes through one `route()` to a `Plan` or a `Deployment`.

    >>> from partitioner.planning import PlanRequest, route
    >>> result = route(PlanRequest(model, cluster, objective="serve", replicas=None))

request.py (the request), routing.py (the one decision), pipeline.py (one pipeline of single GPUs),
serve_limits.py (the serve objective's limits, checked). Multi-GPU stages and replicas are
partitioner.deploy.
"""

from __future__ import annotations

__all__ = ["PlanRequest", "ServeLimits", "Progress", "route"]


def __getattr__(name: str) -> object:
    """Lazy re-exports: importing the package does not import the solvers."""
    if name in ("PlanRequest", "ServeLimits"):
        from partitioner.planning import request

        return getattr(request, name)
    if name in ("Progress", "route"):
        from partitioner.planning import routing as module

        return getattr(module, name)
    raise AttributeError(name)
