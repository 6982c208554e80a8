"""TensorRT-LLM: `pp_partition=[...]`, decoder layers per pipeline rank (LLM API, PR #9003).

NVIDIA/TensorRT-LLM `tensorrt_llm/mapping.py::Mapping`: without `pp_partition`,
`pp_layers` is `torch.tensor_split(arange(num_layers), pp_size)` (first ranks get the
extra layers); PR #9003 ("add pp_partition to customize each rank's layer number") lets
the LLM API take the list, which must have pp_size entries summing to the number of
decoder layers. Rank r sits on node r // gpus_per_node, local GPU r % gpus_per_node, so
on one host `CUDA_VISIBLE_DEVICES` orders the ranks, and across hosts every node must
hold the same number of consecutive ranks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from partitioner.export.base import Export, ends_cannot_express, plan_warnings
from partitioner.export.devices import (
    cuda_ordinals,
    interleaved_nodes,
    rank_comments,
    single_node,
    visible_devices,
)
from partitioner.export.view import PlanView, node_runs

__all__ = ["validate_pp_partition", "render"]


def validate_pp_partition(pp_partition: Sequence[int], pp_size: int, num_layers: int) -> list[int]:
    """pp_size integer entries that sum to num_layers (the rule PR #9003 enforces)."""
    parts = [int(x) for x in pp_partition]
    if len(parts) != pp_size:
        raise ValueError(f"pp_partition has {len(parts)} entries but pp_size is {pp_size}")
    if sum(parts) != num_layers:
        raise ValueError(f"sum(pp_partition)={sum(parts)} does not match num_layers={num_layers}")
    return parts


def render(view: PlanView, ordinals: Mapping[str, int] | None = None) -> Export:
    """`pipeline_parallel_size` and `pp_partition` for `tensorrt_llm.LLM(...)`."""
    ords, warnings = cuda_ordinals(view, ordinals)
    warnings = plan_warnings(view) + warnings
    cannot = ends_cannot_express(view, "TensorRT-LLM")
    parts = validate_pp_partition(view.decoder_counts, view.S, view.num_decoder_layers)
    lines = ["# TensorRT-LLM LLM API: LLM(model, pipeline_parallel_size=S, pp_partition=[...])", *rank_comments(view)]
    lines += visible_devices(view, ords, prefix="# ")
    if not single_node(view):
        per_node = [len(idx) for _, idx in node_runs(view)]
        if len(set(per_node)) > 1 or interleaved_nodes(view):
            cannot.append(
                f"TensorRT-LLM places gpus_per_node consecutive ranks on each node, but the plan has "
                f"{per_node} consecutive stages on nodes {[n for n, _ in node_runs(view)]}"
            )
    if 0 in parts:
        warnings.append("a stage has 0 decoder layers; check that your TensorRT-LLM version accepts a 0 entry")
    lines += [f"pipeline_parallel_size={view.S}", f"pp_partition={parts}"]
    return Export("trtllm", "\n".join(lines) + "\n", tuple(warnings), tuple(cannot))
