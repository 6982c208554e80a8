"""`memory`: llama.cpp's default layer split (shares proportional to free memory), replayed.

Source: ggml-org/llama.cpp `src/llama-model.cpp::llama_model::load_tensors`:

    splits[i] = free memory of device i      (tensor_split all zero: the default)
    splits    = cumulative sums / total      (float32, "normalised split points")
    i_gpu_start = max(n_layer + 1 - n_gpu_layers, 0);  act_gpu_layers = min(n_gpu_layers, n_layer + 1)
    layer il -> device upper_bound(splits, float(il - i_gpu_start) / act_gpu_layers)
    dev_output = get_layer_buft_list(n_layer)          (the output layer counts as layer n_layer)

with every layer offloaded (i_gpu_start = 0, act_gpu_layers = n_layer + 1). n_layer counts
the repeating (decoder) layers; the output layer is position n_layer, so the LM head lands
where that position falls. Free memory is the device's usable memory `capacity_gb`.
llama.cpp keeps the input embedding on the CPU ("very little benefit to offloading the
input layer"); this baseline has no CPU stage, so the embedding goes to the first device
that holds layers (the first stage), which keeps stages contiguous.
Devices whose share rounds to 0 layers are left out (llama.cpp simply gives them none).
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Sequence

import numpy as np

from partitioner.errors import InputError
from partitioner.problem import Problem, Solution
from partitioner.solvers.baselines._common import decoder_positions, finish

__all__ = ["solve", "split_points", "assign_positions", "counts_per_device"]


def split_points(shares: Sequence[float]) -> list[float]:
    """llama.cpp's normalised cumulative split points, in float32 as in `load_tensors`."""
    s = np.asarray(shares, dtype=np.float32)
    if s.ndim != 1 or s.size == 0 or np.any(~np.isfinite(s)) or np.any(s < 0):
        raise InputError(f"tensor split shares must be finite and >= 0 (got {list(shares)})")
    cum = np.empty_like(s)
    total = np.float32(0.0)
    for i, x in enumerate(s):
        total = np.float32(total + x)
        cum[i] = total
    if total <= 0:
        raise InputError(f"tensor split shares must not all be 0 (got {list(shares)})")
    return [float(np.float32(c / total)) for c in cum]


def assign_positions(shares: Sequence[float], n_layer: int) -> list[int]:
    """Device index of each of the n_layer + 1 positions (repeating layers, then the output).

    `upper_bound(splits, float(il)/act_gpu_layers)` with act_gpu_layers = n_layer + 1.
    """
    splits = split_points(shares)
    act = n_layer + 1
    out = []
    for il in range(act):
        x = float(np.float32(il) / np.float32(act))
        out.append(min(bisect.bisect_right(splits, x), len(splits) - 1))
    return out


def counts_per_device(shares: Sequence[float], n_layer: int) -> list[int]:
    """How many of the n_layer + 1 positions (output included) each device gets."""
    pos = assign_positions(shares, n_layer)
    return [pos.count(k) for k in range(len(shares))]


def solve(problem: Problem) -> Solution:
    """llama.cpp's default split over all devices in listed order (status BASELINE)."""
    start = time.perf_counter()
    t = problem.tables
    shares = [max(float(c), 0.0) * 1e9 for c in t.capacity_gb]  # free bytes, as ggml reports them
    if not any(shares):
        raise InputError(f"the memory (llama.cpp) baseline needs a device with usable memory > 0 (got {list(t.capacity_gb)})")
    dec = decoder_positions(problem)
    pos = assign_positions(shares, len(dec))
    device_of = [pos[0]] * problem.L  # embedding and anything before the first decoder
    k = 0
    for i, kind in enumerate(t.kinds):
        if kind == "decoder":
            device_of[i] = pos[k]
            k += 1
        elif k > 0:
            device_of[i] = pos[len(dec)] if k == len(dec) else pos[k - 1]
    cuts = [0]
    for g in range(problem.G):
        cuts.append(cuts[-1] + device_of.count(g))
    return finish(problem, "memory", tuple(range(problem.G)), cuts, started=start)
