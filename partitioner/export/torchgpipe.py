"""torchgpipe: `GPipe(module, balance=[...], devices=[...], chunks=M)`.

kakaobrain/torchgpipe `torchgpipe/gpipe.py::split_module` raises BalanceError unless
`len(module) == sum(balance)` and every entry is > 0, and IndexError if
`len(balance) > len(devices)`. Balance counts every layer of the nn.Sequential
(embedding and head included), so it is the plan's layers per stage. torchgpipe runs in
one process, so every stage must be on one host.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from partitioner.export.base import Export, no_tp, plan_warnings
from partitioner.export.devices import cuda_ordinals, rank_comments
from partitioner.export.view import PlanView

__all__ = ["validate_balance", "render"]


def validate_balance(balance: Sequence[int], num_layers: int, num_devices: int) -> list[int]:
    """torchgpipe's own checks, with its messages."""
    b = [int(x) for x in balance]
    if num_layers != sum(b):
        raise ValueError(f"module and sum of balance have different length (module: {num_layers}, sum of balance: {sum(b)})")
    if any(x <= 0 for x in b):
        raise ValueError(f"all balance numbers must be positive integer (balance: {b})")
    if len(b) > num_devices:
        raise IndexError(f"too few devices to hold given partitions (devices: {num_devices}, partitions: {len(b)})")
    return b


def render(view: PlanView, ordinals: Mapping[str, int] | None = None) -> Export:
    """`balance=[...]` and `devices=['cuda:k', ...]` in pipeline order."""
    ords, warnings = cuda_ordinals(view, ordinals)
    warnings = plan_warnings(view) + warnings
    cannot = no_tp(view, "torchgpipe", "puts each partition on one device (`devices[i]`, torchgpipe/gpipe.py::split_module)")
    if len(view.nodes) > 1:
        cannot.append(f"torchgpipe runs in one process on one host, but the plan spans nodes {view.nodes}")
    balance = validate_balance([st.layers for st in view.stages], view.num_layers, view.S)
    devices = [f"cuda:{ords[st.group[0]]}" for st in view.stages]  # a TP group: its first GPU (not expressible)
    lines = [
        "# torchgpipe: GPipe(model, balance=balance, devices=devices, chunks=M)",
        f"# assumes model is an nn.Sequential of the plan's {view.num_layers} layers (embedding, decoder layers, LM head)",
        *rank_comments(view, "partition"),
    ]
    lines += [f"balance={balance}", f"devices={devices}"]
    return Export("torchgpipe", "\n".join(lines) + "\n", tuple(warnings), tuple(cannot))
