"""The public start-up log corpus (tests/data/engine_logs.yaml): each row's predicted KV pool
beside the pool the engine logged, by partitioner.costs.kvpool.

A row gives the engine, its version, the model's shapes, the GPUs (one per PP stage), TP, PP, the
layer partition and the engine flags in force; the prediction uses only those (never the logged
weights or activations), with the `memory` constants of presets/engines.yaml. The error is
predicted / logged − 1 on the pool in tokens where the log gives tokens or blocks, else on the pool
in GiB of the worker that sets it.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from partitioner.costs.kvpool import GiB, KVPool, StageMemory, pool_for, stage_memory, version_tuple
from partitioner.costs.roofline import Shape, precision_bytes

__all__ = ["Row", "Prediction", "load_rows", "predict", "pp_partition", "stage_cuts", "fit_constants",
           "version_tuple"]


@dataclass(frozen=True)
class Row:
    """One corpus row as written (module doc)."""

    id: str
    source: str
    engine: str
    version: str
    shape: Shape
    weights: str
    visible_bytes: tuple[float, ...]  # per PP stage
    gpus: tuple[str, ...]  # per PP stage: a catalogue id or a name
    tp: int
    pp: int
    partition: tuple[int, ...]
    settings: dict[str, Any]
    logged: dict[str, float]
    split: str
    note: str = ""


@dataclass(frozen=True)
class Prediction:
    """A row's predicted pool beside the logged one; `refused`: the pool holds no max_model_len request."""

    row: Row
    stages: tuple[StageMemory, ...]
    predicted: float
    logged: float
    unit: str  # "tokens" or "GiB"
    refused: bool

    @property
    def error(self) -> float:
        """predicted / logged − 1 (nan when the engine logged no pool, i.e. it refused)."""
        return self.predicted / self.logged - 1.0 if self.logged > 0 else float("nan")


