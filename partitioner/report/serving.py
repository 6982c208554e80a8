"""Tokens/s of a plan: the ONE place the report turns a plan into serving numbers.

`serving_numbers(plan, workload)` uses the plan's serving model for decode (`plan.serving`: tokens_per_s,
tpot_s, ttft_s, binding; GUIDE "Decode (closed loop)": tokens/s = K·B/P with
P = max(K·tau_max, sum tau + sum d + d_ret)) when the plan carries one. Without it, tokens/s is
the workload's sequences per micro-batch times micro-batches/s (Prop 1: 1/period); a decode
micro-batch makes one token per sequence, a prefill micro-batch `prompt_tokens` per sequence,
and a measured `layers:` profile counts one sequence per micro-batch (its cost is per
micro-batch, the batch it was measured at is not in the file).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Workload", "Serving", "serving_numbers", "workload_of"]


@dataclass(frozen=True)
class Workload:
    """What one micro-batch is, as far as tokens are concerned."""

    batch: int = 1  # sequences per micro-batch
    phase: str = "decode"
    prompt_tokens: int = 1
    profile: bool = False  # a `layers:` profile: one sequence per micro-batch

    @property
    def tokens_per_micro_batch(self) -> int:
        seqs = 1 if self.profile else self.batch
        return seqs * (self.prompt_tokens if self.phase == "prefill" else 1)

    @property
    def unit(self) -> str:
        return "prompt tokens/s" if self.phase == "prefill" else "tokens/s"


@dataclass(frozen=True)
class Serving:
    """Serving numbers of one plan (SI units); `source` says where they come from."""

    tokens_per_s: float
    tpot_s: float | None  # time per output token of one sequence (None: no serving model)
    ttft_s: float | None
    binding: str
    source: str  # "serving model" or "batch × micro-batches/s"
    unit: str


def workload_of(model: Any) -> Workload:
    """The `Workload` of a loaded `ModelSpec` (a `layers:` profile counts one sequence)."""
    w = getattr(model, "workload", None)
    profile = getattr(model, "layers", None) is not None
    if w is None:
        return Workload(profile=profile)
    return Workload(batch=int(w.batch), phase=str(w.phase), prompt_tokens=int(w.prompt_tokens), profile=profile)


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def serving_numbers(plan: Any, workload: Workload) -> Serving:
    """Tokens/s (and TPOT/TTFT when the serving model gives them) of `plan`."""
    s = getattr(plan, "serving", None)
    # the serving model is closed-loop decode; prefill micro-batches flow open-loop (Prop 1)
    if s is not None and _get(s, "tokens_per_s") is not None and workload.phase != "prefill":
        tpot, ttft = _get(s, "tpot_s"), _get(s, "ttft_s")
        return Serving(float(_get(s, "tokens_per_s")), None if tpot is None else float(tpot),
                       None if ttft is None else float(ttft), str(_get(s, "binding") or ""),
                       "serving model", workload.unit)
    return Serving(workload.tokens_per_micro_batch * float(plan.throughput), None, None, "bottleneck",
                   "batch × micro-batches/s", workload.unit)
