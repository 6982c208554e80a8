"""The non-dominated splits of one batch without listing the splits: a label-setting DP over
contiguous stages, the serve search's exact inner problem beyond splits.MAX_SPLITS.

splits.py scores every split as a vector (w_max, R, TTFT, N) and exhaustive.py answers each
(B, K) with a masked argmin of P = max(K·w_max, R) under N >= K·B, P <= TPOT limit and
TTFT <= TTFT limit. Every one of those answers, and every K that in_flight_points searches, is
attained on a split no other split dominates in (w_max least, R least, TTFT least, N most): a
dominating split fits wherever the other fits, meets every limit the other meets, and has a P
no larger at every K. So the set of non-dominated vectors, one split each, answers the batch
exactly. This module builds that set as a multi-criteria shortest path over a DAG
(resource-constrained shortest paths with Pareto labels, Irnich & Desaulniers, "Shortest path
problems with resource constraints", in Column Generation, Springer 2005, §2.2), whose nodes are

    (context u, layer j):  the next stage starts at layer j on the device of u

and whose arcs are stages [j, k) followed by a hop to the next stage's device (or, at k = L,
the return hop d_ret to the first device). A label carries w = max hold (τ async, τ + d
blocking), R = Στ + Σd (+ d_ret at the end), TTFT = Στ_p + Σd_p and N = min stage capacity,
each combined exactly as splits._group combines them, so the floats agree. Labels dominated at
a node are dropped (every extension of the dominated one is dominated by the same extension of
the other: max, + and min are monotone), as are labels that can no longer meet the caps (the
rest of the layers add at least Σ min_g τ and Σ min_g τ_p).

Contexts. Fixed order: (device, first device); the next device comes later in the listed order,
and a plan skips no device of a run of interchangeable neighbours (same class, below) to use a
later one of that run: the run's first devices do the same in the same places of the order.
Free order: (count vector v over device classes, first class, current class), with the classes
of partitioner.solvers.dp.tables.classes (interchangeable devices: cost row, capacity and links)
split further by prefill row, as the DP solvers' lattice (docs/algorithms.md §3b): links then
depend only on the two classes, so (v, first, current) determine every hop. Each class's
devices are used in listed order.

The DP is bounded in work, not in time: labels extended plus dominance comparisons (and
contexts × layers before it starts). Past `work`, or from a quarter of the layers on once the
work so far times (L/j)² exceeds 4·`work` (bound to run out), it returns None and the serve search takes its
least-w_max route for that batch (bounds, "not proven"), so the answer never depends on the
machine's load; only a user's time limit (`stop`) cuts it by the clock.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from partitioner.problem import CostTables
from partitioner.serving.splits import Splits, _intervals

__all__ = ["KEYS", "MAX_LABELS", "LabelSplits", "label_splits"]

MAX_LABELS = 3_000_000  # work (labels extended + comparisons) one batch's DP may spend: ~1 s on one idle core

_W, _R, _TTFT, _N, _S, _PARENT, _ROW = range(7)  # label columns (S: stages so far)
KEYS = ("w", "R", "ttft", "N")  # the criteria, in column order
_START, _SID, _IDX = range(7, 10)  # an extendable label's own node: its stage's first layer, node, row
_SLACK = 1e-9  # caps are pruned against with this relative slack: keeping a label is always safe


@dataclass(frozen=True, eq=False)
class LabelSplits(Splits):
    """The non-dominated splits as `Splits` arrays (exhaustive.py reads them alike); `plans[i]`
    is split i's (devices, cuts). `work` is the work the DP counted (module doc)."""

    plans: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...] = ()
    work: int = 0

    def plan(self, i: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return self.plans[i]


@dataclass(frozen=True)
class _Contexts:
    """The device side of the DAG: per context its stage device, its first device and the hop
    back (-1: a single stage so far), and its successors as (context, device after the hop)."""

    device: np.ndarray
    ret_from: np.ndarray  # device the return hop leaves from (-1: no return hop)
    ret_to: np.ndarray
    succ: tuple[tuple[tuple[int, int, int], ...], ...]  # (context', hop from, hop to)
    starts: tuple[int, ...]
    members: tuple[tuple[int, ...], ...]  # class -> devices in listed order
    klass: np.ndarray  # context -> class of its stage


def _free_classes(t: CostTables) -> list[list[int]]:
    """Link-aware classes (partitioner.solvers.dp.tables.classes) split by prefill row."""
    from partitioner.solvers.dp.tables import device_classes

    out: list[list[int]] = []
    for members in device_classes(t, links=True):
        groups: dict[bytes, list[int]] = {}
        for g in members:
            key = b"" if t.prefill_cost is None else np.asarray(t.prefill_cost[g], dtype=float).tobytes()
            groups.setdefault(key, []).append(g)
        out.extend(groups.values())
    return sorted(out, key=lambda c: c[0])


def _contexts(t: CostTables, order: str, most: int) -> _Contexts | None:
    """The contexts of `order` (module doc), or None when there are more than `most`."""
    classes = [[g] for g in range(t.G)] if order == "fixed" else _free_classes(t)
    m = [len(c) for c in classes]
    lead = [True] * t.G  # fixed order: the first device of a run of interchangeable neighbours
    if order == "fixed":
        kind = {g: c for c, members in enumerate(_free_classes(t)) for g in members}
        lead = [g == 0 or kind[g - 1] != kind[g] for g in range(t.G)]
    ids: dict[tuple[tuple[int, ...], int, int], int] = {}
    keys: list[tuple[tuple[int, ...], int, int]] = []

    def get(key: tuple[tuple[int, ...], int, int]) -> int:
        if key not in ids:
            ids[key] = len(keys)
            keys.append(key)
        return ids[key]

    def pair(a: int, b: int) -> tuple[int, int]:  # two distinct devices of a hop from class a to b
        return classes[a][0], classes[b][1 if a == b else 0]

    free = order != "fixed"  # fixed order: the next device is later in the list, no count vector
    starts = tuple(get((tuple(int(c == f) for c in range(len(m))) if free else (), f, f))
                   for f in range(len(m)) if free or lead[f])
    succ: list[tuple[tuple[int, int, int], ...]] = []
    i = 0
    while i < len(keys):
        if len(keys) > most:
            return None
        v, f, h = keys[i]
        nxt = []
        for h2 in range(len(m)):
            if (v[h2] >= m[h2]) if free else (h2 <= h or not (lead[h2] or h2 == h + 1)):
                continue
            v2 = tuple(x + (c == h2) for c, x in enumerate(v))
            nxt.append((get((v2, f, h2)), *pair(h, h2)))
        succ.append(tuple(nxt))
        i += 1
    single = [sum(v) == 1 if free else h == f for v, f, h in keys]
    ret = [(-1, -1) if one else pair(h, f) for (v, f, h), one in zip(keys, single, strict=True)]
    return _Contexts(
        device=np.array([classes[h][0] for _, _, h in keys], dtype=np.int64),
        ret_from=np.array([r[0] for r in ret], dtype=np.int64), ret_to=np.array([r[1] for r in ret], dtype=np.int64),
        succ=tuple(succ), starts=starts, members=tuple(tuple(c) for c in classes),
        klass=np.array([h for _, _, h in keys], dtype=np.int64))


def _pareto(A: np.ndarray, cols: tuple[int, ...]) -> tuple[np.ndarray, int]:
    """The rows of A no other row dominates on `cols` (less is better, N more), the first of
    equal rows kept, in lexicographic order; and the comparisons made (work). A row dominated
    by any earlier row is dominated by a kept one, so each block is compared with the kept rows
    and with itself."""
    if A.shape[0] <= 1:
        return A, 1
    X = A[:, cols] * np.array([-1.0 if c == _N else 1.0 for c in cols])
    rank = np.lexsort(X.T[::-1])
    A, X = A[rank], X[rank]
    if len(cols) == 1:
        return A[:1], A.shape[0]
    if len(cols) == 2:
        prev = np.minimum.accumulate(np.concatenate(([np.inf], X[:-1, 1])))
        return A[X[:, 1] < prev], A.shape[0]
    keep = np.zeros(A.shape[0], dtype=bool)
    kept = X[:0]
    spent = 0
    for lo in range(0, A.shape[0], 128):
        blk = X[lo:lo + 128]
        out = (blk[:, None, :] >= blk[None, :, :]).all(axis=2) & np.tri(blk.shape[0], k=-1, dtype=bool)
        out = out.any(axis=1)
        if kept.shape[0]:
            out |= (blk[:, None, :] >= kept[None, :, :]).all(axis=2).any(axis=1)
        spent += blk.shape[0] * (blk.shape[0] + kept.shape[0])
        keep[lo:lo + blk.shape[0]] = ~out
        kept = np.concatenate([kept, blk[~out]])
    return A[keep], spent


def label_splits(t: CostTables, regime: str, order: str, *, n_min: int, w_cap: float = math.inf,
                 r_cap: float = math.inf, ttft_cap: float = math.inf, most: int = 1,
                 keys: tuple[str, ...] = KEYS, work: int = MAX_LABELS,
                 stop: Callable[[], bool] = lambda: False) -> LabelSplits | None:
    """The splits of `t` no other dominates on `keys` (of KEYS: w_max, R, TTFT, N; one per
    non-dominated vector, so a single key gives one split of its least value), among those
    whose every stage holds `n_min` = B sequences and that can meet w_max <= w_cap,
    R <= r_cap, TTFT <= ttft_cap; None past `work` or once `stop()` (a user's time limit). N is what the serve search reads of it: whole
    batches, B·min(⌊N/B⌋, K_top) with K_top (`_k_top`) the most in flight any split can use."""
    L, J = t.L, t.L + 1
    ctx = _contexts(t, order, max(1, work // J))
    if ctx is None:
        return None
    T = _intervals(t)
    T["N"] = np.minimum(np.floor(T["N"] / n_min), _k_top(t, T, w_cap, most)) * n_min
    n_clip = float(T["N"].max())
    prefill = "taup" in T
    r_lb = np.concatenate([np.cumsum(t.cost.min(axis=0)[::-1])[::-1], [0.0]])
    p_lb = np.zeros(J)
    if prefill and t.prefill_cost is not None:
        p_lb[:L] = np.cumsum(t.prefill_cost.min(axis=0)[::-1])[::-1]
    w_top, r_top, p_top = (c * (1 + _SLACK) + 1e-15 for c in (w_cap, r_cap, ttft_cap))
    cols = tuple(KEYS.index(k) for k in keys)  # KEYS are the first label columns
    with np.errstate(divide="ignore"):
        beta = np.where(np.isinf(t.bandwidth_Bps), 0.0, t.return_bytes / t.bandwidth_Bps) + t.latency_s
    states: list[tuple[int, int]] = []
    rows: list[np.ndarray] = []
    live: list[np.ndarray | None] = [None] * len(ctx.succ)  # per context: its labels still extendable
    finals: list[np.ndarray] = []

    def settle(u: int, j: int, A: np.ndarray) -> int:  # node (u, j)'s labels, extendable from now on
        A, spent = _pareto(A, cols)
        sid = len(states)
        states.append((u, j))
        rows.append(A)
        own = np.column_stack([A, np.full(A.shape[0], j), np.full(A.shape[0], sid), np.arange(A.shape[0])])
        live[u] = own if live[u] is None else np.concatenate([live[u], own])
        return spent

    def advance(u: int, j: int, held: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
        """Context u's live labels closing their stage at j: (successor, labels) after each hop,
        (-1, labels) at j = L; labels whose stage can no longer meet the caps leave `live`."""
        g, i = int(ctx.device[u]), held[:, _START].astype(np.int64)
        tau, n_st = T["tau"][g, i * J + j], T["N"][g, i * J + j]
        taup = T["taup"][g, i * J + j] if prefill else np.zeros(i.size)
        ok = ((n_st >= n_min) & (np.maximum(held[:, _W], tau) <= w_top) & (held[:, _R] + tau + r_lb[j] <= r_top)
              & (held[:, _TTFT] + taup + p_lb[j] <= p_top))
        if j < L:  # a stage [i, j) that fails these fails [i, j') for j' > j (module doc); not [0, L)
            live[u] = held[ok | (i == 0)]
        base = np.column_stack([held[ok, :_S], held[ok, _S] + 1, held[ok, _SID], held[ok, _IDX]])
        tau, n_st, taup = tau[ok], n_st[ok], taup[ok]
        if j == L:
            r = 0.0 if ctx.ret_from[u] < 0 else float(beta[ctx.ret_from[u], ctx.ret_to[u]])
            lab = _extend(base, tau + (r if regime == "blocking" else 0.0), tau + r, taup, 0.0, n_st)
            yield -1, lab[(lab[:, _W] <= w_top) & (lab[:, _R] <= r_top) & (lab[:, _TTFT] <= p_top)]
            return
        for u2, a, b in ctx.succ[u] if base.shape[0] else ():
            d = float(T["delay"][a, b, j - 1])
            dp = float(T["delay_p"][a, b, j - 1]) if prefill else 0.0
            lab = _extend(base, tau + (d if regime == "blocking" else 0.0), tau + d, taup, dp, n_st)
            yield u2, lab[(lab[:, _W] <= w_top) & (lab[:, _R] + r_lb[j] <= r_top) & (lab[:, _TTFT] + p_lb[j] <= p_top)]

    spent = sum(settle(u, 0, np.array([[0.0, 0.0, 0.0 if prefill else math.inf, n_clip, 0.0, -1.0, -1.0]]))
                for u in ctx.starts)
    for j in range(1, J):
        incoming: dict[int, list[np.ndarray]] = {}
        for u, held in enumerate(live):
            if held is None or not held.shape[0]:
                continue
            spent += held.shape[0] * (len(ctx.succ[u]) + 1)
            if spent > work:
                return None
            for u2, lab in advance(u, j, held):
                if u2 < 0:
                    finals.append(lab)
                elif lab.shape[0]:
                    incoming.setdefault(u2, []).append(lab)
        for u2 in sorted(incoming):
            spent += settle(u2, j, np.concatenate(incoming[u2]))
        if spent > work or stop() or (4 * j >= L and spent * (L / j) ** 2 > 4 * work):
            return None  # past the work, stopped, or on course past it (labels growing faster than j²)
    return _collect(ctx, t, states, rows, finals, cols, spent)


def _k_top(t: CostTables, T: dict[str, np.ndarray], w_cap: float, most: int) -> float:
    """K beyond which no split gains (points.in_flight_points stops before it): K·w_max <= TPOT
    cap, and beyond ⌈R/w_max⌉ a split is bottleneck-bound (more K adds TPOT, not tokens/s),
    where R <= S·τ_max + (S-1)·max d + max d_ret, w_max >= τ_max and w_max >= w_lb =
    max_l min_g c[g][l], so R/w_max <= S + ((S-1)·max d + max d_ret) / w_lb."""
    w_lb = float(t.cost.min(axis=0).max())
    if w_lb <= 0:
        return float(most)
    S = min(t.G, t.L)
    with np.errstate(divide="ignore"):
        ret = np.where(np.isinf(t.bandwidth_Bps), 0.0, t.return_bytes / t.bandwidth_Bps) + t.latency_s
    hop = float(T["delay"][..., :-1].max()) if t.G > 1 and t.L > 1 else 0.0
    top = S + math.ceil(((S - 1) * hop + float(ret.max())) / w_lb) + 1
    if math.isfinite(w_cap):
        top = min(top, math.floor(w_cap * (1 + _SLACK) / w_lb) + 1)
    return float(min(most, top))


def _extend(base: np.ndarray, hold: np.ndarray, trip: np.ndarray, taup: np.ndarray, dp: float,
            n_st: np.ndarray) -> np.ndarray:
    """The labels `base` each after its stage: w max hold, R + (τ + d), (TTFT + τ_p) + d_p, N min
    (the order of splits._group's float operations)."""
    out = base.copy()
    np.maximum(out[:, _W], hold, out=out[:, _W])
    out[:, _R] += trip
    out[:, _TTFT] = (out[:, _TTFT] + taup) + dp
    np.minimum(out[:, _N], n_st, out=out[:, _N])
    return out


def _collect(ctx: _Contexts, t: CostTables, states: list[tuple[int, int]], rows: list[np.ndarray],
             finals: list[np.ndarray], cols: tuple[int, ...], spent: int) -> LabelSplits:
    """The non-dominated finished labels as Splits arrays, each traced back to its split."""
    F = _pareto(np.concatenate(finals), cols)[0] if finals else np.zeros((0, 7))
    plans = []
    for lab in F:
        classes: list[int] = []
        cuts = [t.L]
        sid, row = int(lab[_PARENT]), int(lab[_ROW])
        while sid >= 0:
            u, j = states[sid]
            classes.append(int(ctx.klass[u]))
            cuts.append(j)
            parent = rows[sid][row]
            sid, row = int(parent[_PARENT]), int(parent[_ROW])
        used = [0] * len(ctx.members)
        devices = []
        for c in reversed(classes):
            devices.append(ctx.members[c][used[c]])
            used[c] += 1
        plans.append((tuple(devices), tuple(reversed(cuts))))
    return LabelSplits(F[:, _W], F[:, _R], F[:, _TTFT], F[:, _N], F[:, _S].astype(np.int64), (),
                       tuple(plans), spent)
