"""Engine exports: print a plan in exactly the format an engine takes (engines.md).

    render(plan, target, *, ordinals=None, endpoints=None) -> Export

`plan` is a `partitioner.result.Plan` or a plan dict as `Plan.to_dict()` writes it
(validated by `partitioner.export.load.parse_plan`). `TARGETS` are the export targets of
`partitioner.registry`, which the CLI's `--to`/`--export` choices and the report read; each
target's rules live in its own module, cited from the engine's source, and are replayed on
what it emits. Launch targets (vllm, sglang, trtllm, llamacpp) return the per-host `Step`s
behind `Export.scripts`. A deployment (several replicas: a `Deployment` or its JSON) is
exported one launch per replica with its router weights (`partitioner.export.replicas`).
Pure: no I/O; the CLI prints or writes the result.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from partitioner.errors import InputError
from partitioner.export.base import STRICT_EXIT_CODES, Export
from partitioner.export.single import render_plan, view_of
from partitioner.registry import EXPORT_TARGETS, LAUNCH_TARGETS

__all__ = ["Export", "TARGETS", "REGISTRY", "ENGINES", "STRICT_EXIT_CODES", "render", "view_of"]

# target: (module, function, takes ordinals, takes endpoints, one line); the names live in
# partitioner.registry with every other name list
REGISTRY: dict[str, tuple[str, str, bool, bool, str]] = EXPORT_TARGETS
TARGETS: tuple[str, ...] = tuple(REGISTRY)
ENGINES: tuple[str, ...] = LAUNCH_TARGETS  # targets that launch a server


def render(
    plan: Any,
    target: str,
    *,
    ordinals: Mapping[str, int] | None = None,
    endpoints: Mapping[str, str] | None = None,
    engine_version: str | None = None,
) -> Export:
    """The text `target` takes for `plan`, with warnings and what it cannot express.

    ordinals: CUDA ordinal per device name (else inferred, with a warning);
    endpoints: llama.cpp rpc-server host:port per remote device (else `<address or node>:50052+k`);
    engine_version: the engine release to write for (`partitioner.export.versions`; None: the newest listed).
    """
    if target not in REGISTRY:
        raise InputError(f"unknown export target {target!r}; valid targets: {', '.join(TARGETS)}")
    from partitioner.export.replicas import DeploymentView, is_deployment, parse_deployment, render_deployment

    if isinstance(plan, DeploymentView) or is_deployment(plan):
        dv = plan if isinstance(plan, DeploymentView) else parse_deployment(plan)
        return render_deployment(dv, target, ordinals, endpoints)
    return render_plan(plan, target, ordinals=ordinals, endpoints=endpoints, engine_version=engine_version)
