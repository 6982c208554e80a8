"""`build_tables(model, cluster) -> CostTables`: the planner's numbers from the user's specs.

Takes the validated specs of `partitioner.models` duck-typed (no pydantic import here) and
returns plain numpy arrays (docs/costmodel.md; contract: partitioner.problem.CostTables).
Roofline forms (preset / architecture / hf_config) give layers "embed", "layer.0".."layer.N-1",
"lm_head"; a measured profile gives its own layers, `repeat` expanded with a suffix index.

The engine (`engine=` argument, else `engine:` of the model's workload or of cluster.yaml, else
generic; presets/engines.yaml) enters twice: its per-token fixed cost is charged on the LM head, so
once per token per pipeline on the stage that samples (a 1-GPU and a 2-GPU layer split of one model
carry the same total), and its per-hop overhead is added to the latency alpha of every link, so it
enters d_s = alpha + b/beta once per hop. A measured profile's costs are used as measured.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from partitioner.costs import memory, roofline
from partitioner.costs.roofline import Hardware, Shape, Work
from partitioner.errors import ConfigError, InputError
from partitioner.problem import CostTables

__all__ = ["build_tables", "link_arrays", "roofline_layers", "profile_layers", "select_engine", "engine_pool", "engine_flags",
           "engine_settings", "engine_capacity_gb", "serving_fields",
           "RETURN_BYTES_PER_SEQUENCE", "POOL_ENGINES"]

# Engines whose KV pool is modelled as the engine sizes it (partitioner.costs.kvpool); generic and
# trtllm keep the free-memory model of serving/capacity.py.
POOL_ENGINES = ("vllm", "sglang", "llamacpp")

# Sampled token ids sent back to the first stage per sequence and step: one int64 token id
# (an assumption; the payload differs between engines, and d_ret is mostly link latency).
RETURN_BYTES_PER_SEQUENCE = 8.0


def link_arrays(cluster: Any, hop_s: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """latency_s[G,G] (alpha, seconds) and bandwidth_Bps[G,G] (beta, bytes/s); diagonal 0 / inf.

    `hop_s`: the engine's fixed cost per pipeline hop (copy launch, synchronisation), added to the
    link latency of every pair (GenZ/LLMCompass link time alpha + bytes/beta, docs/costmodel.md)."""
    devs = cluster.devices
    G = len(devs)
    alpha = np.zeros((G, G))
    beta = np.full((G, G), np.inf)
    if not getattr(cluster, "pairs", None) and G > 1:  # the node defaults only: two links, set by node equality
        nodes = [d.node for d in devs]
        same = np.array([[m == n for n in nodes] for m in nodes])
        intra, inter = cluster.link(devs[0], devs[0]), cluster.link(devs[0], _other_node(devs))
        alpha[:] = np.where(same, intra.latency_ms, inter.latency_ms) / 1e3 + hop_s
        beta[:] = np.where(same, intra.bandwidth_gb_s, inter.bandwidth_gb_s) * 1e9
        np.fill_diagonal(alpha, 0.0)
        np.fill_diagonal(beta, np.inf)
        return alpha, beta
    for g, a in enumerate(devs):
        for h, b in enumerate(devs):
            if g != h:
                link = cluster.link(a, b)
                alpha[g, h] = link.latency_ms / 1e3 + hop_s
                beta[g, h] = link.bandwidth_gb_s * 1e9
    return alpha, beta


def _other_node(devs: Any) -> Any:
    """A device on another node than the first (the first itself when all share one node: the
    inter-node link then goes unused)."""
    return next((d for d in devs if d.node != devs[0].node), devs[0])


def roofline_layers(arch: Any, workload: Any, gpus: list[Any], engine: Any = None) -> dict[str, Any]:
    """Per-layer cost (roofline.py), memory (memory.py), cut bytes and params, forms 1-2; the
    per-token fixed cost of each device is charged on its LM head (module docstring)."""
    s, w = Shape.of(arch), Work.of(workload)
    made: dict[int, Hardware] = {}  # one Hardware per distinct spec object (64 GPUs of 8 kinds: 8)
    for gpu in gpus:
        if id(gpu) not in made:
            made[id(gpu)] = Hardware.of(gpu, 8.0 * w.b_w, engine)
    hws = [made[id(gpu)] for gpu in gpus]
    parts = (
        [("embed", "embed", roofline.embed_flops(s, w), roofline.embed_bytes(s, w),
          memory.embed_memory_gb(s, w), roofline.embed_params(s))]
        + [(f"layer.{n}", "decoder", roofline.layer_flops(s, w), roofline.layer_bytes(s, w),
            memory.decoder_memory_gb(s, w), roofline.layer_params(s)) for n in range(s.L)]
        + [("lm_head", "head", roofline.head_flops(s, w), roofline.head_bytes(s, w),
            memory.head_memory_gb(s, w), roofline.head_params(s) if not s.tie else s.h)]
    )
    cost = np.array([[roofline.roofline_time(f, b, hw) for (_, _, f, b, _, _) in parts] for hw in hws])
    if hws:
        cost[:, -1] += [hw.t_token for hw in hws]
    cut = np.full(len(parts), roofline.cut_bytes(s, w))
    cut[-1] = 0.0  # nothing is sent on after the LM head
    return {
        "cost": cost,
        "memory_gb": np.array([p[4] for p in parts]),
        "cut_bytes": cut,
        "layer_names": tuple(p[0] for p in parts),
        "layer_kinds": tuple(p[1] for p in parts),
        "params": np.array([p[5] for p in parts], dtype=float),
        "tied_gb": memory.tied_gb(s, w),
        **_roofline_serving(arch, workload, hws, s, w),
    }


def _roofline_serving(arch: Any, workload: Any, hws: list[Hardware], s: Shape, w: Work) -> dict[str, Any]:
    """The serving fields of CostTables (problem.py): memory.py's KV cache split off the layer
    memory, and one prompt's prefill costs (roofline at batch 1, `prompt_tokens`) for the TTFT."""
    one = dataclasses.replace(w, B=1, in_flight=1)
    kv_seq = memory.kv_cache_gb(s, one) * memory.GB  # bytes one sequence holds per decoder layer
    kv = np.array([0.0] + [kv_seq / w.kv_tokens] * s.L + [0.0])
    held = w.kv_tokens * w.B * w.in_flight * kv / memory.GB
    out: dict[str, Any] = {
        "kv_bytes_per_token": kv,
        "context": w.kv_tokens,
        "batch": w.B,
        "in_flight": w.in_flight,
        "prompt_tokens": w.S,
        "return_bytes": RETURN_BYTES_PER_SEQUENCE * w.B,
        "_held_gb": held,
    }
    if w.phase == "decode":
        pre = dataclasses.replace(w, phase="prefill", B=1, in_flight=1)
        fl = [roofline.embed_flops(s, pre)] + [roofline.layer_flops(s, pre)] * s.L + [roofline.head_flops(s, pre)]
        by = [roofline.embed_bytes(s, pre)] + [roofline.layer_bytes(s, pre)] * s.L + [roofline.head_bytes(s, pre)]
        out["prefill_cost"] = np.array([[roofline.roofline_time(f, b, hw) for f, b in zip(fl, by, strict=True)] for hw in hws])
        if hws:
            out["prefill_cost"][:, -1] += [hw.t_token for hw in hws]  # the first token pays the per-token cost too
        cut = np.full(s.L + 2, roofline.cut_bytes(s, pre))
        cut[-1] = 0.0
        out["prefill_cut_bytes"] = cut
    return out


