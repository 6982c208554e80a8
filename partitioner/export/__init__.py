"""Engine exports: print a plan in exactly the format an engine takes (issue 5, engines.md).

    render(plan, target, *, ordinals=None, endpoints=None) -> Export

`plan` is a `partitioner.result.Plan` or a plan dict as `Plan.to_dict()` writes it
(validated by `partitioner.export.load.parse_plan`). Each target module replays that
engine's own validation rule on what it emits and says what the engine cannot express.
Pure: no I/O; the CLI (`partition export`, `partition plan --export`) prints the result.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from partitioner.errors import InputError
from partitioner.export.base import Export
from partitioner.export.view import PlanView, from_plan

__all__ = ["Export", "TARGETS", "render", "view_of"]

TARGETS: tuple[str, ...] = ("vllm", "sglang", "trtllm", "llamacpp", "deepspeed", "torchgpipe", "megatron", "json")


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
    return Export("json", json.dumps(dict(view.document), indent=2) + "\n")


def render(
    plan: Any,
    target: str,
    *,
    ordinals: Mapping[str, int] | None = None,
    endpoints: Mapping[str, str] | None = None,
) -> Export:
    """The text `target` takes for `plan`, with warnings and what it cannot express.

    ordinals: CUDA ordinal per device name (else inferred, with a warning);
    endpoints: llama.cpp rpc-server host:port per remote device (else `<node>:50052+k`).
    """
    if target not in TARGETS:
        raise InputError(f"unknown export target {target!r}; valid targets: {', '.join(TARGETS)}")
    view = view_of(plan)
    from partitioner.export import deepspeed, llamacpp, megatron, torchgpipe, trtllm, vllm

    renderers: dict[str, Callable[[], Export]] = {
        "vllm": lambda: vllm.render_vllm(view, ordinals),
        "sglang": lambda: vllm.render_sglang(view, ordinals),
        "trtllm": lambda: trtllm.render(view, ordinals),
        "llamacpp": lambda: llamacpp.render(view, ordinals, endpoints),
        "deepspeed": lambda: deepspeed.render(view),
        "torchgpipe": lambda: torchgpipe.render(view, ordinals),
        "megatron": lambda: megatron.render(view),
        "json": lambda: _json(view),
    }
    return renderers[target]()
