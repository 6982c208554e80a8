"""vLLM's Ray rank order, replayed (moved from partitioner.export.vllm, which re-exports it).

`RayDistributedExecutor._init_workers_ray` (vllm/executor/ray_distributed_executor.py) sorts
the workers by (ip != driver_ip, workers on that ip, ip), and the k-th worker of an ip gets the
k-th smallest GPU id of that ip. The solvers (partitioner.solvers.engine_sequences) read it
here, so that no solver imports an exporter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["ray_rank_order", "ray_realises"]


def ray_rank_order(workers: Sequence[tuple[str, int]], driver_ip: str) -> list[tuple[str, int]]:
    """(ip, GPU id) of rank 0, 1, ... for Ray workers created as `workers` (ip, GPU id).

    A pure replay of `RayDistributedExecutor._init_workers_ray`: stable sort by
    (ip != driver_ip, workers on that ip, ip), then the k-th worker of an ip gets the k-th
    smallest GPU id of that ip.
    """
    counts: dict[str, int] = {}
    for ip, _ in workers:
        counts[ip] = counts.get(ip, 0) + 1
    ranked = sorted(workers, key=lambda w: (0 if w[0] == driver_ip else 1, counts[w[0]], w[0]))
    gpus = {ip: sorted(g for i, g in workers if i == ip) for ip in counts}
    seen: dict[str, int] = {}
    out = []
    for ip, _ in ranked:
        k = seen.get(ip, 0)
        seen[ip] = k + 1
        out.append((ip, gpus[ip][k]))
    return out


def ray_realises(stages: Sequence[tuple[str, int]], address: Mapping[str, str]) -> bool:
    """Whether Ray, driven from stage 0's node, ranks (node, ordinal) `stages` in this order."""
    ips = [(address.get(n, n), g) for n, g in stages]
    return ray_rank_order(ips, ips[0][0]) == ips