def _at(model: Any, where: tuple[Any, ...], value: Any, x: float, what: str) -> float:
    """A scalar cost, or a {size: seconds} table linearly interpolated at x (error outside it)."""
    if not isinstance(value, dict):
        return float(value)
    sizes = sorted(value)
    if not sizes[0] <= x <= sizes[-1]:
        file, line = model.locate(*where)
        raise ConfigError(
            f"{what} {x:g} is outside the table's sizes {sizes[0]}..{sizes[-1]}; measure it or "
            f"choose a {what} inside the table",
            file=file, location=".".join(str(p) if isinstance(p, str) else f"[{p}]" for p in where).replace(".[", "["),
            line=line,
        )
    return float(np.interp(x, sizes, [value[k] for k in sizes]))


def _entry_cost(model: Any, index: int, entry: Any, devices: Any, *, field: str = "cost", x: float = 1.0) -> list[float]:
    """Seconds of one profile entry on each device: device name first, then its GPU id; a batch
    table (``{batch: seconds}``) is interpolated at x (Helix interpolates its bs2time rows so)."""
    table = getattr(entry, field)
    out = []
    for dev in devices:
        key = dev.name if dev.name in table else dev.gpu_id
        value = table.get(key)
        if value is None:
            file, line = model.locate("layers", index, field)
            raise ConfigError(
                f"layer {entry.name!r} has no {field} for device {dev.name!r} (gpu {dev.gpu_id!r}); "
                f"add one of them (has: {', '.join(table)})",
                file=file, location=f"layers[{index}].{field}", line=line,
            )
        what = "batch" if field == "cost" else "prompt tokens"
        out.append(_at(model, ("layers", index, field, key), value, x, what))
    return out


