"""Read Helix's data (Thesys-lab/Helix-ASPLOS25 @148b7330, Apache-2.0) into partitioner's inputs.

The data stays out of this repository: every function takes the path of a Helix file, by
default under ../shared/data/helix (PARTITIONER_SHARED overrides ../shared).

- `cluster_yaml(cluster.ini, machine_profiles.ini)`: a cluster.yaml dict. A Helix compute node
  of type ``L4x2`` / ``T4x4`` is one machine with 2 / 4 GPUs: one `node` with that many devices,
  so the planner may run them as a TP group (Helix profiles them so) or as pipeline stages.
  Links: the ini's per-pair bandwidth/latency (all equal in cluster24 and cluster42), intra-node
  PCIe 4 (GCP's L4 and T4 machines have no NVLink).
- `profile_yaml(model_dir, batch, in_flight, context)`: a `layers:` profile of the decoder
  layers with Helix's measured seconds per layer as batch tables for every GPU id and measured
  TP group (``l4x2``, ``t4x2``, ``t4x4``: partitioner.costs.tp.group_key), written by
  bs2time_to_profile.py (the serving model's converter) with these extra keys.
- `layout(solution.ini, simulator_cluster.ini)`: Helix's per-node layer lists as
  (machine type, first layer, end layer) in file order; `chains(...)` splits them into
  disjoint pipelines (see its doc).
"""

from __future__ import annotations

import ast
import configparser
import os
import re
from pathlib import Path
from typing import Any

__all__ = ["shared_root", "GPU_IDS", "cluster_yaml", "profile_yaml", "layout", "chains", "layout_for_cluster"]

# Helix machine type -> (partitioner GPU id, GPUs per machine)
GPU_IDS: dict[str, tuple[str, int]] = {
    "A100": ("a100-40gb", 1), "L4": ("l4", 1), "L4x2": ("l4", 2), "T4": ("t4", 1), "T4x2": ("t4", 2),
    "T4x4": ("t4", 4), "V100": ("v100", 1),
}
# V100 SXM2 16 GB is not in the catalogue: NVIDIA V100 datasheet figures (900 GB/s HBM2,
# 125 TFLOPS tensor, 15.7 TFLOPS FP32), an inline GPU spec.
V100 = {"name": "v100", "memory_gb": 16, "bandwidth_gb_s": 900, "tensor_tflops": 125, "fp32_tflops": 15.7,
        "compute_capability": "7.0", "source": "NVIDIA V100 datasheet (SXM2 16 GB)"}


def shared_root() -> Path:
    """../shared beside the repository root, or $PARTITIONER_SHARED."""
    env = os.environ.get("PARTITIONER_SHARED")
    return Path(env) if env else Path(__file__).resolve().parents[2] / ".." / "shared"


def _ini(path: Path) -> configparser.ConfigParser:
    cp = configparser.ConfigParser()
    cp.optionxform = str  # type: ignore[assignment,method-assign]
    cp.read(path)
    return cp


def _quantity(text: str) -> float:
    """'1000 * mbps' -> bytes/s; '1 * MilliSec' -> seconds; '16 * GB' -> GB."""
    value, unit = (s.strip() for s in text.split("*"))
    scale = {"mbps": 1e6 / 8, "gbps": 1e9 / 8, "MilliSec": 1e-3, "GB": 1.0, "MB": 1e-3}[unit]
    return float(value) * scale


def cluster_yaml(cluster_ini: Path, name: str) -> dict[str, Any]:
    """The cluster.yaml of a Helix cluster ini (module doc)."""
    cp = _ini(cluster_ini)
    devices = []
    for section in cp.sections():
        m = re.fullmatch(r"ComputeNode-(\d+)", section)
        if not m:
            continue
        i, kind = int(m.group(1)), cp[section]["type"]
        gpu, n = GPU_IDS[kind]
        for k in range(n):
            devices.append({"name": f"n{i:02d}-{gpu}-{k}" if n > 1 else f"n{i:02d}-{gpu}",
                            "gpu": dict(V100) if gpu == "v100" else gpu, "node": f"machine-{i:02d}"})
    links = [(_quantity(cp[s]["bandwidth"]), _quantity(cp[s]["latency"])) for s in cp.sections()
             if re.fullmatch(r"Link-\d+-\d+", s)]
    bw, lat = links[0]
    if any(x != (bw, lat) for x in links):
        raise ValueError(f"{cluster_ini}: links differ; this converter writes one inter_node link")
    return {
        "name": name,
        "devices": devices,
        "links": {"intra_node": "pcie4", "inter_node": {"latency_ms": lat * 1e3, "bandwidth_gb_s": bw / 1e9}},
        "order": "free",
        "reserve_gb": 1.0,
        "tp": [1, 2, 4],
    }


