"""The engine-neutral view of a plan that every exporter reads.

Built from a `partitioner.result.Plan` (`from_plan`) or from a validated plan dict
(`partitioner.export.load.parse_plan`). Pure: frozen dataclasses, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["StageView", "HostView", "PlanView", "from_plan", "decoder_ranges", "node_runs"]


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
    members: tuple[str, ...] = ()  # a tensor-parallel group's devices (plan.json `devices`)
    tp: int = 1

    @property
    def layers(self) -> int:
        return self.end - self.start

    @property
    def group(self) -> tuple[str, ...]:
        """The devices running this stage: the TP group's members, else the one device."""
        return self.members or (self.device,)


@dataclass(frozen=True)
class HostView:
    """A node and its address (None: not given in cluster.yaml)."""

    node: str
    address: str | None = None
    devices: tuple[str, ...] = ()  # the node's devices as cluster.yaml lists them


@dataclass(frozen=True)
class PlanView:
    """What exporters need: the stages in pipeline order, the layer count, the raw dict."""

    stages: tuple[StageView, ...]
    num_layers: int
    model: str
    feasible: bool
    reason: str
    document: Mapping[str, Any]
    model_id: str | None = None
    workload: Mapping[str, Any] | None = None
    serving: Mapping[str, Any] | None = None  # the plan's serving object, when present
    hosts: tuple[HostView, ...] = ()
    replica: int | None = None  # index in a deployment: launch targets then give each replica its own ports
    engine_version: str | None = None  # the release a launch target writes for (None: the newest listed, export.versions)

    def address(self, node: str) -> str | None:
        """The node's address from cluster.yaml, or None."""
        for h in self.hosts:
            if h.node == node:
                return h.address
        return None

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
    def tp_degrees(self) -> list[int]:
        """The distinct TP degrees of the stages, ascending."""
        return sorted({st.tp for st in self.stages})

    @property
    def world_size(self) -> int:
        """GPUs in the pipeline: the sum of the stages' TP degrees."""
        return sum(st.tp for st in self.stages)

    def listed(self, node: str) -> tuple[str, ...]:
        """The node's devices as cluster.yaml lists them (empty when the plan does not say)."""
        for h in self.hosts:
            if h.node == node:
                return h.devices
        return ()

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
            members=tuple(getattr(st, "members", ()) or ()),
            tp=int(getattr(st, "tp", 1) or 1),
        )
        for st in plan.stages
    )
    doc = plan.to_dict()
    serving = getattr(plan, "serving", None)
    if serving is not None and not isinstance(serving, Mapping):
        serving = serving.to_dict() if hasattr(serving, "to_dict") else None
    return PlanView(
        stages=stages,
        num_layers=int(plan.num_layers),
        model=str(plan.model),
        feasible=bool(plan.feasible),
        reason=str(plan.reason),
        document=doc,
        model_id=doc.get("model_id"),
        workload=doc.get("workload"),
        serving=serving if serving is not None else doc.get("serving"),
        hosts=tuple(HostView(str(h["node"]), h.get("address"), tuple(h.get("devices", ()))) for h in doc.get("hosts", [])),
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