def profile_layers(model: Any, devices: Any) -> dict[str, Any]:
    """Expand a measured profile (form 3): `repeat` copies named ``<name>.<k>``.

    The profile's workload (batch B, in_flight K, context C, prompt_tokens) picks the row of
    batch tables; `memory_gb` is what a layer needs besides its KV cache, to which
    kv_bytes_per_token·C·B·K is added. `out_bytes` is sent at the profile's batch and scales
    with B when a search changes it (activations are per token, docs/costmodel.md cut bytes); a
    prompt of P tokens sends out_bytes·P/B.
    """
    wl = model.workload
    B, K, C, P = wl.batch, wl.in_flight, wl.context, wl.prompt_tokens
    scale = B / (getattr(model, "_base_batch", None) or B)
    names, kinds, cols, mem, cut, params, kv, pre = [], [], [], [], [], [], [], []
    has_prefill = all(e.prefill_cost is not None for e in model.layers)
    for index, entry in enumerate(model.layers):
        col = _entry_cost(model, index, entry, devices, field="cost", x=B)
        pcol = _entry_cost(model, index, entry, devices, field="prefill_cost", x=P) if has_prefill else None
        for k in range(entry.repeat):
            names.append(f"{entry.name}.{k}" if entry.repeat > 1 else entry.name)
            kinds.append(entry.kind)
            cols.append(col)
            pre.append(pcol)
            mem.append(entry.memory_gb)
            cut.append(entry.out_bytes * scale)
            params.append(entry.params)
            kv.append(entry.kv_bytes_per_token)
    kv_arr = np.array(kv, dtype=float)
    weight = np.array(mem, dtype=float)
    cut_arr = np.array(cut, dtype=float)
    out: dict[str, Any] = {
        "cost": np.array(cols, dtype=float).T,
        "memory_gb": weight + kv_arr * C * B * K / memory.GB,
        "weight_gb": weight,
        "kv_bytes_per_token": kv_arr,
        "context": C,
        "batch": B,
        "in_flight": K,
        "prompt_tokens": P,
        "return_bytes": RETURN_BYTES_PER_SEQUENCE * B,
        "cut_bytes": cut_arr,
        "layer_names": tuple(names),
        "layer_kinds": tuple(kinds),
        "params": np.array(params, dtype=float),
        "tied_gb": 0.0,
    }
    if has_prefill:
        out["prefill_cost"] = np.array(pre, dtype=float).T
        out["prefill_cut_bytes"] = cut_arr * P / B
    return out


