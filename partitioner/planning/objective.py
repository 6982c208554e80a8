"""Which objective `partition plan` runs when none is given: it follows the workload.

A decode workload (model.yaml `workload: phase: decode`, the default) is a serving question: the
most output tokens/s under the optional TPOT/TTFT limits, over the split, the batch B and the
in-flight count K (docs/theory.md §4: tokens/s = K·B / P, P = max(K·τ_max, Στ + Σd + d_ret)), so
the default is `serve`. Inside each (B, K) the serve search still minimises τ_max first and mends
links (partitioner.serving.search). A prefill workload flows open-loop (Prop 1: throughput is
1/τ_max) and a `layers:` profile with seconds per micro-batch at one batch size has no batch to
choose: both keep the paper's `balanced` objective.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Choice", "default_objective", "micro_batch_profile"]


@dataclass(frozen=True)
class Choice:
    """The objective that ran and the one-line reason (printed first, in JSON as `objective_choice`)."""

    objective: str
    why: str
    default: bool  # True: chosen from the workload; False: given by --objective

    def line(self) -> str:
        how = "default for this workload" if self.default else "as asked"
        return f"objective {self.objective} ({how}): {self.why}"

    def to_dict(self) -> dict[str, Any]:
        return {"objective": self.objective, "default": self.default, "why": self.why}


def micro_batch_profile(model: Any) -> bool:
    """A `layers:` profile whose costs are all seconds per micro-batch (no {batch: seconds} table)."""
    if not getattr(model, "is_profile", False):
        return False
    return not any(isinstance(v, dict) for e in model.layers for v in e.cost.values())


def default_objective(model: Any, given: str | None = None) -> Choice:
    """`given` when set (--objective), else the workload's objective (module doc)."""
    w = getattr(model, "workload", None)
    phase = str(getattr(w, "phase", "decode"))
    if phase == "prefill":
        choice = Choice("balanced", "a prefill workload flows open-loop: the least τ_max is the most prompts/s", True)
    elif micro_batch_profile(model):
        choice = Choice("balanced", "the profile costs one micro-batch at one batch size: no batch to choose, "
                                    "the least τ_max is the most micro-batches/s", True)
    else:
        choice = Choice("serve", "a decode workload: the most output tokens/s over split, batch and in-flight "
                                 "(τ_max first inside each)", True)
    if given is None:
        return choice
    why = choice.why if given == choice.objective else f"--objective {given} (the workload's default is {choice.objective})"
    return Choice(given, why, False)