# Helix GPU directory -> profile key: catalogue ids, the inline v100, and measured TP groups
# under partitioner.costs.tp.group_key's names.
PROFILE_KEYS = {"a100": "a100-40gb", "l4": "l4", "t4": "t4", "v100": "v100", "l4x2": "l4x2", "t4x2": "t4x2",
                "t4x4": "t4x4"}


def profile_yaml(model_dir: Path, *, batch: int = 8, in_flight: int = 1, context: int = 1024) -> dict[str, Any]:
    """LLaMA-2-70B decode (and prefill) per decoder layer from every GPU directory, by the
    serving model's converter (bs2time_to_profile.convert) with the V100 and the TP groups."""
    import yaml
    from bs2time_to_profile import convert

    doc = yaml.safe_load(convert(model_dir, "llama-2-70b", gpus=PROFILE_KEYS, batch=batch, context=context))
    doc["workload"]["in_flight"] = in_flight
    return doc


def layout(solution_ini: Path, simulator_ini: Path) -> list[tuple[str, int, int]]:
    """(Helix machine type, first layer, end layer) per compute node, in file order."""
    sol, sim = _ini(solution_ini), _ini(simulator_ini)
    out = []
    for key, value in sol["Solution"].items():
        layers = ast.literal_eval(value)
        kind = sim[key]["machine_type"].strip('"')
        if layers != list(range(layers[0], layers[-1] + 1)):
            raise ValueError(f"{solution_ini}: {key} holds non-contiguous layers")
        out.append((kind, layers[0], layers[-1] + 1))
    return out


def chains(nodes: list[tuple[str, int, int]], num_layers: int = 80) -> tuple[list[list[int]], list[int]]:
    """Split per-node layer ranges into disjoint pipelines covering [0, num_layers).

    Each pipeline starts at layer 0 and repeatedly takes an unused node whose range contains
    the next layer, the one reaching furthest (Petals' routing follows servers whose spans
    cover consecutive blocks); that node serves only the layers from there to its end. Returns
    the pipelines (node indices in order) and the nodes left unused. Helix's own layouts route
    flows over overlapping ranges; a disjoint-chain decomposition is the part of them a
    pipeline engine can run.
    """
    free = set(range(len(nodes)))
    out = []
    while True:
        pos, chain = 0, []
        while pos < num_layers:
            cands = [i for i in free if nodes[i][1] <= pos < nodes[i][2] and i not in chain]
            if not cands:
                break
            best = max(cands, key=lambda i: (nodes[i][2], -i))
            chain.append(best)
            pos = nodes[best][2]
        if pos < num_layers:
            return out, sorted(free)
        free -= set(chain)
        out.append(chain)


def layout_for_cluster(nodes: list[tuple[str, int, int]], pipelines: list[list[int]], cluster: dict[str, Any],
                       taken: set[str] | None = None) -> list[list[dict[str, Any]]]:
    """Map Helix nodes onto the cluster's machines of the same type (in listed order, skipping
    `taken`): replicas -> stages with `devices` (all GPUs of the machine: its TP group) and
    `layers` [start, end) in the order each pipeline visits them."""
    taken = set() if taken is None else taken
    machines: dict[str, list[list[str]]] = {}
    by_node: dict[str, list[str]] = {}
    kinds: dict[str, str] = {}
    for d in cluster["devices"]:
        by_node.setdefault(d["node"], []).append(d["name"])
        gpu = d["gpu"] if isinstance(d["gpu"], str) else d["gpu"]["name"]
        kinds[d["node"]] = gpu
    for node, devs in by_node.items():
        kind = next(k for k, (g, n) in GPU_IDS.items() if g == kinds[node] and n == len(devs))
        machines.setdefault(kind, []).append(devs)
    assigned: dict[int, list[str]] = {}
    for i, (kind, _, _) in enumerate(nodes):
        pool = [m for m in machines[kind] if m[0] not in taken]
        if not pool:
            raise ValueError(f"no free {kind} machine left for Helix node {i}")
        assigned[i] = pool[0]
        taken.add(pool[0][0])
    replicas = []
    for chain in pipelines:
        stages, pos = [], 0
        for i in chain:
            stages.append({"devices": assigned[i], "layers": [pos, nodes[i][2]]})
            pos = nodes[i][2]
        replicas.append(stages)
    return replicas