def select_engine(model: Any, cluster: Any, engine: Any = None) -> Any:
    """The EngineSpec in force: `engine` (an id or EngineSpec), else the model workload's or the
    cluster's `engine:` (which must agree), else generic."""
    from partitioner.models.engines import resolve_engine

    if engine is None:
        workload = None if model.is_profile else getattr(model.workload, "engine", None)
        engine = getattr(cluster, "engine", None)
        if workload is not None and engine is not None and workload != engine:
            file, line = model.locate("workload", "engine")
            raise ConfigError(f"engine {workload!r} differs from the cluster's engine {engine!r}; give one of them "
                              f"(or pass engine= to choose)", file=file, location="workload.engine", line=line)
        engine = workload if workload is not None else engine
    try:
        return resolve_engine(engine)
    except ValueError as exc:
        raise InputError(str(exc)) from None


def serving_fields(workload: Any, engine_id: str, devices: Any) -> dict[str, Any]:
    """The workload's phase and request mix, and the engine's tokens per step (its default on
    the plan's smallest GPU: serving.engine_sched.default_token_budget)."""
    from partitioner.analysis.chunked import RequestMix, histogram
    from partitioner.serving.engine_sched import default_token_budget

    mix = None
    if workload.input_tokens is not None and workload.output_tokens is not None:
        mix = RequestMix(histogram(workload.input_tokens, "input_tokens"), histogram(workload.output_tokens, "output_tokens"),
                         workload.request_rate, workload.concurrency)
    small = min(devices, key=lambda d: d.spec.memory_gb) if len(devices) else None
    budget = default_token_budget(engine_id, small.spec.memory_gb * 1e9, small.gpu_id) if small is not None else 2048
    return {"phase": workload.phase, "request_mix": mix, "token_budget": budget, "engine_id": engine_id}


def _settings_budget(pool: Any, engine_id: str) -> int | None:
    """The engine's tokens per step from its resolved settings (engine: mapping over the version's
    defaults, partitioner.costs.kvpool.EngineSettings): vLLM max_num_batched_tokens, SGLang
    chunked_prefill_size; None without an engine pool."""
    if pool is None:
        return None
    st = pool.settings
    value = {"vllm": st.max_num_batched_tokens, "sglang": st.chunked_prefill_size}.get(engine_id)
    return int(value) if value else None


def build_tables(model: Any, cluster: Any, engine: Any = None) -> CostTables:
    """All of CostTables for `model` (ModelSpec) on `cluster` (ClusterSpec) under `engine` (an id of
    presets/engines.yaml; None: the model's or cluster's `engine:`, else generic)."""
    devices = cluster.devices
    eng = select_engine(model, cluster, engine)
    if model.is_profile:
        layers = profile_layers(model, devices)
    else:
        layers = roofline_layers(model.arch, model.workload, [d.spec for d in devices], eng)
    held = layers.pop("_held_gb", None)
    if held is not None:
        layers["weight_gb"] = layers["memory_gb"] - held
    alpha, beta = link_arrays(cluster, eng.hop_overhead_ms / 1e3)
    capacity = np.array([cluster.capacity_gb(d) for d in devices])
    pool = None if model.is_profile or eng.id not in POOL_ENGINES else engine_pool(model, cluster, eng.id)
    if pool is not None and held is not None:
        capacity, layers["weight_gb"] = _engine_memory(pool)
        layers["memory_gb"] = layers["weight_gb"] + held
    fields = serving_fields(model.workload, eng.id, devices)
    budget = _settings_budget(pool, eng.id)
    if budget:
        fields["token_budget"] = budget
    from partitioner.serving.engine_sched import schedule_from_settings

    fields["schedule"] = schedule_from_settings(eng.id, None if pool is None else pool.settings,
                                                engine_flags(model, cluster, eng.id), fields["token_budget"])
    return CostTables(
        kv_pool=pool,
        **layers,
        **fields,
        capacity_gb=capacity,
        latency_s=alpha,
        bandwidth_Bps=beta,
        device_names=tuple(d.name for d in devices),
        gpu_names=tuple(d.gpu_id for d in devices),
        node_names=tuple(d.node for d in devices),
        model_name=model.name,
    )


