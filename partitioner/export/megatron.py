"""Megatron-LM: `--pipeline-model-parallel-layout "Et*k|t*k|...|t*kL"`.

NVIDIA/Megatron-LM `megatron/core/transformer/pipeline_parallel_layer_layout.py::
PipelineParallelLayerLayout`: `parse_str_to_list` splits stages on "|", unrolls "x*n",
maps E (embedding), t (decoder), m (MTP), L (loss/head); the number of stages must be a
multiple of the pipeline size (here exactly it: no virtual stages), and
`validate_layer_layout` requires the first layer to be E, the last L, each exactly once,
and as many t as `num_layers`. A stage holding only the embedding ("E|...") is allowed.
"""

from __future__ import annotations

import re

from partitioner.export.base import Export, plan_warnings, uniform_tp
from partitioner.export.devices import rank_comments
from partitioner.export.view import PlanView

__all__ = ["parse_layout", "validate_layout", "render"]


def parse_layout(layout: str) -> list[list[str]]:
    """Megatron's `parse_str_to_list`: stages as lists of layer characters."""
    s = layout.replace(",", "")
    for pattern in (r"\(([^)]+)\)\*(\d+)", r"(.)\*(\d+)"):
        s = re.sub(pattern, lambda m: m.group(1) * int(m.group(2)), s)
    stages = []
    for stage in s.split("|"):
        for ch in stage:
            if ch not in "ELtm":
                raise ValueError(f"Invalid layer character: {ch} ({stage=}, {s=})")
        stages.append(list(stage))
    return stages


def validate_layout(layout: str, pipeline_size: int, num_layers: int) -> list[list[str]]:
    """The checks of `PipelineParallelLayerLayout.__init__` and `validate_layer_layout`."""
    stages = parse_layout(layout)
    if len(stages) % pipeline_size:
        raise ValueError(f"layout has {len(stages)} stages, not divisible by pipeline size {pipeline_size}")
    flat = [ch for st in stages for ch in st]
    if not flat or flat[0] != "E":
        raise ValueError(f"The first layer must be embedding, but got {flat[:1]}")
    if flat[-1] != "L":
        raise ValueError(f"The last layer must be loss, but got {flat[-1]}")
    if flat.count("E") != 1 or flat.count("L") != 1:
        raise ValueError("Embedding and loss must be specified exactly once")
    if flat.count("t") != num_layers:
        raise ValueError(f"Number of decoder layers {flat.count('t')} must match num_layers {num_layers}")
    return stages


def _stage(embed: bool, t: int, head: bool) -> str:
    return ("E" if embed else "") + ("t" if t == 1 else f"t*{t}" if t > 1 else "") + ("L" if head else "")


def render(view: PlanView) -> Export:
    """`--pipeline-model-parallel-size S --pipeline-model-parallel-layout "..."`."""
    warnings = [*plan_warnings(view), "Megatron-LM is a training framework: the layout sets its pipeline stages"]
    last = view.S - 1
    parts = [
        _stage(st.embed or (s == 0 and not view.has_embed), st.decoder_layers, st.head or (s == last and not view.has_head))
        for s, st in enumerate(view.stages)
    ]
    layout = "|".join(parts)
    cannot = []
    try:
        validate_layout(layout, view.S, view.num_decoder_layers)
    except ValueError as exc:
        cannot.append(f"Megatron-LM rejects the layout {layout!r}: {exc}")
    lines = [
        f"# Megatron-LM (--num-layers {view.num_decoder_layers}): pipeline rank k runs stage k",
        "# assumes the model's layers are E (embedding), t (decoder) x num-layers, L (LM head and loss)",
        *rank_comments(view),
    ]
    tp, tp_cannot = uniform_tp(view, "Megatron-LM", "megatron", "megatron/training/arguments.py --tensor-model-parallel-size, one int")
    cannot += tp_cannot
    tp_flag = f" --tensor-model-parallel-size {tp}" if tp > 1 else ""
    lines.append(f'--pipeline-model-parallel-size {view.S}{tp_flag} --pipeline-model-parallel-layout "{layout}"')
    return Export("megatron", "\n".join(lines) + "\n", tuple(warnings), tuple(cannot))