def pp_partition(L: int, pp: int) -> tuple[int, ...]:
    """vLLM's default split of L layers over pp stages: L // pp each, the remainder added to the
    stages before the last (vllm/distributed/utils.py get_pp_indices, v0.6+)."""
    parts = [L // pp] * pp
    for i in range(2, L % pp + 2):
        parts[-i] += 1
    return tuple(parts)


def stage_cuts(counts: tuple[int, ...]) -> tuple[int, ...]:
    """Cuts into the layer list (embedding first, LM head last) for decoder counts per stage."""
    cuts, acc = [0], 0
    for n in counts[:-1]:
        acc += n
        cuts.append(acc + 1)
    return (*cuts, sum(counts) + 2)


def _visible(entry: dict[str, Any]) -> float:
    if entry.get("visible_gib") is not None:
        return float(entry["visible_gib"]) * GiB
    from partitioner.models.cluster import resolve_gpu

    return resolve_gpu(str(entry["gpu"])).engine_visible_bytes


def _nvlink(gpu: str) -> bool:
    from partitioner.models import catalog
    from partitioner.models.cluster import resolve_gpu

    return gpu in catalog.ids("gpus") and resolve_gpu(gpu).nvlink


def load_rows(path: Path) -> list[Row]:
    """The rows of a corpus file (module doc)."""
    import yaml

    data = yaml.safe_load(path.read_text())
    shapes = {k: Shape(**v) for k, v in data["models"].items()}
    rows = []
    for r in data["rows"]:
        s = shapes[r["model"]]
        pp = int(r.get("pp", 1))
        rows.append(Row(
            id=r["id"], source=r["source"], engine=r["engine"], version=str(r.get("version", "")), shape=s,
            weights=str(r["weights"]), visible_bytes=tuple(_visible(g) for g in r["gpus"]),
            gpus=tuple(str(g["gpu"]) for g in r["gpus"]), tp=int(r.get("tp", 1)),
            pp=pp, partition=tuple(r.get("partition") or pp_partition(s.L, pp)), settings=dict(r.get("settings") or {}),
            logged={k: float(v) for k, v in r["logged"].items()}, split=str(r.get("split", "test")),
            note=str(r.get("note", "")),
        ))
    return rows


def fit_constants(rows: list[Row]) -> dict[str, float]:
    """The engine's measured memory terms from the `fit` rows' logged lines (medians): non-torch
    memory at TP 1, at TP >= 2 on NVLink boards and on PCIe cards, and the sampler copies (the
    logged activation peak less the modelled decoder activations, over max_num_seqs·V·4 bytes)."""
    fit = [r for r in rows if r.split == "fit" and r.engine == "vllm"]
    nt: dict[str, list[float]] = {"non_torch_gib_tp1": [], "non_torch_gib_tp": [], "non_torch_gib_tp_pcie": []}
    copies = []
    for r in fit:
        if "non_torch_gib" in r.logged:
            key = "non_torch_gib_tp1" if r.tp == 1 else "non_torch_gib_tp" if all(_nvlink(g) for g in r.gpus) else "non_torch_gib_tp_pcie"
            nt[key].append(r.logged["non_torch_gib"])
        if "activation_gib" in r.logged:
            pool = _pool(r)
            T, seqs = pool.settings.profile_tokens, int(pool.settings.max_num_seqs or 256)
            decoder = T * (pool.act_fixed + pool.act_sharded / r.tp)
            copies.append((r.logged["activation_gib"] * GiB - decoder) / (min(seqs, T) * pool.vocab * 4.0))
    out = {k: statistics.median(v) for k, v in nt.items() if v}
    if copies:
        out["sampler_copies"] = statistics.median(copies)
    return out


def _pool(row: Row, constants: dict[str, float] | None = None) -> KVPool:
    from partitioner.models.engines import resolve_settings

    b_w = precision_bytes(row.weights)
    b_e = 2.0 if row.weights in ("fp8", "int8", "int4") else b_w  # roofline.Work.of: 16-bit ends
    b_kv = 2.0
    settings = resolve_settings(row.engine, {"version": row.version, **row.settings}, min_visible_gib=min(row.visible_bytes) / GiB)
    if constants:
        settings = replace(settings, **constants)  # type: ignore[arg-type]
    stages = len(row.visible_bytes)
    visible = np.array(row.visible_bytes if stages == row.pp else [row.visible_bytes[0]] * row.pp)
    gpus = row.gpus if stages == row.pp else (row.gpus[0],) * row.pp
    pool = pool_for(row.shape, b_w, b_e, b_kv, 2.0, visible, settings, nvlink=np.array([_nvlink(g) for g in gpus]))
    return pool if row.tp == 1 else pool.regroup([(g,) * row.tp for g in range(row.pp)])


def predict(row: Row, constants: dict[str, float] | None = None) -> Prediction:
    """The row's pool as partitioner.costs.kvpool predicts it, beside the logged one (module doc);
    `constants` replace the engine's measured memory terms (e.g. fit_constants(rows))."""
    pool = _pool(row, constants)
    cuts = stage_cuts(row.partition)
    L = cuts[-1]
    mem = tuple(stage_memory(pool, g, cuts[g], cuts[g + 1], cuts[g + 1] == L) for g in range(row.pp))
    tokens = min(m.kv_tokens for m in mem if m.kv_tokens is not None)
    refused = tokens < max(1, int(pool.settings.max_model_len or 0) if row.engine == "vllm" else 1)
    lg = row.logged
    if "tokens" in lg or "blocks" in lg:
        logged = lg["tokens"] if "tokens" in lg else lg["blocks"] * pool.settings.page_tokens
        return Prediction(row, mem, float(tokens), logged, "tokens", refused)
    free = min(pool.settings.fraction(row.tp) * m.visible - m.weights - m.activation - m.non_torch - m.sampler for m in mem)
    return Prediction(row, mem, free / GiB, lg["kv_gib"], "GiB", refused)
