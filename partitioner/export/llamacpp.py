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
Devices on other hosts are `rpc-server` instances, one per remote GPU (its
`CUDA_VISIBLE_DEVICES` names the GPU); the default endpoint is `<address or node>:<50052 + k>`
(50052 is rpc-server's default port). `ggml/src/ggml-rpc/ggml-rpc.cpp::ggml_backend_rpc_add_server`
names remote devices `RPC0, RPC1, ...` in registration order (a global counter over the
`--rpc` list), local CUDA devices are `CUDA<ordinal>`. `common/arg.cpp`: `--rpc` registers
its servers while the arguments are parsed and `--device` resolves names then too, so
`--rpc` must come before `--device`. `-fit off`: `--fit` (on by default) would rewrite the
`-ts` split from memory projections. Minimum compute capability 5.0: the lowest entry of
ggml-cuda's default `CMAKE_CUDA_ARCHITECTURES` (`ggml/src/ggml-cuda/CMakeLists.txt`, 50-virtual).
"""

from __future__ import annotations

from collections.abc import Mapping

from partitioner.errors import InputError
from partitioner.export.base import Export, plan_warnings, unsupported_gpus
from partitioner.export.devices import cuda_ordinals
from partitioner.export.shell import Step, listing
from partitioner.export.view import PlanView
from partitioner.export.workload import launchable
from partitioner.solvers.baselines.memory import counts_per_device

__all__ = ["MIN_CC", "RPC_PORT", "render", "replay"]

MIN_CC = (5, 0)
RPC_PORT = 50052


def replay(tensor_split: list[int], n_layer: int) -> list[int]:
    """Positions (repeating layers + output) llama.cpp gives each device for this `-ts`."""
    return counts_per_device([float(x) for x in tensor_split], n_layer)


def _endpoints(view: PlanView, given: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    head = view.stages[0].node
    remote = {st.device for st in view.stages if st.node != head}
    unknown = sorted(set(given) - remote)
    if unknown:
        raise InputError(
            f"--rpc-endpoint names devices that are not remote stages of the plan: {', '.join(map(repr, unknown))} "
            f"(remote: {', '.join(sorted(remote)) or 'none'})"
        )
    out: dict[str, str] = {}
    defaulted: list[str] = []
    for node in view.nodes:
        if node == head:
            continue
        for k, st in enumerate(s for s in view.stages if s.node == node):
            out[st.device] = given.get(st.device, f"{view.address(node) or node}:{RPC_PORT + k}")
            if st.device not in given:
                defaulted.append(f"{st.device!r} -> {out[st.device]}")
    warn = [f"rpc-server endpoints assumed ({', '.join(defaulted)}); pass --rpc-endpoint NAME=HOST:PORT"] if defaulted else []
    return out, warn


def _positions(names: list[str], actual: list[int], n_layer: int) -> list[str]:
    """'# CUDA0: positions a-b' comment lines of the replayed split."""
    lines, pos = [], 0
    for name, n in zip(names, actual, strict=True):
        span = f"positions {pos}-{pos + n - 1}" if n else "no layers"
        out = " (the last is the output layer)" if n and pos + n - 1 == n_layer else ""
        lines.append(f"# {name}: {span}{out}")
        pos += n
    return lines


def render(
    view: PlanView, ordinals: Mapping[str, int] | None = None, endpoints: Mapping[str, str] | None = None
) -> Export:
    """`rpc-server` on each remote GPU, then llama-server reproducing the plan, and the replayed counts."""
    ords, warnings = cuda_ordinals(view, ordinals)
    eps, ep_warn = _endpoints(view, dict(endpoints or {}))
    warnings = plan_warnings(view) + warnings + ep_warn
    unsupported, cc_warn = unsupported_gpus(view, "llama.cpp (CUDA)", MIN_CC, "ggml-cuda default architectures")
    warnings += cc_warn
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
    rpc_index = {st.device: k for k, st in enumerate(remote)}
    names = [f"RPC{rpc_index[st.device]}" if st.node != head else f"CUDA{ords[st.device]}" for st in kept]
    ts = [c for c in counts if c > 0]
    actual = replay(ts, n_layer)
    if actual != ts:
        warnings.append(f"llama.cpp will use {actual} layers per device for -ts {ts}, not the plan's {ts}")
    steps = []
    for st in remote:
        port = eps[st.device].rsplit(":", 1)[1]
        env = (("CUDA_VISIBLE_DEVICES", str(ords[st.device])),)
        steps.append(Step(st.node, ("rpc-server", "--host", "0.0.0.0", "--port", port), env, f"rpc-server for {st.device!r}"))
    argv = ["llama-server", "-m", _model_path(view, warnings), "--split-mode", "layer", "--n-gpu-layers", str(n_layer + 1)]
    argv += ["--tensor-split", ",".join(map(str, ts))]
    if remote:  # before --device: --device names are resolved while the arguments are parsed
        argv += ["--rpc", ",".join(eps[st.device] for st in remote)]
    argv += ["--device", ",".join(names), "-fit", "off"]
    argv += _context_flags(view, warnings)
    steps.append(Step(head, tuple(argv), (), "serve (after every rpc-server is up)"))
    header = [f"llama.cpp: layer split over {len(kept)} devices in pipeline order (n_layer {n_layer} + output)"]
    header += [line[2:] for line in _positions(names, actual, n_layer)]
    return Export("llamacpp", listing(header, steps), tuple(warnings), tuple(cannot), tuple(unsupported), tuple(steps), not view.feasible)


def _model_path(view: PlanView, warnings: list[str]) -> str:
    model = view.model_id or ""
    if model.endswith(".gguf"):
        return model
    warnings.append(f"llama.cpp loads a GGUF file: replace MODEL.gguf with the GGUF of {model or view.model or 'the model'}")
    return "MODEL.gguf"


def _context_flags(view: PlanView, warnings: list[str]) -> list[str]:
    """-c is the context of all slots together; -np slots (llama-server server-context.cpp: n_ctx / n_parallel each)."""
    w = launchable(view)
    slots = w.max_sequences or 1
    out = ["-c", str(w.context * slots)] if w.context else []
    if w.max_sequences:
        out += ["-np", str(slots)]
    if w.kv_cache == "int8":
        out += ["-ctk", "q8_0", "-ctv", "q8_0"]
    elif w.kv_cache not in (None, "bf16", "fp16"):
        warnings.append(f"llama.cpp has no {w.kv_cache} KV cache type (-ctk/-ctv take f16, q8_0, q4_0, ...); it keeps f16")
    return out
