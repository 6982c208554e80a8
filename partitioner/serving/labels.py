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

Contexts. Fixed order: (device, first device); the next device comes later in the listed order.
Free order: (count vector v over device classes, first class, current class), with the classes
of partitioner.solvers.dp.tables.classes (interchangeable devices: cost row, capacity and links)
split further by prefill row, as the DP solvers' lattice (docs/algorithms.md §3b): links then
depend only on the two classes, so (v, first, current) determine every hop. Each class's
devices are used in listed order.

The DP is bounded in work (labels created, contexts × layers), not in time: past `work` it
returns None and the serve search takes its least-w_max route for that batch (bounds, "not
proven"), so the answer never depends on the machine's load.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from partitioner.problem import CostTables
from partitioner.serving.splits import Splits, _intervals

__all__ = ["MAX_LABELS", "LabelSplits", "label_splits"]

MAX_LABELS = 3_000_000  # labels created (and contexts × layers) one batch's DP may spend

_W, _R, _TTFT, _N, _S, _PARENT, _ROW = range(7)  # label columns
_SLACK = 1e-9  # caps are pruned against with this relative slack: keeping a label is always safe


@dataclass(frozen=True, eq=False)
class LabelSplits(Splits):
    """The non-dominated splits as `Splits` arrays (exhaustive.py reads them alike); `plans[i]`
    is split i's (devices, cuts). `work` is the labels the DP created."""

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
    starts = tuple(get((tuple(int(c == f) for c in range(len(m))) if free else (), f, f)) for f in range(len(m)))
    succ: list[tuple[tuple[int, int, int], ...]] = []
    i = 0
    while i < len(keys):
        if len(keys) > most:
            return None
        v, f, h = keys[i]
        nxt = []
        for h2 in range(len(m)):
            if (v[h2] >= m[h2]) if free else h2 <= h:
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


def _pareto(A: np.ndarray, cols: tuple[int, ...]) -> np.ndarray:
    """The rows of A no other row dominates on `cols` (less is better; N is negated by the
    caller's column choice), the first of equal rows kept, in lexicographic order."""
    if A.shape[0] <= 1:
        return A
    X = A[:, cols] * np.array([-1.0 if c == _N else 1.0 for c in cols])
    rank = np.lexsort(X.T[::-1])
    A, X = A[rank], X[rank]
    if len(cols) == 1:
        return A[:1]
    if len(cols) == 2:
        prev = np.minimum.accumulate(np.concatenate(([np.inf], X[:-1, 1])))
        return A[X[:, 1] < prev]
    keep = np.ones(A.shape[0], dtype=bool)
    for lo in range(1, A.shape[0], 256):  # row i is dominated by an earlier row (lex order)
        hi = min(lo + 256, A.shape[0])
        le = (X[None, :hi, :] <= X[lo:hi, None, :]).all(axis=2)  # (rows, earlier)
        le &= np.arange(hi)[None, :] < np.arange(lo, hi)[:, None]
        keep[lo:hi] = ~le.any(axis=1)
    return A[keep]


def label_splits(t: CostTables, regime: str, order: str, *, n_min: float, w_cap: float = math.inf,
                 r_cap: float = math.inf, ttft_cap: float = math.inf, n_clip: float = math.inf,
                 with_ttft: bool = True, with_n: bool = True, work: int = MAX_LABELS) -> LabelSplits | None:
    """The splits of `t` no other dominates on (w_max, R, TTFT if `with_ttft`, N if `with_n`),
    among those whose every stage holds `n_min` sequences and that can meet w_max <= w_cap,
    R <= r_cap, TTFT <= ttft_cap (N is clipped at `n_clip`: more is never used); None past `work`."""
    L, J = t.L, t.L + 1
    ctx = _contexts(t, order, max(1, work // J))
    if ctx is None:
        return None
    T = _intervals(t)
    prefill = "taup" in T
    r_lb = np.concatenate([np.cumsum(t.cost.min(axis=0)[::-1])[::-1], [0.0]])
    p_lb = np.concatenate([np.cumsum(t.prefill_cost.min(axis=0)[::-1])[::-1], [0.0]]) if prefill else np.zeros(J)
    w_top, r_top, p_top = (c * (1 + _SLACK) + 1e-15 for c in (w_cap, r_cap, ttft_cap))
    cols = (_W, _R) + ((_TTFT,) if with_ttft else ()) + ((_N,) if with_n else ())
    with np.errstate(divide="ignore"):
        beta = np.where(np.isinf(t.bandwidth_Bps), 0.0, t.return_bytes / t.bandwidth_Bps) + t.latency_s
    pending: dict[tuple[int, int], list[np.ndarray]] = {}
    for u in ctx.starts:
        pending[(u, 0)] = [np.array([[0.0, 0.0, 0.0 if prefill else math.inf, n_clip, 0.0, -1.0, -1.0]])]
    states: list[tuple[int, int]] = []
    rows: list[np.ndarray] = []
    finals: list[np.ndarray] = []
    spent = 0
    for j in range(L):
        for u in sorted(u for (u, i) in pending if i == j):
            A = _pareto(np.concatenate(pending.pop((u, j))), cols)
            sid = len(states)
            states.append((u, j))
            rows.append(A)
            g = int(ctx.device[u])
            ks = np.arange(j + 1, J)
            tau, n_st = T["tau"][g, j * J + ks], T["N"][g, j * J + ks]
            taup = T["taup"][g, j * J + ks] if prefill else np.zeros(ks.size)
            ok = (n_st >= n_min) & (tau <= w_top) & (tau + r_lb[ks] <= r_top) & (taup + p_lb[ks] <= p_top)
            spent += A.shape[0] * int(ok.sum()) * (len(ctx.succ[u]) + 1) + 1
            if spent > work:
                return None
            base = np.column_stack([A[:, :_S], A[:, _S] + 1, np.full(A.shape[0], sid), np.arange(A.shape[0])])
            if ok[-1]:
                r = 0.0 if ctx.ret_from[u] < 0 else float(beta[ctx.ret_from[u], ctx.ret_to[u]])
                hold = tau[-1] + (r if regime == "blocking" else 0.0)
                lab = _extend(base, hold, tau[-1] + r, taup[-1], 0.0, n_st[-1])
                finals.append(lab[(lab[:, _W] <= w_top) & (lab[:, _R] <= r_top) & (lab[:, _TTFT] <= p_top)])
            sel = np.flatnonzero(ok[:-1])
            if sel.size == 0:
                continue
            for u2, a, b in ctx.succ[u]:
                k = ks[sel]
                d = T["delay"][a, b, k - 1]
                dp = T["delay_p"][a, b, k - 1] if prefill else np.zeros(k.size)
                hold = tau[sel] + (d if regime == "blocking" else 0.0)
                for c in range(k.size):
                    lab = _extend(base, hold[c], tau[sel[c]] + d[c], taup[sel[c]], dp[c], n_st[sel[c]])
                    lab = lab[(lab[:, _W] <= w_top) & (lab[:, _R] + r_lb[k[c]] <= r_top)
                              & (lab[:, _TTFT] + p_lb[k[c]] <= p_top)]
                    if lab.shape[0]:
                        pending.setdefault((u2, int(k[c])), []).append(lab)
    return _collect(ctx, t, states, rows, finals, cols, spent)


def _extend(base: np.ndarray, hold: float, trip: float, taup: float, dp: float, n_st: float) -> np.ndarray:
    """The labels `base` after one stage: w max hold, R + (τ + d), (TTFT + τ_p) + d_p, N min
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
    F = _pareto(np.concatenate(finals), cols) if finals else np.zeros((0, 7))
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
