"""DeepSpeed `PipelineModule`: `parts`, the P+1 stage boundaries over the layer list.

deepspeedai/DeepSpeed `deepspeed/runtime/pipe/module.py::PipelineModule._partition_layers`
sets `self.parts` (stage s builds layers [parts[s], parts[s+1]) of the layer-spec list,
embedding and head included) from `partition_method` ("parameters", "uniform",
"type:<regex>"); there is no argument for an explicit list (open request #2974), so the
parts must be set by overriding `_partition_layers`. Boundaries index the plan's layer
list, which must match the PipelineModule's layer specs one to one. Pipe rank s = stage s.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from partitioner.export.base import Export, no_tp, plan_warnings
from partitioner.export.devices import rank_comments
from partitioner.export.view import PlanView

__all__ = ["validate_parts", "render"]


def validate_parts(parts: Sequence[int], num_stages: int, num_layers: int) -> list[int]:
    """P+1 non-decreasing boundaries from 0 to num_layers (what `_partition_layers` builds)."""
    p = [int(x) for x in parts]
    if len(p) != num_stages + 1:
        raise ValueError(f"parts has {len(p)} boundaries, expected num_stages + 1 = {num_stages + 1}")
    if p[0] != 0 or p[-1] != num_layers:
        raise ValueError(f"parts must run from 0 to {num_layers} (got {p})")
    if any(a > b for a, b in itertools.pairwise(p)):
        raise ValueError(f"parts must not decrease (got {p})")
    return p


def render(view: PlanView) -> Export:
    """`parts=[0, e_1, ..., L]` and the pipe rank -> device comments."""
    parts = validate_parts([*(st.start for st in view.stages), view.num_layers], view.S, view.num_layers)
    warnings = [
        *plan_warnings(view),
        "DeepSpeed has no option for an explicit partition (#2974): set self.parts in an override of "
        "PipelineModule._partition_layers, with num_stages = " + str(view.S),
    ]
    lines = [
        f"# DeepSpeed PipelineModule(num_stages={view.S}): stage s builds layers [parts[s], parts[s+1])",
        f"# assumes the PipelineModule's layer specs are the plan's {view.num_layers} layers one to one "
        "(embedding, decoder layers, LM head, in that order)",
        *rank_comments(view, "stage"),
    ]
    lines.append(f"parts={parts}")
    cannot = no_tp(view, "this DeepSpeed snippet", "sets pipeline stages only (tensor parallelism comes from the "
                   "PipelineModule's topology and the model's own TP layers, one degree for all stages)")
    return Export("deepspeed", "\n".join(lines) + "\n", tuple(warnings), tuple(cannot))
