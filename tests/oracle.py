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

__all__ = ["oracle", "instance", "KINDS", "serve_instance", "serve_points", "frontier_of"]

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


# -- the serve objective: seeded small instances and the brute force over splits × B × K ---------
def serve_instance(seed: int) -> tuple[dict[int, CostTables], str]:
    """({B: tables at batch B} for B = 1..3, order): 2-4 devices of 1-3 kinds, 2-5 layers, costs
    affine in B, prefill costs, KV of a few sequences per stage, links and a return hop."""
    r = np.random.default_rng(seed)
    G, L = int(r.integers(2, 5)), int(r.integers(2, 6))
    kinds = np.sort(r.integers(0, int(r.integers(1, G + 1)), G))
    a = r.uniform(0.5, 2.0, (G, L))[kinds] * 1e-3
    b = r.uniform(0.02, 0.3, (G, L))[kinds] * 1e-3
    prefill = r.uniform(2.0, 20.0, (G, L))[kinds] * 1e-3
    weight = r.uniform(0.5, 1.5, L)
    kvpt = r.uniform(0.05, 0.2, L) * 1e6  # bytes per token: 0.05-0.2 GB per sequence at context 1000
    cap = (weight.sum() * r.uniform(0.3, 1.1, G) + r.uniform(0.0, 1.5, G))[kinds]
    lat = r.uniform(0.0, 2e-3, (G, G)) * r.choice([0.0, 1.0, 1.0])
    bw = r.choice([1e9, 1e10, np.inf], (G, G))
    np.fill_diagonal(lat, 0.0)
    np.fill_diagonal(bw, np.inf)
    tied = float(r.choice([0.0, 0.0, 0.3 * weight[0]]))
    cut, cut_p = r.uniform(0.0, 2e6, L), r.uniform(0.0, 2e7, L)
    ret = float(r.uniform(0.0, 1e5))

    def at(B: int) -> CostTables:
        return CostTables(
            cost=a + b * B, memory_gb=weight + kvpt * 1000 * B / 1e9, cut_bytes=cut * B, capacity_gb=cap,
            latency_s=lat, bandwidth_Bps=bw, layer_names=tuple(f"l{i}" for i in range(L)),
            device_names=tuple(f"g{g}" for g in range(G)), gpu_names=tuple(f"k{k}" for k in kinds),
            node_names=("n",) * G, tied_gb=tied if L > 1 else 0.0, weight_gb=weight, kv_bytes_per_token=kvpt,
            context=1000, batch=B, in_flight=1, prefill_cost=prefill, prefill_cut_bytes=cut_p, prompt_tokens=512,
            return_bytes=ret * B,
        )

    return {B: at(B) for B in (1, 2, 3)}, str(r.choice(["free", "free", "free", "fixed"]))


def serve_points(tables: dict[int, CostTables], regime: str, order: str) -> list[tuple[int, int, float, float, float]]:
    """Every (B, K, split) whose KV fits, as (B, K, tokens/s, TPOT, TTFT), by the formulas of
    score.py written out per split: problem.evaluate for τ and d, capacity.capacity for the
    sequences that fit, P = max(K·w_max, Στ + Σd + d_ret) for each K up to the capacity."""
    from partitioner.problem import Problem, evaluate
    from partitioner.serving.capacity import capacity
    from partitioner.serving.score import return_latency

    out = []
    for B, t in tables.items():
        problem = Problem(t, M=1, regime=regime, objective="throughput", order=order)  # type: ignore[arg-type]
        assert t.prefill_cost is not None and t.prefill_cut_bytes is not None
        for cuts_all, seqs in _plans(t.G, t.L, order):
            for cuts in cuts_all:
                for seq in seqs:
                    devices, cut = tuple(int(g) for g in seq), tuple(int(e) for e in cuts)
                    n = capacity(t, devices, cut).max_sequences or 0
                    if n < B:
                        continue
                    m = evaluate(problem, devices, cut)
                    ret = return_latency(t, devices)
                    tau, d = m.tau.tolist(), m.d.tolist()
                    hold = tau if regime == "async" else [x + y for x, y in zip(tau, [*d, ret], strict=True)]
                    w, R = max(hold), sum(tau) + sum(d) + ret
                    ttft = sum(float(t.prefill_cost[g, cut[s]:cut[s + 1]].sum()) for s, g in enumerate(devices))
                    for s in range(len(devices) - 1):
                        g, h = devices[s], devices[s + 1]
                        beta = float(t.bandwidth_Bps[g, h])
                        ttft += float(t.latency_s[g, h]) + (0.0 if np.isinf(beta) else t.prefill_cut_bytes[cut[s + 1] - 1] / beta)
                    for K in range(1, n // B + 1):
                        P = max(K * w, R)
                        out.append((B, K, K * B / P, P, ttft))
    return out


def frontier_of(values: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """(tokens/s, TPOT) pairs no other beats on both, by rising TPOT (ties within RTOL)."""
    out: list[tuple[float, float]] = []
    for tps, tpot in sorted(values, key=lambda v: (v[1], -v[0])):
        if out and tps <= out[-1][0] * (1 + RTOL):
            continue
        while out and tpot <= out[-1][1] * (1 + RTOL):
            out.pop()
        out.append((tps, tpot))
    return out
