"""Upper bounds on a replica's decode tokens/s without solving it, per device set or per count vector.

A replica on devices D runs at tokens/s = K·B / P with P = max(K·w_max, R) and R = Στ + Σd + d_ret
(partitioner.analysis.closed_loop). So, for every split of the model over D:

    w_max >= τ_lb = L_dec / Σ_{g∈D} r_g      (r_g: g's best decoder layers per second,
                                              t-normalised over its TP groups)
    R     >= R_lb = max(Σ_l min_{g∈D} low[g][l], fill(D)) + n·α_min + (n − 1)·b_min/β_max

(low: the least cost of a layer on any unit holding g; n: the fewest nodes of D whose memory holds
the model, so the ring crosses at least n node boundaries (n >= 2), each link and the return at
least the least inter-node latency, every cut at least the least cut bytes over the fastest link; fill(D) is the cheapest fractional filling of the L layers, device g holding at
most C_g / m_min of them), hence v(D) <= min(B/τ_lb, K·B/R_lb). B/τ_lb alone (the fluid bound) is
additive over disjoint replicas.

`ReplicaBound.vectors(X)` evaluates the same bound for many count vectors x over node kinds at
once (partitioner.deploy.kinds.NodeKinds; nodes of one kind are interchangeable, links uniform),
from per-kind and per-subset-of-kinds tables; it equals the per-device-set bound (tests).
`tail(c)` bounds a replica that uses more than c nodes: its ring crosses at least c + 1 node
boundaries, each at least the least inter-node latency.
Its inputs (r_g, low) from a model and cluster, and the workload's and the serve objective's bounds
built from them, are partitioner.deploy.bound_inputs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from partitioner.problem import CostTables

__all__ = ["ReplicaBound", "MAX_MASK_KINDS"]

MAX_MASK_KINDS = 12  # per-subset tables have 2^kinds rows


def _nodes_needed(rooms: list[float], need: float) -> int:
    """The fewest nodes (rooms sorted descending) that hold `need` GB: a stage lives on one node,
    so a plan has at least this many stages on as many nodes, and its ring crosses as many node
    boundaries (each link and the return at least the least inter-node latency)."""
    left, n = need * (1 - 1e-9), 0
    for r in rooms:
        if left <= 0:
            break
        left -= r
        n += 1
    return max(1, n)


class ReplicaBound:
    """The bound of the module doc for the tables `base` (at the workload's B and K)."""

    def __init__(self, base: CostTables, cluster: Any, rates: dict[int, float], lows: np.ndarray, need: float, *,
                 fluid_rate: np.ndarray | None = None, seq_cap: tuple[float, float] | None = None,
                 batch_floor: float = 0.0) -> None:
        """`fluid_rate` (tokens/s per device) and `seq_cap` (weights GB, KV GB per sequence) serve
        the (B, K) search: the bound over every B and K (see `for_serve`)."""
        dec = [i for i, k in enumerate(base.kinds) if k == "decoder"] or list(range(base.L))
        r = 1.0 / base.cost[:, dec].min(axis=1)
        for g, rg in rates.items():
            r[g] = max(r[g], rg)
        self.base, self.cluster, self.r, self.lows, self.need = base, cluster, r, lows, need
        self.L_dec = len(dec)
        self.B, self.K = base.batch, base.in_flight
        self.fr = base.batch * r / self.L_dec if fluid_rate is None else fluid_rate
        self.seq_cap, self.batch_floor = seq_cap, batch_floor
        self.cut_min = float(base.cut_bytes[:-1].min()) if base.L > 1 else 0.0
        self.m_min = float(base.memory_gb.min())
        self.per_layer = lows.min(axis=1)
        with np.errstate(divide="ignore"):
            self.per_byte = np.where(np.isinf(base.bandwidth_Bps), 0.0, 1.0 / base.bandwidth_Bps)

    def _hold(self, g: int, left: float) -> float:
        return min(left, float(self.base.capacity_gb[g]) / self.m_min) if self.m_min > 0 else left

    def fill(self, devices: list[int]) -> float:
        """Σ τ >= the cheapest fractional filling of the L layers into the devices (module doc)."""
        left, total = float(self.base.L), 0.0
        for g in sorted(devices, key=lambda g: self.per_layer[g]):
            take = self._hold(g, left)
            total += take * float(self.per_layer[g])
            left -= take
            if left <= 0:
                return total
        return math.inf  # the devices cannot hold the model

    def sequences(self, capacity_gb: np.ndarray | float) -> Any:
        """The most sequences K·B in flight: the workload's, or what the memory beyond the weights
        holds (serve: every stage keeps the KV of every sequence, partitioner.serving.capacity)."""
        if self.seq_cap is None:
            return self.K * self.B
        weights, kv = self.seq_cap
        return np.maximum(0.0, (capacity_gb - weights) / kv) if kv > 0 else np.inf * np.ones_like(capacity_gb)

    def __call__(self, devices: list[int]) -> float:
        base = self.base
        fluid = float(self.fr[devices].sum())
        room: dict[str, float] = {}
        for g in devices:
            node = self.cluster.devices[g].node
            room[node] = room.get(node, 0.0) + float(base.capacity_gb[g])
        s_nodes = _nodes_needed(sorted(room.values(), reverse=True), self.need)
        a_min, x_min = 0.0, 0.0
        if s_nodes > 1:
            nodes = np.array([self.cluster.devices[g].node for g in devices])
            inter = nodes[:, None] != nodes[None, :]
            ix = np.ix_(devices, devices)
            a_min = float(base.latency_s[ix][inter].min())
            x_min = float(self.per_byte[ix][inter].min()) * self.cut_min
        rt_lb = (max(float(self.lows[devices].min(axis=0).sum()), self.fill(devices))
                 + s_nodes * a_min + (s_nodes - 1) * x_min)
        if math.isinf(rt_lb):
            return 0.0
        seqs = float(self.sequences(float(base.capacity_gb[devices].sum())))
        if seqs < self.batch_floor:
            return 0.0  # not even one micro-batch of the smallest batch fits
        return min(fluid, seqs / rt_lb) if rt_lb > 0 else fluid

    def fluid(self, devices: list[int]) -> float:
        """B / τ_lb alone: additive over disjoint replicas, so a bound for a whole deployment."""
        return float(self.fr[devices].sum())

    @property
    def memory_aware(self) -> bool:
        """Whether `joint` is tighter than the plain bound (the serve bound, with a KV model)."""
        return self.seq_cap is not None

    def joint(self, devices: list[int]) -> float:
        """The memory-aware bound of partitioner.deploy.kvbound (<= this bound; serve only)."""
        from partitioner.deploy.kvbound import joint_bound

        return joint_bound(self, devices)

    # --- count vectors over node kinds -------------------------------------------------------

    def prepare(self, nk: Any) -> None:
        """Per-kind and per-subset tables for `vectors` (nk: NodeKinds)."""
        base = self.base
        reps = [list(k[0]) for k in nk.kinds]
        n = len(reps)
        self.nk = nk
        self.ndev = np.array([len(d) for d in reps])
        self.room = np.array([float(base.capacity_gb[d].sum()) for d in reps])
        lowrow = np.array([self.lows[d].min(axis=0) for d in reps])
        self.rates = np.array([float(self.fr[d].sum()) for d in reps])  # the fluid bound per node of each kind

        def pair_min(a: list[int], b: list[int], m: np.ndarray) -> float:
            vals = [float(m[g, h]) for g in a for h in b if g != h]
            return min(vals) if vals else math.inf

        lat, pb = base.latency_s, self.per_byte
        same = [(pair_min(list(k[0]), list(k[1]), lat), pair_min(list(k[0]), list(k[1]), pb)) if len(k) > 1
                else (math.inf, math.inf) for k in nk.kinds]
        cross = np.full((n, n, 2), math.inf)
        for i in range(n):
            for j in range(n):
                if i != j:
                    cross[i, j] = (pair_min(reps[i], reps[j], lat), pair_min(reps[i], reps[j], pb))
        self.same = np.array(same).reshape(n, 2)
        masks = 1 << n
        self.m_low = np.zeros(masks)
        self.m_room = np.zeros(masks)
        self.m_link = np.full((masks, 2), math.inf)
        for m in range(1, masks):
            ks = [k for k in range(n) if m >> k & 1]
            self.m_low[m] = float(lowrow[ks].min(axis=0).sum())
            self.m_room[m] = float(self.room[ks].max())
            if len(ks) > 1:
                self.m_link[m] = cross[np.ix_(ks, ks)].reshape(-1, 2).min(axis=0)
        # fill: device types (per-layer cost, layers held) and their count per node of each kind
        devs = sorted({g for d in reps for g in d}, key=lambda g: self.per_layer[g])
        self.f_cost = np.array([float(self.per_layer[g]) for g in devs])
        self.f_hold = np.array([float(base.capacity_gb[g]) / self.m_min if self.m_min > 0 else math.inf for g in devs])
        self.f_count = np.zeros((n, len(devs)))
        for k, d in enumerate(reps):
            for g in d:
                self.f_count[k, devs.index(g)] += 1

    def vectors(self, X: np.ndarray) -> np.ndarray:
        """The bound for each row x of X (count vectors over nk's kinds; prepare first)."""
        X = np.asarray(X, dtype=float)
        n = X.shape[1]
        mask = ((X > 0).astype(np.int64) << np.arange(n)).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            fluid = X @ self.rates
            s_min = self._nodes_needed(X)
            link = self.m_link[mask]
            both = np.where(X >= 2, 1.0, np.inf)
            link = np.minimum(link, np.stack([(both * self.same[:, 0]).min(axis=1), (both * self.same[:, 1]).min(axis=1)], 1))
            on = s_min > 1
            a_min = np.where(on, link[:, 0], 0.0)
            x_min = np.where(on, link[:, 1], 0.0) * self.cut_min
            held = (X @ self.f_count) * self.f_hold
            cum = np.cumsum(held, axis=1)
            take = np.clip(self.base.L - (cum - held), 0.0, held)
            take = np.nan_to_num(take, nan=0.0)
            fill = np.where(cum[:, -1] >= self.base.L * (1 - 1e-12), (take * self.f_cost).sum(axis=1), np.inf)
            rt = np.maximum(self.m_low[mask], fill) + s_min * a_min + (s_min - 1) * x_min
            seqs = self.sequences(X @ self.room)
            ub = np.where(rt > 0, np.minimum(fluid, seqs / rt), fluid)
        return np.where(np.isinf(rt) | (seqs < self.batch_floor), 0.0, ub)

    def _nodes_needed(self, X: np.ndarray) -> np.ndarray:
        """Per row: the fewest of its nodes whose memory holds the model (largest rooms first)."""
        left = np.full(len(X), self.need * (1 - 1e-9))
        count = np.zeros(len(X))
        for k in np.argsort(-self.room):
            take = np.where(left > 0, np.minimum(X[:, k], np.ceil(np.maximum(left, 0) / self.room[k])), 0)
            count += take
            left -= take * self.room[k]
        return np.maximum(1, count)

    def tail(self, c: int) -> float:
        """tokens/s of any replica whose plan uses more than c nodes: K·B / (R_floor + (c+1)·α_inter)."""
        base = self.base
        nodes = np.array([self.cluster.devices[g].node for g in range(base.G)])
        inter = nodes[:, None] != nodes[None, :]
        a = float(base.latency_s[inter].min()) if inter.any() else 0.0
        floor = float(self.lows.min(axis=0).sum())
        seqs = float(self.sequences(float(base.capacity_gb.sum())))
        return seqs / (floor + (c + 1) * a) if floor + (c + 1) * a > 0 else math.inf

