"""`Deployment`: several pipelines (replicas) of one model, each a scored `Plan`, with weights.

The router weight of replica r is its share of the total decode tokens/s,
w_r = tokens/s_r / Σ tokens/s (a request share in proportion to throughput keeps every replica
equally loaded under the closed-loop serving model, partitioner.serving). Totals: tokens/s and
sequences in flight add up over replicas; TPOT and TTFT are each replica's own, so the totals
give the worst and the weighted mean. Replicas with the same GPUs, TP degrees and layer ranges
are identical: an engine's data-parallel option (vLLM/SGLang `--data-parallel-size`) expresses
them as one launch.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from partitioner.registry import UNIFORM_TP_ENGINES

__all__ = ["Deployment", "DEPLOYMENT_FORMAT", "UNIFORM_TP_ENGINES", "tp_notes"]

DEPLOYMENT_FORMAT = "partitioner.deployment/1"


def _signature(plan: Any) -> tuple[Any, ...]:
    return tuple((st.gpu, st.tp, st.start, st.end) for st in plan.stages)


def tp_notes(plan: Any) -> list[str]:
    """What a plan's TP groups mean for the engines: per-stage TP degrees that differ cannot be
    expressed by the engines of UNIFORM_TP_ENGINES; mixed-type groups run at the slowest GPU."""
    notes = []
    degrees = sorted({st.tp for st in plan.stages})
    if len(degrees) > 1:
        notes.append(f"per-stage tensor parallelism {'/'.join(str(st.tp) for st in plan.stages)}: "
                     f"not expressible by {', '.join(UNIFORM_TP_ENGINES)} (one TP degree for all stages); "
                     "plan with uniform_tp for them")
    for st in plan.stages:
        if st.tp > 1 and "+" in st.gpu:
            notes.append(f"stage {st.index} mixes GPU types ({st.gpu}): it runs at its slowest member")
    return notes


@dataclass(frozen=True)
class Deployment:
    """Replicas (scored Plans) with router weights, the devices left unused, and the proof status."""

    replicas: tuple[Any, ...]
    unused: tuple[str, ...]
    optimal: bool
    upper_bound_tokens_per_s: float
    solver: str = "replicas"
    wall_time_s: float = 0.0
    subproblems: int = 0
    stopped: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def tokens_per_s(self) -> float:
        return math.fsum(self._tps(p) for p in self.replicas)

    @staticmethod
    def _tps(plan: Any) -> float:
        return float(plan.serving.tokens_per_s) if plan.serving is not None else 0.0

    @property
    def weights(self) -> tuple[float, ...]:
        total = self.tokens_per_s
        n = len(self.replicas)
        return tuple(self._tps(p) / total if total > 0 else 1.0 / n for p in self.replicas)

    @property
    def identical(self) -> bool:
        """All replicas have the same GPUs, TP degrees and layer ranges (data-parallel option)."""
        return len(self.replicas) > 1 and len({_signature(p) for p in self.replicas}) == 1

    @property
    def gap(self) -> float:
        total = self.tokens_per_s
        ub = self.upper_bound_tokens_per_s
        if not math.isfinite(ub) or ub <= 0 or self.optimal:
            return 0.0
        return max(0.0, (ub - total) / ub)

    def serving_totals(self) -> dict[str, Any]:
        """The top-level `serving` object: sums over replicas, TPOT/TTFT worst and weighted."""
        sv = [p.serving for p in self.replicas if p.serving is not None]
        w = self.weights
        caps = [s.max_sequences for s in sv]
        ttft = [s.ttft_s for s in sv if s.ttft_s is not None]
        gpus = sum(sum(st.tp for st in p.stages) for p in self.replicas)
        total = self.tokens_per_s
        return {
            "replicas": len(self.replicas),
            "tokens_per_s": total,
            "sequences": sum(s.batch * s.in_flight for s in sv),
            "max_sequences": None if any(c is None for c in caps) else sum(c for c in caps if c is not None),
            "tpot_s": max(s.tpot_s for s in sv) if sv else None,
            "tpot_s_weighted": math.fsum(wi * s.tpot_s for wi, s in zip(w, sv, strict=True)) if sv else None,
            "ttft_s": max(ttft) if ttft else None,
            "gpus": gpus,
            "tokens_per_s_per_gpu": total / gpus if gpus else None,
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready and deterministic (no timings)."""
        replicas = []
        for p, w in zip(self.replicas, self.weights, strict=True):
            d = p.to_dict()
            d["weight"] = w
            replicas.append(d)
        return {
            "format": DEPLOYMENT_FORMAT,
            "model": self.replicas[0].model if self.replicas else "",
            "solver": self.solver,
            "optimal": self.optimal,
            "upper_bound_tokens_per_s": (self.upper_bound_tokens_per_s
                                         if math.isfinite(self.upper_bound_tokens_per_s) else None),
            "gap": self.gap if math.isfinite(self.upper_bound_tokens_per_s) else None,
            "stopped": self.stopped or None,
            "identical_replicas": self.identical,
            "data_parallel_size": len(self.replicas) if self.identical else None,
            "unused_devices": list(self.unused),
            "notes": list(self.notes),
            "serving": self.serving_totals(),
            "replicas": replicas,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"
