"""Every split of one batch's tables, scored for the closed loop at once: the serve search's exact
inner problem under TPOT and TTFT limits.

At a fixed batch B and in-flight count K the serve objective keeps, among the splits whose KV of
K·B sequences fits and that meet the limits, the one with the least TPOT (tokens/s = K·B / P is
falling in P, so at fixed (B, K) it is the only non-dominated split):

    minimise  P = max(K·w_max, R)                       (partitioner.analysis.closed_loop)
    subject to  N >= K·B,  P <= TPOT limit,  TTFT <= TTFT limit

with w_max the stage hold (τ_max async; blocking: σ_max of the closed loop, the last stage's σ
including d_ret), R = Στ + Σd + d_ret, TTFT = Στ_p + Σd_p (score.py) and N the plan's KV
capacity (capacity.py). These four numbers do not depend on K, so one pass over every split per
batch answers every K: each split is a vector (w_max, R, TTFT, N) and each (B, K) a masked
argmin. Splits are every sequence of distinct devices (every subset: fewer GPUs can meet a
limit the whole set cannot; in listed order under `order: fixed`) times every composition of the
layers into that many non-empty stages, exactly the brute force of `partitioner.solvers.brute`,
vectorised as tests/oracle.py does. It applies while their count is at most MAX_SPLITS
(`split_count`); beyond it labels.py finds the non-dominated splits without listing them (the
same answers), and past its work the search uses the least-w_max solvers and reports its gap.
The formulas here repeat score.py's (the TTFT the limit checks is its single-pass `ttft_s`):
exhaustive.py re-scores each chosen split with score.py and drops one it rejects, but a split
these arrays rule out is never seen, so a change to score.py's P or TTFT must be made here too.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from partitioner.problem import RTOL, CostTables

__all__ = ["MAX_SPLITS", "Splits", "split_count", "splits_of"]

MAX_SPLITS = 200_000  # splits scored per batch: ~15 ms on one core for 144k (64+ batches per search)


def split_count(G: int, L: int, order: str) -> int:
    """Σ_S C(L-1, S-1)·(G!/(G-S)! free, C(G, S) fixed): the splits `splits_of` scores."""
    ways = math.perm if order == "free" else math.comb
    return sum(math.comb(L - 1, S - 1) * ways(G, S) for S in range(1, min(G, L) + 1))


@dataclass(frozen=True, eq=False)
class Splits:
    """Flat arrays over every admitted split of one batch's tables (module doc). `N` is the KV
    capacity in sequences (inf without a KV model, -1 where the weights alone do not fit); `ttft`
    is inf without prefill costs."""

    w: np.ndarray
    trip: np.ndarray  # R = Στ + Σd + d_ret
    ttft: np.ndarray
    N: np.ndarray
    stages: np.ndarray
    groups: tuple[tuple[np.ndarray, np.ndarray, int], ...]  # (cuts (C, S+1), seqs (Q, S), offset): i = off + q·C + c

    def plan(self, i: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(devices, cuts) of split i."""
        for cuts, seqs, off in self.groups:
            n = cuts.shape[0] * seqs.shape[0]
            if off <= i < off + n:
                q, c = divmod(i - off, cuts.shape[0])
                return tuple(int(g) for g in seqs[q]), tuple(int(e) for e in cuts[c])
        raise IndexError(i)


def _prefix(a: np.ndarray) -> np.ndarray:
    return np.concatenate([np.zeros((*a.shape[:-1], 1)), np.cumsum(a, axis=-1)], axis=-1)


def _delays(t: CostTables, cut_bytes: np.ndarray) -> np.ndarray:
    """(G, G, L): alpha(g, h) + cut_bytes[l] / beta(g, h), as problem.link_delay."""
    with np.errstate(divide="ignore"):
        trans = np.where(np.isinf(t.bandwidth_Bps)[..., None], 0.0, cut_bytes[None, None, :] / t.bandwidth_Bps[..., None])
    return t.latency_s[..., None] + trans


