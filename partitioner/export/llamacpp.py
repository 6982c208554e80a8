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

Tensor parallelism: llama.cpp has one split mode for the whole model (`llama_model_params.split_mode`).
`--split-mode row` gives every layer's weight matrices the backend's split buffer type
(`src/llama-model.cpp::make_gpu_buft_list`: `ggml_backend_split_buffer_type` of the device's
registry, i.e. the local CUDA devices, rows in `-ts` proportions), so it can express one stage
whose TP group is local GPUs of the llama-server host (a one-stage plan): `-sm row -ts 1,1,...`
over the group. It cannot express TP inside some stages of a layer split, nor TP over RPC
devices (the RPC backend has no split buffer type); `--fit` also refuses row mode
(`llama_params_fit`: "changing weight allocation for LLAMA_SPLIT_MODE_ROW not implemented").
For such a plan the export prints the layer split with each group's decoder layers spread
evenly over its members (a pipeline, not TP) and marks the plan not expressible.

Launch rules checked on a real build (tests/e2e; llama.cpp ggml-org/llama.cpp@0c1e57098, the copy
vendored in llama-cpp-python 0.3.36):
- Slots: `src/llama-cparams.h` `LLAMA_MAX_SEQ` = 256 and `llama_context` throws "n_seq_max must
  be <= 256", so `-np` is at most 256. With an explicit `-np` the KV cache is not unified and each
  slot gets n_ctx / n_seq_max (`src/llama-context.cpp`, padded to 256), so `-c` = np x context.
- Binary names: `tools/rpc/CMakeLists.txt` builds `ggml-rpc-server` (older builds: `rpc-server`);
  the scripts run whichever is on PATH.
- Endpoints: `ggml/src/ggml-rpc/ggml-rpc.cpp::parse_endpoint` splits HOST:PORT at the first ':',
  so an IPv6 address cannot be an endpoint (refused). `rpc-server --host` binds one address: the
  node's `address:` when the cluster file gives one (else 0.0.0.0, every IPv4 interface).
- Every rpc-server of a host runs in the background of that host's script, which waits until each
  listens; the llama-server script first waits until every `--rpc` endpoint answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from partitioner.errors import InputError
from partitioner.export.base import Export, plan_warnings, unsupported_gpus
from partitioner.export.devices import cuda_ordinals
from partitioner.export.shell import Step, comment, cuda_env, is_host_name, is_ipv6, listing
from partitioner.export.versions import release, version_line
from partitioner.export.view import PlanView
from partitioner.export.workload import launchable
from partitioner.models.engines import resolve_engine
from partitioner.solvers.baselines.memory import counts_per_device

__all__ = ["MIN_CC", "RPC_PORT", "MAX_SEQ", "RPC_BINARY", "RPC_BINARY_OLD", "render", "replay"]

MIN_CC = resolve_engine("llamacpp").min_cc  # presets/engines.yaml (the docs cited above)
RPC_PORT = 50052
MAX_SEQ = 256  # LLAMA_MAX_SEQ, src/llama-cparams.h
_PCI_ORDER = (("CUDA_DEVICE_ORDER", "PCI_BUS_ID"),)  # the CUDA<k> of --device in PCI bus order
RPC_BINARY, RPC_BINARY_OLD = "ggml-rpc-server", "rpc-server"  # tools/rpc/CMakeLists.txt: set(TARGET ggml-rpc-server)
SERVE_PORT = 8080  # llama-server's default --port (common/common.h)


def replay(tensor_split: list[int], n_layer: int) -> list[int]:
    """Positions (repeating layers + output) llama.cpp gives each device for this `-ts`."""
    return counts_per_device([float(x) for x in tensor_split], n_layer)


@dataclass(frozen=True)
class _Unit:
    """One llama.cpp device in --device order: a stage's device, or one member of its TP group."""

    device: str
    node: str
    count: int  # positions (decoder layers; the last unit also the output layer)
    stage: int


