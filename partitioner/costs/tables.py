"""`build_tables(model, cluster) -> CostTables`: the planner's numbers from the user's specs.

Takes the validated specs of `partitioner.models` duck-typed (no pydantic import here) and
returns plain numpy arrays (issue 3, "Cost model"; contract: partitioner.problem.CostTables).
Roofline forms (preset / architecture / hf_config) give layers "embed", "layer.0".."layer.N-1",
"lm_head"; a measured profile gives its own layers, `repeat` expanded with a suffix index.

The engine (`engine=` argument, else `engine:` of the model's workload or of cluster.yaml, else
generic; presets/engines.yaml) enters twice: its per-token fixed cost is charged on the LM head, so
once per token per pipeline on the stage that samples (a 1-GPU and a 2-GPU layer split of one model
carry the same total), and its per-hop overhead is added to the latency alpha of every link, so it
enters d_s = alpha + b/beta once per hop. A measured profile's costs are used as measured.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from partitioner.costs import memory, roofline
from partitioner.costs.roofline import Hardware, Shape, Work
from partitioner.errors import ConfigError, InputError
from partitioner.problem import CostTables

__all__ = ["build_tables", "link_arrays", "roofline_layers", "profile_layers", "select_engine"]


def link_arrays(cluster: Any, hop_s: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """latency_s[G,G] (alpha, seconds) and bandwidth_Bps[G,G] (beta, bytes/s); diagonal 0 / inf.

    `hop_s`: the engine's fixed cost per pipeline hop (copy launch, synchronisation), added to the
    link latency of every pair (GenZ/LLMCompass link time alpha + bytes/beta, costmodel.md)."""
    devs = cluster.devices
    G = len(devs)
    alpha = np.zeros((G, G))
    beta = np.full((G, G), np.inf)
    for g, a in enumerate(devs):
        for h, b in enumerate(devs):
            if g != h:
                link = cluster.link(a, b)
                alpha[g, h] = link.latency_ms / 1e3 + hop_s
                beta[g, h] = link.bandwidth_gb_s * 1e9
    return alpha, beta


def roofline_layers(arch: Any, workload: Any, gpus: list[Any], engine: Any = None) -> dict[str, Any]:
    """Per-layer cost (roofline.py), memory (memory.py), cut bytes and params, forms 1-2; the
    per-token fixed cost of each device is charged on its LM head (module docstring)."""
    s, w = Shape.of(arch), Work.of(workload)
    hws = [Hardware.of(gpu, 8.0 * w.b_w, engine) for gpu in gpus]
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
    }


def _entry_cost(model: Any, index: int, entry: Any, devices: Any) -> list[float]:
    """Seconds of one profile entry on each device: device name first, then its GPU id."""
    out = []
    for dev in devices:
        value = entry.cost.get(dev.name, entry.cost.get(dev.gpu_id))
        if value is None:
            file, line = model.locate("layers", index, "cost")
            raise ConfigError(
                f"layer {entry.name!r} has no cost for device {dev.name!r} (gpu {dev.gpu_id!r}); "
                f"add one of them (has: {', '.join(entry.cost)})",
                file=file, location=f"layers[{index}].cost", line=line,
            )
        out.append(float(value))
    return out


def profile_layers(model: Any, devices: Any) -> dict[str, Any]:
    """Expand a measured profile (form 3): `repeat` copies named ``<name>.<k>``."""
    names, kinds, cols, mem, cut, params = [], [], [], [], [], []
    for index, entry in enumerate(model.layers):
        col = _entry_cost(model, index, entry, devices)
        for k in range(entry.repeat):
            names.append(f"{entry.name}.{k}" if entry.repeat > 1 else entry.name)
            kinds.append(entry.kind)
            cols.append(col)
            mem.append(entry.memory_gb)
            cut.append(entry.out_bytes)
            params.append(entry.params)
    return {
        "cost": np.array(cols, dtype=float).T,
        "memory_gb": np.array(mem, dtype=float),
        "cut_bytes": np.array(cut, dtype=float),
        "layer_names": tuple(names),
        "layer_kinds": tuple(kinds),
        "params": np.array(params, dtype=float),
        "tied_gb": 0.0,
    }


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


def build_tables(model: Any, cluster: Any, engine: Any = None) -> CostTables:
    """All of CostTables for `model` (ModelSpec) on `cluster` (ClusterSpec) under `engine` (an id of
    presets/engines.yaml; None: the model's or cluster's `engine:`, else generic)."""
    devices = cluster.devices
    eng = select_engine(model, cluster, engine)
    if model.is_profile:
        layers = profile_layers(model, devices)
    else:
        layers = roofline_layers(model.arch, model.workload, [d.spec for d in devices], eng)
    alpha, beta = link_arrays(cluster, eng.hop_overhead_ms / 1e3)
    return CostTables(
        **layers,
        capacity_gb=np.array([cluster.capacity_gb(d) for d in devices]),
        latency_s=alpha,
        bandwidth_Bps=beta,
        device_names=tuple(d.name for d in devices),
        gpu_names=tuple(d.gpu_id for d in devices),
        node_names=tuple(d.node for d in devices),
        model_name=model.name,
    )