def _stage_max(weight: np.ndarray, kv: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """capacity._stage_max elementwise: inf without KV, -1 where the weights do not fit."""

    def fits(n: np.ndarray) -> np.ndarray:
        return weight + n * kv <= cap * (1 + RTOL) + 1e-12

    empty = fits(np.zeros_like(weight))
    with np.errstate(divide="ignore", invalid="ignore"):
        n = np.where(kv > 0, np.floor(np.maximum(cap - weight, 0.0) / np.where(kv > 0, kv, 1.0)), 0.0)
    live = (kv > 0) & empty
    for _ in range(4):  # the float test decides, as capacity._stage_max's loops
        up = live & fits(n + 1)
        down = live & (n > 0) & ~fits(n)
        if not (up.any() or down.any()):
            break
        n = n + up - down
    return np.where(~empty, -1.0, np.where(kv > 0, n, np.inf))


def _intervals(t: CostTables) -> dict[str, np.ndarray]:
    """Per device and layer interval [i, j) (flattened i·(L+1) + j): τ, prefill τ and the
    sequences whose KV fits (capacity.py), so each split only gathers its stages' entries."""
    G, J = t.G, t.L + 1
    weight = t.memory_gb if t.weight_gb is None else t.weight_gb
    kvpt = np.zeros(t.L) if t.kv_bytes_per_token is None else t.kv_bytes_per_token
    Pw, Pk = _prefix(weight), _prefix(kvpt)
    wgt = Pw[None, :] - Pw[:, None]  # (J, J): [i, j)
    if t.tied_gb:
        wgt[0, t.L] -= t.tied_gb
    kv = (Pk[None, :] - Pk[:, None]) * t.context / 1e9
    out = {"N": _stage_max(wgt[None], kv[None], t.capacity_gb[:, None, None]).reshape(G, J * J)}
    P = _prefix(t.cost)
    out["tau"] = (P[:, None, :] - P[:, :, None]).reshape(G, J * J)
    out["delay"] = _delays(t, t.cut_bytes)
    if t.prefill_cost is not None and t.prefill_cut_bytes is not None:
        Pp = _prefix(t.prefill_cost)
        out["taup"] = (Pp[:, None, :] - Pp[:, :, None]).reshape(G, J * J)
        out["delay_p"] = _delays(t, t.prefill_cut_bytes)
    return out


def _group(t: CostTables, S: int, order: str, regime: str, keep: Callable[[tuple[int, ...]], bool],
           tables: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, ...]] | None:
    """Cuts, device sequences and (w, R, ttft, N) of every split into S stages, as (Q, C) arrays
    (device sequence q, cut set c) built one stage at a time."""
    G, L = t.G, t.L
    seq_iter = itertools.permutations(range(G), S) if order == "free" else itertools.combinations(range(G), S)
    seqs = np.array([s for s in seq_iter if keep(s)], dtype=np.int64).reshape(-1, S)
    if seqs.shape[0] == 0:
        return None
    cuts = np.array([(0, *c, L) for c in itertools.combinations(range(1, L), S - 1)], dtype=np.int64)
    ids = cuts[:, :-1] * (L + 1) + cuts[:, 1:]  # (C, S) interval of each stage
    prefill = "taup" in tables
    shape = (seqs.shape[0], cuts.shape[0])
    w, R, N = np.zeros(shape), np.zeros(shape), np.full(shape, np.inf)
    ttft = np.zeros(shape) if prefill else np.full(shape, np.inf)
    for k in range(S):
        tau = tables["tau"][seqs[:, k]][:, ids[:, k]]
        N = np.minimum(N, tables["N"][seqs[:, k]][:, ids[:, k]])
        if prefill:
            ttft += tables["taup"][seqs[:, k]][:, ids[:, k]]
        if k < S - 1:
            d = tables["delay"][seqs[:, k], seqs[:, k + 1]][:, cuts[:, k + 1] - 1]
            if prefill:
                ttft += tables["delay_p"][seqs[:, k], seqs[:, k + 1]][:, cuts[:, k + 1] - 1]
        else:
            g, h = seqs[:, -1], seqs[:, 0]
            beta = t.bandwidth_Bps[g, h]
            with np.errstate(divide="ignore"):
                ret = np.where(np.isinf(beta), 0.0, t.return_bytes / beta) + t.latency_s[g, h]
            d = np.where(S > 1, ret, 0.0)[:, None]
        R += tau + d
        np.maximum(w, tau if regime == "async" else tau + d, out=w)
    return cuts, seqs, (w.ravel(), R.ravel(), ttft.ravel(), N.ravel())


def splits_of(t: CostTables, regime: str, order: str,
              keep: Callable[[tuple[int, ...]], bool] = lambda devices: True) -> Splits:
    """Every split of `t` whose device sequence `keep` admits (an engine's launch-order rule), scored."""
    tables = _intervals(t)
    parts: list[tuple[np.ndarray, ...]] = []
    groups: list[tuple[np.ndarray, np.ndarray, int]] = []
    stages: list[np.ndarray] = []
    off = 0
    for S in range(1, min(t.G, t.L) + 1):
        got = _group(t, S, order, regime, keep, tables)
        if got is None:
            continue
        cuts, seqs, arrays = got
        groups.append((cuts, seqs, off))
        parts.append(arrays)
        stages.append(np.full(arrays[0].size, S))
        off += arrays[0].size
    if not parts:
        empty = np.zeros(0)
        return Splits(empty, empty, empty, empty, np.zeros(0, dtype=np.int64), ())
    w, R, ttft, N = (np.concatenate([p[k] for p in parts]) for k in range(4))
    return Splits(w, R, ttft, N, np.concatenate(stages), tuple(groups))
