"""One plan in one target's format: the registry dispatch behind `partitioner.export.render`.

`render_plan(plan, target)` takes a `Plan`, a plan dict or a `PlanView` and calls the target's
module (partitioner.registry.EXPORT_TARGETS); `partitioner.export.replicas` calls it once per
replica, so it lives apart from the package's `render` (which also takes deployments).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from partitioner.errors import InputError
from partitioner.export.base import Export
from partitioner.export.view import PlanView, from_plan
from partitioner.jsonio import dumps
from partitioner.registry import EXPORT_TARGETS

__all__ = ["render_plan", "view_of"]


def view_of(plan: Any) -> PlanView:
    """A `PlanView` of a `Plan`, a plan dict or a `PlanView`."""
    if isinstance(plan, PlanView):
        return plan
    if isinstance(plan, Mapping):
        from partitioner.export.load import parse_plan

        return parse_plan(plan)
    if hasattr(plan, "stages") and hasattr(plan, "to_dict"):
        return from_plan(plan)
    raise InputError(f"cannot export a {type(plan).__name__}: pass a Plan or a plan dict")


def _json(view: PlanView) -> Export:
    return Export("json", dumps(dict(view.document), indent=2) + "\n", infeasible=not view.feasible)


def render_plan(plan: Any, target: str, *, ordinals: Mapping[str, int] | None = None,
                endpoints: Mapping[str, str] | None = None, engine_version: str | None = None) -> Export:
    """The text `target` takes for one plan (`partitioner.export.render` without deployments);
    `engine_version`: the engine release to write for (partitioner.export.versions)."""
    view = view_of(plan)
    if engine_version is not None:
        from partitioner.registry import LAUNCH_TARGETS

        if target not in LAUNCH_TARGETS:
            from partitioner.errors import InputError

            raise InputError(f"--engine-version applies to launch targets ({', '.join(LAUNCH_TARGETS)}), "
                             f"not {target!r}")
        import dataclasses

        from partitioner.export.versions import release

        release(target, engine_version)  # an unknown release is refused before anything is rendered
        view = dataclasses.replace(view, engine_version=engine_version)
    module, name, takes_ords, takes_eps, _ = EXPORT_TARGETS[target]
    fn = getattr(importlib.import_module(module), name)
    args: list[Any] = [view]
    if takes_ords:
        args.append(ordinals)
    if takes_eps:
        args.append(endpoints)
    result: Export = fn(*args)
    return result
