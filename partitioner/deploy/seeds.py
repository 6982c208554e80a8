"""Seed deployments for the replica search: per-kind homogeneous replicas, solved first.

Helix's "separate pipelines" layouts (Helix-ASPLOS25's artifact files
artifact_evaluation/*/layout_llama70b/separate/<type>, ../shared/data/helix/README.md) run one
pipeline per machine type. The replica search (partitioner.deploy.replicas, columns) is seeded with the
best such layout before any other replica is solved, so that its answer is never below it:

- for each node kind k, m_k is the fewest nodes of kind k whose memory holds the model (`fits`);
  the homogeneous replicas j·e_k are solved for the sizes j = m_k, m_k + 1, ... (at most
  MAX_SIZES of them, N_k among them: Helix's pipeline of every machine of the type);
- per kind, the best packing of its N_k nodes into such replicas is the 1-D knapsack
  W_k(n) = max(W_k(n − 1), max_j v(j·e_k) + W_k(n − j)), W_k(0) = 0 (nodes may stay unused);
- kinds are disjoint, so the seed deployment is the union of the per-kind packings, its
  tokens/s Σ_k W_k(N_k): a real deployment, hence a lower bound on the optimum.

Identical GPUs make each homogeneous solve cheap (the exact DP's lattice collapses), and the
seeds are solved in a fixed order (kinds as listed, sizes rising), so the seed deployment does
not depend on the machine's load.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["MAX_SIZES", "kind_seeds", "seed_deployment"]

MAX_SIZES = 6  # homogeneous replica sizes solved per node kind

Vector = tuple[int, ...]


def kind_seeds(counts: tuple[int, ...], fits: Callable[[Vector], bool], max_sizes: int = MAX_SIZES) -> list[Vector]:
    """The homogeneous vectors j·e_k to solve (module doc), kind by kind, sizes rising."""
    out: list[Vector] = []
    for k, n in enumerate(counts):
        def e(j: int, k: int = k) -> Vector:
            return tuple(j if i == k else 0 for i in range(len(counts)))

        m = next((j for j in range(1, n + 1) if fits(e(j))), None)
        if m is None:
            continue
        sizes = list(range(m, min(n, m + max_sizes - 1) + 1))
        if sizes[-1] != n:
            sizes[-1] = n
        out += [e(j) for j in sizes]
    return out


def seed_deployment(counts: tuple[int, ...], seeds: list[Vector],
                    value: Callable[[Vector], float]) -> tuple[float, list[Vector]]:
    """Σ_k W_k(N_k) and its replicas (module doc) over the solved seeds (`value` of each)."""
    total, chosen = 0.0, []
    for k, n in enumerate(counts):
        sizes = [(x[k], value(x), x) for x in seeds if x[k] and sum(x) == x[k]]
        W: list[tuple[float, list[Vector]]] = [(0.0, [])]
        for left in range(1, n + 1):
            best = W[left - 1]
            for j, v, x in sizes:
                if j <= left and v > 0 and v + W[left - j][0] > best[0]:
                    best = (v + W[left - j][0], [*W[left - j][1], x])
            W.append(best)
        total += W[n][0]
        chosen += W[n][1]
    return total, chosen
