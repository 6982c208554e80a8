"""`even`: vLLM's default pipeline split, replayed exactly on all devices in listed order.

Source: vllm-project/vllm `vllm/distributed/utils.py::get_pp_indices(num_hidden_layers,
pp_rank, pp_size)` (remainder rule of PR #13839):

    partitions = [L // P] * P
    for i in range(2, L % P + 2): partitions[-i] += 1

so the remainder r = L mod P adds one decoder layer to stages P-2, P-3, ..., P-1-r (the
last stage never gets one, the first only when r = P-1). L counts decoder layers only
(`CostTables.kinds`); vLLM keeps the embedding on the first stage and the LM head on the
last. P = number of devices; every device is used, in listed order.
"""

from __future__ import annotations

import time

from partitioner.errors import InputError
from partitioner.problem import Problem, Solution
from partitioner.solvers.baselines._common import cuts_from_decoder_counts, decoder_positions, finish

__all__ = ["solve", "pp_partitions"]


def pp_partitions(num_hidden_layers: int, pp_size: int) -> list[int]:
    """Decoder layers per pipeline rank, exactly as vLLM's `get_pp_indices` computes them."""
    if pp_size < 1:
        raise InputError(f"pp_size must be >= 1 (got {pp_size})")
    partitions = [num_hidden_layers // pp_size] * pp_size
    for i in range(2, num_hidden_layers % pp_size + 2):
        partitions[-i] += 1
    return partitions


def solve(problem: Problem) -> Solution:
    """vLLM's even split over all G devices in listed order (status BASELINE, never optimal)."""
    start = time.perf_counter()
    n_dec, P = len(decoder_positions(problem)), problem.G
    if n_dec < P:
        raise InputError(
            f"the even (vLLM) baseline puts at least one decoder layer on each of the {P} devices, "
            f"but the model has only {n_dec} decoder layers"
        )
    counts = pp_partitions(n_dec, P)
    cuts = cuts_from_decoder_counts(problem, counts)
    return finish(problem, "even", tuple(range(P)), cuts, started=start)