def _units(view: PlanView) -> list[_Unit]:
    """The devices llama.cpp's layer split runs, in pipeline order; a TP group's decoder layers are
    spread evenly over its members (the first ones take the remainder)."""
    out = []
    for s, st in enumerate(view.stages):
        c, t = st.decoder_layers, len(st.group)
        out += [_Unit(d, st.node, c // t + (1 if i < c % t else 0), s) for i, d in enumerate(st.group)]
    last = out[-1]
    out[-1] = _Unit(last.device, last.node, last.count + 1, last.stage)  # the output layer is position n_layer
    return out


def _endpoints(view: PlanView, given: Mapping[str, str], units: list[_Unit]) -> tuple[dict[str, str], list[str]]:
    head = view.stages[0].node
    remote = {u.device for u in units if u.node != head}
    unknown = sorted(set(given) - remote)
    if unknown:
        raise InputError(
            f"--rpc-endpoint names devices that are not remote stages of the plan: {', '.join(map(repr, unknown))} "
            f"(remote: {', '.join(sorted(remote)) or 'none'})"
        )
    for name, ep in given.items():
        if is_ipv6(ep.rsplit(":", 1)[0]) or ":" not in ep:
            raise InputError(f"--rpc-endpoint {name}={ep}: llama.cpp takes HOST:PORT with an IPv4 address or host name "
                             "(ggml-rpc.cpp parse_endpoint splits at the first ':'; IPv6 is not supported)")
    for node in view.nodes:
        addr = view.address(node)
        if node != head and addr and is_ipv6(addr):
            raise InputError(f"cluster node {node!r} address {addr!r}: llama.cpp's RPC endpoints cannot be IPv6 "
                             "(ggml-rpc.cpp parse_endpoint splits HOST:PORT at the first ':'); give an IPv4 address or host name")
    out: dict[str, str] = {}
    defaulted: list[str] = []
    for node in view.nodes:
        if node == head:
            continue
        for k, u in enumerate(u for u in units if u.node == node):
            out[u.device] = given.get(u.device, f"{view.address(node) or node}:{RPC_PORT + _port_base(view) + k}")
            if u.device not in given:
                defaulted.append(f"{u.device!r} -> {out[u.device]}")
    warn = [f"rpc-server endpoints assumed ({', '.join(defaulted)}); pass --rpc-endpoint NAME=HOST:PORT"] if defaulted else []
    return out, warn


def _positions(names: list[str], actual: list[int], n_layer: int) -> list[str]:
    """'# CUDA0: positions a-b' comment lines of the replayed split."""
    lines, pos = [], 0
    for name, n in zip(names, actual, strict=True):
        span = f"positions {pos}-{pos + n - 1}" if n else "no layers"
        out = " (the last is the output layer)" if n and pos + n - 1 == n_layer else ""
        lines.append(comment(f"{name}: {span}{out}"))
        pos += n
    return lines


def _port_base(view: PlanView) -> int:
    """Replica r of a deployment offsets its rpc-server ports by 100 r (replicas may share hosts)."""
    return 100 * (view.replica or 0)


def render(
    view: PlanView, ordinals: Mapping[str, int] | None = None, endpoints: Mapping[str, str] | None = None
) -> Export:
    """`rpc-server` on each remote GPU, then llama-server reproducing the plan, and the replayed counts."""
    ords, warnings = cuda_ordinals(view, ordinals)
    head, n_layer = view.stages[0].node, view.num_decoder_layers
    if view.S == 1 and view.stages[0].tp > 1 and view.stages[0].node == head:
        return _row_split(view, ords, warnings)
    units = _units(view)
    eps, ep_warn = _endpoints(view, dict(endpoints or {}), units)
    warnings = plan_warnings(view) + warnings + ep_warn
    unsupported, cc_warn = unsupported_gpus(view, "llama.cpp (CUDA)", MIN_CC, "ggml-cuda default architectures")
    warnings += cc_warn
    kept = [u for u in units if u.count > 0]
    cannot = [
        f"stage {u.stage} ({u.device!r}) holds only the embedding, which llama.cpp keeps on the CPU of {head!r}; "
        "the device gets no layers and is left out of --device"
        for u in units
        if u.count == 0 and view.stages[u.stage].tp == 1
    ]
    if any(st.tp > 1 for st in view.stages):
        per = "/".join(str(st.tp) for st in view.stages)
        cannot.append(
            f"llama.cpp cannot run tensor parallelism inside stages of a layer split (TP degrees {per}): "
            "--split-mode row splits every layer over the local CUDA devices (src/llama-model.cpp::make_gpu_buft_list); "
            "printed instead: each TP group's layers spread over its members as a layer split"
        )
    if view.has_embed:
        warnings.append(f"llama.cpp keeps the input embedding on the CPU of {head!r}, not on stage 0's GPU")
    remote = [u for u in kept if u.node != head]
    rpc_index = {u.device: k for k, u in enumerate(remote)}
    names = [f"RPC{rpc_index[u.device]}" if u.node != head else f"CUDA{ords[u.device]}" for u in kept]
    ts = [u.count for u in kept]
    actual = replay(ts, n_layer)
    if actual != ts:
        warnings.append(f"llama.cpp will use {actual} layers per device for -ts {ts}, not the plan's {ts}")
    bad_hosts = [n for n in view.nodes if view.address(n) is None and not is_host_name(n) and any(u.node == n for u in remote)]
    if bad_hosts:
        warnings.append(f"node names {bad_hosts!r} are not host names: set nodes: NAME: address: in cluster.yaml")
    steps = []
    for u in remote:
        port = eps[u.device].rsplit(":", 1)[1]
        bind = view.address(u.node) or "0.0.0.0"
        probe = f"{'127.0.0.1' if bind == '0.0.0.0' else bind}:{port}"
        steps.append(Step(u.node, (RPC_BINARY, "--host", bind, "--port", port), cuda_env(str(ords[u.device])),
                          f"rpc-server for {u.device!r}", serves=probe, fallback=RPC_BINARY_OLD))
    argv = ["llama-server", "-m", _model_path(view, warnings), "--split-mode", "layer", "--n-gpu-layers", str(n_layer + 1)]
    argv += ["--tensor-split", ",".join(map(str, ts))]
    if remote:  # before --device: --device names are resolved while the arguments are parsed
        argv += ["--rpc", ",".join(eps[u.device] for u in remote)]
    argv += ["--device", ",".join(names), "-fit", "off"]
    argv += _context_flags(view, warnings)
    argv += _port_flags(view)
    needs = tuple(eps[u.device] for u in remote if is_host_name(eps[u.device].rsplit(":", 1)[0]))
    env = _PCI_ORDER if any(u.node == head for u in kept) else ()  # --device CUDA<ordinal> names
    steps.append(Step(head, tuple(argv), env, "serve (after every rpc-server is up)", needs=needs))
    header = [version_line("llamacpp", view.engine_version),
              f"llama.cpp: layer split over {len(kept)} devices in pipeline order (n_layer {n_layer} + output)"]
    header += [line[2:] for line in _positions(names, actual, n_layer)]
    return Export("llamacpp", listing(header, steps), tuple(warnings), tuple(cannot), tuple(unsupported), tuple(steps), not view.feasible)


def _port_flags(view: PlanView) -> list[str]:
    return [] if view.replica is None else ["--port", str(SERVE_PORT + view.replica)]


def _row_split(view: PlanView, ords: Mapping[str, int], warnings: list[str]) -> Export:
    """One stage on a TP group of local GPUs: `--split-mode row` over the group (make_gpu_buft_list)."""
    st = view.stages[0]
    warnings = plan_warnings(view) + warnings
    unsupported, cc_warn = unsupported_gpus(view, "llama.cpp (CUDA)", MIN_CC, "ggml-cuda default architectures")
    warnings += cc_warn
    gpus = sorted(ords[d] for d in st.group)
    names = [f"CUDA{g}" for g in gpus]
    argv = ["llama-server", "-m", _model_path(view, warnings), "--split-mode", "row",
            "--n-gpu-layers", str(view.num_decoder_layers + 1), "--tensor-split", ",".join("1" for _ in gpus),
            "--main-gpu", "0", "--device", ",".join(names), "-fit", "off"]
    argv += _context_flags(view, warnings) + _port_flags(view)
    warnings.append("--split-mode row splits each weight matrix by rows over the group; the KV cache and the "
                    "small tensors stay on --main-gpu (the first listed device)")
    steps = [Step(st.node, tuple(argv), _PCI_ORDER, f"serve on TP group {list(st.group)!r} (tensor parallel {st.tp}, row split)")]
    header = [version_line("llamacpp", view.engine_version),
              f"llama.cpp: one stage, tensor parallel {st.tp} as --split-mode row over {', '.join(names)}"]
    return Export("llamacpp", listing(header, steps), tuple(warnings), (), tuple(unsupported), tuple(steps), not view.feasible)


def _model_path(view: PlanView, warnings: list[str]) -> str:
    model = view.model_id or ""
    if model.endswith(".gguf"):
        return model
    warnings.append(f"llama.cpp loads a GGUF file: replace MODEL.gguf with the GGUF of {model or view.model or 'the model'}")
    return "MODEL.gguf"


def _context_flags(view: PlanView, warnings: list[str]) -> list[str]:
    """-c is the context of all slots together; -np slots (llama-server server-context.cpp: n_ctx / n_parallel each)."""
    w = launchable(view)
    cap = int(release("llamacpp", view.engine_version)[1].get("max_seq", MAX_SEQ))
    slots = min(w.max_sequences or 1, cap)
    if w.max_sequences and w.max_sequences > cap:
        warnings.append(f"-np {cap}, not the plan's {w.max_sequences} sequences: llama.cpp serves at most "
                        f"LLAMA_MAX_SEQ = {cap} slots (src/llama-cparams.h)")
    out = ["-c", str(w.context * slots)] if w.context else []
    if w.max_sequences:
        out += ["-np", str(slots)]
    if w.kv_cache == "int8":
        out += ["-ctk", "q8_0", "-ctv", "q8_0"]
    elif w.kv_cache not in (None, "bf16", "fp16"):
        warnings.append(f"llama.cpp has no {w.kv_cache} KV cache type (-ctk/-ctv take f16, q8_0, q4_0, ...); it keeps f16")
    return out
