"""vLLM's multi-host rank order, replayed (moved from partitioner.export.vllm, which re-exports it).

vLLM 0.33.0 places ranks either by its multiprocessing multi-node launch (`--nnodes`,
`--node-rank`: every node's ranks consecutive, equal counts per node; vllm/v1/executor/
multiproc_executor.py MultiprocExecutor) or over Ray, whose `get_bundles_sorted_by_node`
(vllm/v1/executor/ray_utils.py) sorts by (node != driver, Ray node id): node ids are random,
so a Ray order is certain only on two hosts. Older releases (`RayDistributedExecutor.
_init_workers_ray`, rule "ip") sort by (ip != driver ip, workers on that ip, ip). The k-th worker
of a node gets that node's k-th smallest GPU id. The solvers (partitioner.solvers.engine_sequences)
read it here, so that no solver imports an exporter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["ray_rank_order", "runs", "multiproc_nodes", "ray_realises"]


def ray_rank_order(workers: Sequence[tuple[str, int]], driver: str, node_ids: Mapping[str, str] | None = None,
                   rule: str = "node_id") -> list[tuple[str, int]]:
    """(node, GPU id) of rank 0, 1, ... for Ray workers created as `workers` (node, GPU id).

    rule "node_id" (vLLM 0.33.0, `get_bundles_sorted_by_node`): stable sort by (node != driver,
    Ray node id of the node; `node_ids`, default the node itself); rule "ip" (older
    `RayDistributedExecutor._init_workers_ray`): by (node != driver, workers on that node, node IP
    = the node string). Then the k-th worker of a node gets that node's k-th smallest GPU id.
    """
    ids = dict(node_ids or {})
    counts: dict[str, int] = {}
    for node, _ in workers:
        counts[node] = counts.get(node, 0) + 1
    if rule == "ip":
        ranked = sorted(workers, key=lambda w: (0 if w[0] == driver else 1, counts[w[0]], w[0]))
    else:
        ranked = sorted(workers, key=lambda w: (0 if w[0] == driver else 1, ids.get(w[0], w[0])))
    gpus = {node: sorted(g for n, g in workers if n == node) for node in counts}
    seen: dict[str, int] = {}
    out = []
    for node, _ in ranked:
        k = seen.get(node, 0)
        seen[node] = k + 1
        out.append((node, gpus[node][k]))
    return out


def runs(nodes: Sequence[str]) -> list[str]:
    """The nodes in order of their first run of consecutive stages (a node twice: not contiguous)."""
    return [n for k, n in enumerate(nodes) if k == 0 or nodes[k - 1] != n]


def multiproc_nodes(stages: Sequence[tuple[str, int]]) -> bool:
    """Whether the multiprocessing multi-node launch places these ranks: every node's ranks
    consecutive and every node holding the same number (world_size % nnodes == 0)."""
    nodes = [n for n, _ in stages]
    order = runs(nodes)
    return len(order) == len(set(order)) and len({nodes.count(n) for n in order}) == 1


def ray_realises(stages: Sequence[tuple[str, int]], address: Mapping[str, str] | None = None, rule: str = "node_id") -> bool:
    """Whether the vLLM launch the export prints runs (node, ordinal) `stages` in this rank order
    (stage 0's node drives): one host, the multiprocessing multi-node launch, or Ray with the
    rank order certain (rule "node_id": two hosts, each node's GPUs ascending; rule "ip": the
    replay by address equals the plan)."""
    nodes = [n for n, _ in stages]
    if len(set(nodes)) == 1:
        return True
    order = runs(nodes)
    if len(order) != len(set(order)):
        return False
    if rule == "ip":
        ips = [(dict(address or {}).get(n, n), g) for n, g in stages]
        return ray_rank_order(ips, ips[0][0], rule="ip") == ips
    if multiproc_nodes(stages):
        return True
    return len(order) == 2 and ray_rank_order(stages, nodes[0]) == list(stages)
