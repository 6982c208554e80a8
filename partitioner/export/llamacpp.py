"""llama.cpp: `--split-mode layer --tensor-split ... --device ...` (and `--rpc` across hosts).

ggml-org/llama.cpp `src/llama-model.cpp::load_tensors`: the `-ts` values, in `--device`
order, become normalised cumulative split points (float32); with every layer offloaded
(`-ngl` >= n_layer + 1) repeating layer il goes to device upper_bound(splits,
il / (n_layer + 1)) and the output layer counts as position n_layer. So the emitted
`-ts` is the plan's decoder layers per stage with the last stage counting one more (the
output), and the replay (`partitioner.solvers.baselines.memory.counts_per_device`) shows
the counts llama.cpp will actually use; a difference is a warning.
The input embedding always stays on the CPU of the host running llama-server ("very
little benefit to offloading the input layer"), which the plan cannot change.
Devices on other hosts are `rpc-server` instances (`--rpc host:port,...`, ggml-rpc device
name `RPC[host:port]`; local CUDA devices are `CUDA<ordinal>`), one per remote GPU; the
default endpoint is `<node>:<50052 + k>` (50052 is rpc-server's default port).
"""

from __future__ import annotations

from collections.abc import Mapping

from partitioner.export.base import Export, plan_warnings
from partitioner.export.devices import cuda_ordinals
from partitioner.export.view import PlanView
from partitioner.solvers.baselines.memory import counts_per_device

__all__ = ["RPC_PORT", "render", "replay"]

RPC_PORT = 50052


def replay(tensor_split: list[int], n_layer: int) -> list[int]:
    """Positions (repeating layers + output) llama.cpp gives each device for this `-ts`."""
    return counts_per_device([float(x) for x in tensor_split], n_layer)


def _endpoints(view: PlanView, given: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    head = view.stages[0].node
    out: dict[str, str] = {}
    defaulted: list[str] = []
    for node in view.nodes:
        if node == head:
            continue
        for k, st in enumerate(s for s in view.stages if s.node == node):
            out[st.device] = given.get(st.device, f"{node}:{RPC_PORT + k}")
            if st.device not in given:
                defaulted.append(f"{st.device!r} -> {out[st.device]}")
    warn = [f"rpc-server endpoints assumed ({', '.join(defaulted)}); pass --rpc-endpoint NAME=HOST:PORT"] if defaulted else []
    return out, warn


def _positions(names: list[str], actual: list[int], n_layer: int) -> list[str]:
    """'# CUDA0: positions a-b' comment lines of the replayed split."""
    lines, pos = [], 0
    for name, n in zip(names, actual):
        span = f"positions {pos}-{pos + n - 1}" if n else "no layers"
        out = " (the last is the output layer)" if n and pos + n - 1 == n_layer else ""
        lines.append(f"# {name}: {span}{out}")
        pos += n
    return lines


def render(
    view: PlanView, ordinals: Mapping[str, int] | None = None, endpoints: Mapping[str, str] | None = None
) -> Export:
    """llama-server flags reproducing the plan, the rpc-server commands, and the replayed counts."""
    ords, warnings = cuda_ordinals(view, ordinals)
    eps, ep_warn = _endpoints(view, dict(endpoints or {}))
    warnings = plan_warnings(view) + warnings + ep_warn
    head, n_layer = view.stages[0].node, view.num_decoder_layers
    counts = list(view.decoder_counts)
    counts[-1] += 1  # the output layer is position n_layer
    kept = [view.stages[s] for s in range(view.S) if counts[s] > 0]
    cannot = [
        f"stage {s} ({st.device!r}) holds only the embedding, which llama.cpp keeps on the CPU of {head!r}; "
        "the device gets no layers and is left out of --device"
        for s, st in enumerate(view.stages)
        if counts[s] == 0
    ]
    if view.has_embed:
        warnings.append(f"llama.cpp keeps the input embedding on the CPU of {head!r}, not on stage 0's GPU")
    remote = [st for st in kept if st.node != head]
    names = [f"RPC[{eps[st.device]}]" if st.node != head else f"CUDA{ords[st.device]}" for st in kept]
    ts = [c for c in counts if c > 0]
    actual = replay(ts, n_layer)
    if actual != ts:
        warnings.append(f"llama.cpp will use {actual} layers per device for -ts {ts}, not the plan's {ts}")
    lines = [f"# llama.cpp: layer split over {len(kept)} devices in pipeline order (n_layer {n_layer} + output)"]
    for st in remote:
        port = eps[st.device].rsplit(":", 1)[1]
        lines.append(
            f"# on node {st.node!r}: CUDA_VISIBLE_DEVICES={ords[st.device]} rpc-server --host 0.0.0.0 --port {port}"
            f"   # {st.device!r}"
        )
    lines.append(f"# run llama-server on node {head!r} with:")
    flags = [f"--split-mode layer --n-gpu-layers {n_layer + 1}", "--tensor-split " + ",".join(map(str, ts))]
    flags.append("--device " + ",".join(names))
    if remote:
        flags.append("--rpc " + ",".join(eps[st.device] for st in remote))
        warnings.append("check the device names with `llama-server --list-devices` (RPC devices: RPC[host:port])")
    lines += [" ".join(flags), *_positions(names, actual, n_layer)]
    return Export("llamacpp", "\n".join(lines) + "\n", tuple(warnings), tuple(cannot))
