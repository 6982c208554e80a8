"""A vectorised exhaustive oracle (independent of the solvers) and seeded small instances.

`oracle(tables, M, order)` enumerates every plan (ordered distinct devices, every composition
of the layers into non-empty stages) at once in numpy, scores each by the closed forms of
`partitioner.problem` (Thm 2 / Thm 3, tied embeddings on the single full stage), and returns
for every (objective, regime) the lexicographic optimum key under the 1e-9 tie rule (the
first component minimal, then the next minimal among plans tied with it, ...), or None when
nothing fits. It is the brute force of `solvers.brute`, vectorised so that 10^4 problems fit
in a CI minute.
"""

from __future__ import annotations

import itertools

import numpy as np

from partitioner.problem import RTOL, CostTables

__all__ = ["oracle", "instance", "KINDS"]

KINDS = ("interchangeable", "nodes", "distinct", "near_tie")


def _plans(G: int, L: int, order: str) -> list[tuple[np.ndarray, np.ndarray]]:
    out = []
    for S in range(1, min(G, L) + 1):
        cuts = np.array([(0, *c, L) for c in itertools.combinations(range(1, L), S - 1)], dtype=np.int64)
        seqs = itertools.combinations(range(G), S) if order == "fixed" else itertools.permutations(range(G), S)
        out.append((cuts, np.array(list(seqs), dtype=np.int64)))
    return out


def _tie_min(keys: np.ndarray) -> tuple[float, ...]:
    """Lexicographic minimum with each component tied within RTOL (rows = plans)."""
    alive = np.ones(keys.shape[0], dtype=bool)
    out = []
    for c in range(keys.shape[1]):
        col = np.where(alive, keys[:, c], np.inf)
        best = float(col.min())
        out.append(best)
        tol = np.maximum(RTOL * np.maximum(np.abs(col), abs(best)), 1e-12)
        alive &= np.abs(col - best) <= tol
    return tuple(out)


def oracle(t: CostTables, M: int, order: str) -> dict[tuple[str, str], tuple[float, ...] | None]:
    G, L = t.G, t.L
    P = np.concatenate([np.zeros((G, 1)), np.cumsum(t.cost, axis=1)], axis=1)
    Pm = np.concatenate([[0.0], np.cumsum(t.memory_gb)])
    with np.errstate(divide="ignore"):
        trans = np.where(np.isinf(t.bandwidth_Bps)[..., None], 0.0,
                         t.cut_bytes[None, None, :] / t.bandwidth_Bps[..., None])
    delay = t.latency_s[..., None] + trans  # (G, G, L): cut after layer l
    rows = []
    for cuts, seqs in _plans(G, L, order):
        S = seqs.shape[1]
        lo, hi = cuts[:, :-1], cuts[:, 1:]  # (C, S)
        tau = P[seqs[None, :, :], hi[:, None, :]] - P[seqs[None, :, :], lo[:, None, :]]  # (C, Q, S)
        mem = Pm[hi] - Pm[lo]
        if S == 1 and t.tied_gb:
            mem = mem - t.tied_gb
        cap = t.capacity_gb[seqs] * (1 + RTOL) + 1e-12  # (Q, S)
        fits = (mem[:, None, :] <= cap[None, :, :]).all(axis=2)
        if S > 1:
            d = delay[seqs[None, :, :-1], seqs[None, :, 1:], hi[:, None, :-1] - 1]  # (C, Q, S-1)
        else:
            d = np.zeros((*tau.shape[:2], 0))
        sigma = tau.copy()
        sigma[..., :-1] += d
        rows.append((tau[fits], d[fits], sigma[fits]))
    tau_max = np.concatenate([r[0].max(axis=1) for r in rows])
    if tau_max.size == 0:
        return {(o, r): None for o in ("balanced", "throughput", "makespan") for r in ("async", "blocking")}
    sigma_max = np.concatenate([r[2].max(axis=1) for r in rows])
    work = np.concatenate([r[0].sum(axis=1) + r[1].sum(axis=1) for r in rows])
    T_async = (M - 1) * tau_max + work
    T_block = (M - 1) * sigma_max + work  # sum sigma = sum tau + sum d
    out: dict[tuple[str, str], tuple[float, ...] | None] = {}
    for regime, T in (("async", T_async), ("blocking", T_block)):
        period = tau_max if regime == "async" else sigma_max
        out["balanced", regime] = _tie_min(np.stack([tau_max, sigma_max, T], axis=1))
        out["throughput", regime] = _tie_min(np.stack([period, T], axis=1))
        out["makespan", regime] = _tie_min(T[:, None])
    return out


def instance(seed: int, kind: str) -> tuple[CostTables, int]:
    """(tables, M): L <= 9, G <= 5; `kind` picks the link structure (see KINDS)."""
    r = np.random.default_rng(seed)
    G, L = int(r.integers(1, 6)), int(r.integers(1, 10))
    types = int(r.integers(1, G + 1))
    type_of = np.sort(r.integers(0, types, G))
    integral = r.random() < 0.4
    base = r.integers(1, 5, (types, L)).astype(float) if integral else r.uniform(0.1, 2.0, (types, L))
    cost = base[type_of]
    M = int(r.choice([1, 2, 3, 8, 50]))
    if kind == "near_tie":
        cost = cost * (1 + r.choice([0.0, 1.37e-8, -2.71e-8, 4.3e-9], cost.shape))  # no exact 1e-9 ties
        M = int(r.choice([1000, 10_000, 100_000]))
    mem = r.uniform(0.5, 1.5, L)
    caps = (r.uniform(0.3, 1.4, types) * mem.sum())[type_of]
    if kind == "distinct":
        lat = r.uniform(0.0, 0.5, (G, G))
        bw = r.choice([1.0, 3.0, np.inf], (G, G))
    elif kind == "nodes":  # two or more devices per node, one uniform link between nodes
        node = np.arange(G) // int(r.integers(1, 3))
        same = node[:, None] == node[None, :]
        lat = np.where(same, 0.05, 0.3)
        bw = np.where(same, np.inf, 2.0)
    else:
        lat = np.full((G, G), float(r.choice([0.0, 0.1, 1.0])))
        bw = np.full((G, G), float(r.choice([2.0, np.inf])))
    lat = lat.astype(float)
    bw = bw.astype(float)
    np.fill_diagonal(lat, 0.0)
    np.fill_diagonal(bw, np.inf)
    return CostTables(
        cost=cost, memory_gb=mem, cut_bytes=r.integers(0, 4, L).astype(float), capacity_gb=caps,
        latency_s=lat, bandwidth_Bps=bw, layer_names=tuple(f"l{i}" for i in range(L)),
        device_names=tuple(f"d{g}" for g in range(G)), gpu_names=tuple(f"t{x}" for x in type_of),
        node_names=("n",) * G, tied_gb=float(r.choice([0.0, 0.0, mem[0] * 0.7])) if L > 1 else 0.0,
    ), M
