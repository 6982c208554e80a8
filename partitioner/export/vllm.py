"""vLLM and SGLang: `*_PP_LAYER_PARTITION=a,b,...` decoder layers per pipeline rank.

vLLM: vllm-project/vllm `vllm/distributed/utils.py::get_pp_indices` reads
`VLLM_PP_LAYER_PARTITION`, and raises ValueError unless every entry parses as int,
`len(partitions) == pp_size` and `sum(partitions) == num_hidden_layers`; entries are not
required to be >= 1. Rank k takes decoder layers [sum(p[:k]), sum(p[:k+1])); the embedding
is on rank 0 and the LM head on the last rank. SGLang copies this (sgl-project/sglang
`python/sglang/srt/distributed/utils.py::get_pp_indices`, env `SGLANG_PP_LAYER_PARTITION`,
same checks). Rank k uses the k-th visible GPU on one host, so `CUDA_VISIBLE_DEVICES`
lists the stage devices in pipeline order. Across hosts both engines assign consecutive
ranks node by node; SGLang puts pp_size // nnodes ranks on every node
(`python/sglang/srt/entrypoints/engine.py`), so unequal stage counts per node cannot be
expressed there.
"""

from __future__ import annotations

from collections.abc import Mapping

from partitioner.export.base import Export, ends_cannot_express, plan_warnings
from partitioner.export.devices import (
    cuda_ordinals,
    interleaved_nodes,
    rank_comments,
    single_node,
    visible_devices,
)
from partitioner.export.view import PlanView

__all__ = ["validate_partition", "render_vllm", "render_sglang"]


def validate_partition(partition_str: str, pp_size: int, num_hidden_layers: int) -> list[int]:
    """vLLM's (and SGLang's) own check of the env var, with the same ValueError messages."""
    try:
        partitions = [int(layer) for layer in partition_str.split(",")]
    except ValueError as err:
        raise ValueError(f"Invalid partition string: {partition_str}") from err
    if len(partitions) != pp_size:
        raise ValueError(f"len(partitions)={len(partitions)} does not match pp_size={pp_size}.")
    if sum(partitions) != num_hidden_layers:
        raise ValueError(f"sum(partitions)={sum(partitions)} does not match num_hidden_layers={num_hidden_layers}.")
    return partitions


def _render(view: PlanView, target: str, engine: str, env: str, size_flag: str, ordinals: Mapping[str, int] | None) -> Export:
    ords, warnings = cuda_ordinals(view, ordinals)
    warnings = plan_warnings(view) + warnings
    cannot = ends_cannot_express(view, engine)
    partition = ",".join(str(c) for c in view.decoder_counts)
    validate_partition(partition, view.S, view.num_decoder_layers)
    lines = [f"# {engine}: pipeline rank k runs stage k ({view.S} ranks, tensor parallel 1)", *rank_comments(view)]
    lines += visible_devices(view, ords)
    if not single_node(view):
        warnings.append(
            f"the plan spans {len(view.nodes)} nodes: {engine} assigns consecutive ranks node by node; "
            f"start rank 0 on node {view.stages[0].node!r} and check the rank -> GPU mapping in its log"
        )
        cannot += [f"{engine} cannot return to node {n!r}: its stages must be consecutive ranks" for n in interleaved_nodes(view)]
    for s, c in enumerate(view.decoder_counts):
        if c == 0:
            warnings.append(
                f"stage {s} ({view.stages[s].device!r}) has 0 decoder layers: {env} accepts a 0 entry "
                "(only the count and the sum are checked), the rank then holds only the embedding/LM head"
            )
    lines += [f"export {env}={partition}", f"{size_flag} {view.S}"]
    return Export(target, "\n".join(lines) + "\n", tuple(warnings), tuple(cannot))


def render_vllm(view: PlanView, ordinals: Mapping[str, int] | None = None) -> Export:
    """`VLLM_PP_LAYER_PARTITION`, `CUDA_VISIBLE_DEVICES` (one host) and `--pipeline-parallel-size`."""
    return _render(view, "vllm", "vLLM", "VLLM_PP_LAYER_PARTITION", "--pipeline-parallel-size", ordinals)


def render_sglang(view: PlanView, ordinals: Mapping[str, int] | None = None) -> Export:
    """`SGLANG_PP_LAYER_PARTITION`, `CUDA_VISIBLE_DEVICES` (one host) and `--pp-size`."""
    out = _render(view, "sglang", "SGLang", "SGLANG_PP_LAYER_PARTITION", "--pp-size", ordinals)
    per_node = [sum(1 for st in view.stages if st.node == n) for n in view.nodes]
    if len(set(per_node)) > 1:
        extra = (
            f"SGLang puts pp_size // nnodes ranks on every node, but the plan has {per_node} stages "
            f"on nodes {view.nodes}"
        )
        out = Export(out.target, out.text, out.warnings, out.cannot_express + (extra,))
    return out
