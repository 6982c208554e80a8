"""The engine-neutral view of a plan that every exporter reads.

Built from a `partitioner.result.Plan` (`from_plan`) or from a validated plan dict
(`partitioner.export.load.parse_plan`). Pure: frozen dataclasses, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["StageView", "PlanView", "from_plan", "decoder_ranges", "node_runs"]


@dataclass(frozen=True)
class StageView:
    """One stage: layers [start, end) of the model's layer list on one device."""

    device: str
    gpu: str
    node: str
    start: int
    end: int
    decoder_layers: int
    embed: bool
    head: bool
    ordinal: int | None = None  # listed position on its node (plan.json), a CUDA-ordinal guess

    @property
    def layers(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class PlanView:
    """What exporters need: the stages in pipeline order, the layer count, the raw dict."""

    stages: tuple[StageView, ...]
    num_layers: int
    model: str
    feasible: bool
    reason: str
    document: Mapping[str, Any]

    @property
    def S(self) -> int:
        return len(self.stages)

    @property
    def decoder_counts(self) -> list[int]:
        return [st.decoder_layers for st in self.stages]

    @property
    def num_decoder_layers(self) -> int:
        return sum(self.decoder_counts)

    @property
    def has_embed(self) -> bool:
        return any(st.embed for st in self.stages)

    @property
    def has_head(self) -> bool:
        return any(st.head for st in self.stages)

    @property
    def nodes(self) -> list[str]:
        return list(dict.fromkeys(st.node for st in self.stages))


def from_plan(plan: Any) -> PlanView:
    """View of a `partitioner.result.Plan` (duck-typed: stages and `to_dict`)."""
    stages = tuple(
        StageView(
            device=st.device,
            gpu=st.gpu,
            node=st.node,
            start=int(st.start),
            end=int(st.end),
            decoder_layers=int(st.decoder_layers),
            embed=bool(st.embed),
            head=bool(st.head),
            ordinal=getattr(st, "ordinal", None),
        )
        for st in plan.stages
    )
    return PlanView(
        stages=stages,
        num_layers=int(plan.num_layers),
        model=str(plan.model),
        feasible=bool(plan.feasible),
        reason=str(plan.reason),
        document=plan.to_dict(),
    )


def decoder_ranges(view: PlanView) -> list[tuple[int, int]]:
    """Half-open decoder-layer index ranges per stage, as engines number decoder layers."""
    out, start = [], 0
    for c in view.decoder_counts:
        out.append((start, start + c))
        start += c
    return out


def node_runs(view: PlanView) -> list[tuple[str, list[int]]]:
    """Maximal runs of consecutive stages on the same node: [(node, [stage indices])]."""
    runs: list[tuple[str, list[int]]] = []
    for s, st in enumerate(view.stages):
        if runs and runs[-1][0] == st.node:
            runs[-1][1].append(s)
        else:
            runs.append((st.node, [s]))
    return runs
