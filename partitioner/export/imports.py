"""The other way round: a split in an engine's own format, or a layout YAML, as (devices, cuts).

- `vllm:11,12,9` / `sglang:...` / `trtllm:...`: decoder layers per pipeline rank
  (`VLLM_PP_LAYER_PARTITION`, `SGLANG_PP_LAYER_PARTITION`, `pp_partition`); the embedding goes
  to rank 0 and the LM head to the last rank, as the engines place them.
- `llamacpp:3,1,...`: `-ts` proportions, replayed with llama.cpp's rule
  (`partitioner.export.llamacpp.replay`: the output layer counts as position n_layer).
- a layout YAML, replicas -> stages -> devices + decoder-layer range (one replica, one device
  per stage today; the shape leaves room for data and tensor parallelism):

      replicas:
        - stages:
            - {devices: [laptop-5090], layers: [0, 15]}   # half-open decoder-layer range
            - {devices: [node02-3090], layers: [15, 48]}
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from partitioner.errors import InputError
from partitioner.problem import CostTables
from partitioner.registry import LAUNCH_TARGETS

__all__ = ["counts_of_split", "cuts_from_decoder_counts", "layout_stages"]


def counts_of_split(split: str, n_decoder: int) -> list[int]:
    """Decoder layers per stage of `ENGINE:a,b,...`."""
    engine, sep, values = split.partition(":")
    if not sep or engine not in LAUNCH_TARGETS:
        raise InputError(f"--split takes ENGINE:a,b,... with ENGINE vllm, sglang, trtllm or llamacpp (got {split!r})")
    try:
        numbers = [float(x) for x in values.split(",")]
    except ValueError:
        raise InputError(f"--split values must be numbers (got {values!r})") from None
    if engine == "llamacpp":
        from partitioner.export.llamacpp import replay

        if any(x < 0 for x in numbers) or sum(numbers) <= 0:
            raise InputError(f"--split llamacpp: -ts proportions must be >= 0 with a positive sum (got {values!r})")
        counts = replay([int(x) if x.is_integer() else x for x in numbers], n_decoder)  # type: ignore[misc]
        counts[-1] -= 1  # the output layer is not a decoder layer
        return counts
    if any(not x.is_integer() or x < 0 for x in numbers):
        raise InputError(f"--split {engine}: layer counts must be integers >= 0 (got {values!r})")
    counts = [int(x) for x in numbers]
    if sum(counts) != n_decoder:
        raise InputError(f"--split {engine}: the counts sum to {sum(counts)}, but the model has {n_decoder} decoder layers")
    return counts


def cuts_from_decoder_counts(t: CostTables, counts: Sequence[int]) -> tuple[int, ...]:
    """Cut points on the layer list for decoder counts per stage (embedding first, head last)."""
    kinds = t.kinds
    decoders = [i for i, k in enumerate(kinds) if k == "decoder"]
    cuts, seen = [0], 0
    for c in counts[:-1]:
        seen += c
        cuts.append(decoders[seen - 1] + 1 if seen > 0 else decoders[0])
    cuts.append(t.L)
    if any(a >= b for a, b in itertools.pairwise(cuts)):
        raise InputError(f"the split {list(counts)} leaves a stage with no layers")
    return tuple(cuts)


def layout_stages(doc: Any, file: str) -> tuple[list[str], list[int]]:
    """(device per stage, decoder layers per stage) of a layout YAML with one replica."""
    from partitioner.errors import ConfigError

    replicas = doc.get("replicas") if isinstance(doc, dict) else None
    if not isinstance(replicas, list) or not replicas:
        raise ConfigError("needs a list of replicas", file=file, location="replicas")
    if len(replicas) != 1:
        raise ConfigError(f"one replica is supported for now (got {len(replicas)})", file=file, location="replicas")
    stages = replicas[0].get("stages") if isinstance(replicas[0], dict) else None
    if not isinstance(stages, list) or not stages:
        raise ConfigError("needs a list of stages", file=file, location="replicas[0].stages")
    devices, counts, prev = [], [], 0
    for s, st in enumerate(stages):
        where = f"replicas[0].stages[{s}]"
        devs, layers = (st.get("devices"), st.get("layers")) if isinstance(st, dict) else (None, None)
        if not isinstance(devs, list) or len(devs) != 1 or not isinstance(devs[0], str):
            raise ConfigError("devices: one device name per stage for now", file=file, location=f"{where}.devices")
        if not (isinstance(layers, list) and len(layers) == 2 and all(isinstance(x, int) for x in layers)) or layers[0] != prev or layers[1] < layers[0]:
            raise ConfigError(f"layers: [start, end) continuing from {prev} (got {layers!r})", file=file, location=f"{where}.layers")
        devices.append(devs[0])
        counts.append(layers[1] - layers[0])
        prev = layers[1]
    return devices, counts