def engine_settings(model: Any, cluster: Any, engine_id: str) -> Any:
    """The EngineSettings in force for `engine_id`: the flags of a mapping `engine:` naming it
    (workload's over cluster's) over the engine's defaults for the cluster's GPUs and the
    workload's context (vLLM's max_model_len: the plan's context, as its export passes it)."""
    from partitioner.models.engines import resolve_settings

    flags = engine_flags(model, cluster, engine_id)
    specs = [d.spec for d in cluster.devices]
    return resolve_settings(engine_id, flags, min_visible_gib=min(sp.engine_visible_bytes for sp in specs) / 2**30,
                            gpu_names=tuple(sp.name for sp in specs), context=int(model.workload.context))


def engine_flags(model: Any, cluster: Any, engine_id: str) -> dict[str, Any]:
    """The flags the user gave for `engine_id` in a mapping `engine:` (workload's over cluster's)."""
    flags: dict[str, Any] = {}
    sources = [(getattr(cluster, "engine", None), getattr(cluster, "engine_settings", None))]
    if not model.is_profile:
        sources.append((getattr(model.workload, "engine", None), getattr(model.workload, "engine_settings", None)))
    for name, src in sources:
        if name == engine_id:  # the flags of another engine (overridden by engine=) do not apply
            flags.update(src or {})
    return flags


def engine_pool(model: Any, cluster: Any, engine_id: str) -> Any:
    """The KVPool (costs/kvpool.py) of `model` on `cluster` under `engine_id`: each device's
    engine-visible memory (a device's `memory_gb` override as given) and calibrated non-KV memory."""
    from partitioner.costs.kvpool import GiB, pool_for

    s, w = Shape.of(model.arch), Work.of(model.workload)
    devs = cluster.devices
    visible = np.array([d.memory_gb * 1e9 if d.memory_gb is not None else d.spec.engine_visible_bytes for d in devs])
    calibrated = [getattr(d, "non_kv_gib", None) for d in devs]
    non_kv = None if all(c is None for c in calibrated) else np.array([np.nan if c is None else c * GiB for c in calibrated])
    nvlink = np.array([d.spec.nvlink for d in devs])
    return pool_for(s, w.b_w, w.b_e, w.b_kv, w.b_a, visible, engine_settings(model, cluster, engine_id), non_kv, nvlink)


def _engine_memory(pool: Any) -> tuple[np.ndarray, np.ndarray]:
    """The solvers' memory view under an engine pool, so that their fit test is the engine's:
    C_g = t_g·(u·M_g − A_g − N_g) per row of t_g ranks (a calibrated non-KV share instead of
    A + N + S) and per-layer weights with the sampler buffer S charged on the LM head
    (costs/kvpool.py module doc), GB. Weights and KV are whole-model, so t ranks hold them t-fold."""
    from partitioner.costs.kvpool import stage_memory

    G, L = len(pool.visible_bytes), len(pool.weight_bytes)
    cap, sampler = np.empty(G), 0.0
    for g in range(G):
        m = stage_memory(pool, g, L - 1, L, True)  # the head alone: its non-KV terms on row g
        cap[g] = max(0.0, int(pool.tp[g]) * (pool.settings.fraction(int(pool.tp[g])) * m.visible - m.activation - m.non_torch) / 1e9)
        sampler = max(sampler, m.sampler)
    weights = pool.weight_bytes / 1e9
    weights[-1] += sampler / 1e9
    return cap, weights


def engine_capacity_gb(pool: Any) -> np.ndarray:
    """C_g of `_engine_memory` for a (regrouped) pool: what costs/groups.py gives TP-group rows."""
    return _engine_memory(pool)[0]
