"""A memory-aware upper bound on a serve replica's tokens/s: sequences in flight against round trip.

Under the serve objective a replica on devices D holds N = K·B sequences and runs at
tokens/s = N / P with P = max(K·w_max, R) >= R = Στ + Σd + d_ret (partitioner.analysis.closed_loop;
docs/theory.md "Decode (closed loop)"). Every stage keeps the KV cache of all N sequences on its
own layers (partitioner.serving.capacity), so at N sequences a decoder layer l needs
m_l(N) = weight_l + N·kv_l GB, and device g holds at most C_g / m_dec(N) decoder layers, with
m_dec(N) = min over decoder layers of weight_l + N · min over decoder layers of kv_l. Hence

    Στ   >= Σ_{l not decoder} min_{g∈D} low[g][l] + fill_dec(N)
             (fill_dec: the cheapest fractional filling of the L_dec decoder layers, device g
              holding at most C_g / m_dec(N) of them at its least decoder-layer cost)
    Σd + d_ret >= n(N)·α_min + (n(N) − 1)·x_min
             (n(N): the fewest nodes of D whose memory holds the weights and N sequences' KV; each
              node boundary the ring crosses costs at least the least inter-node latency, every
              cut but the return at least the least cut bytes over the fastest link; n >= 2 only)

The bottleneck too: tokens/s <= B / w_max, and a device g holding n_g decoder layers takes
w_max >= n_g·c_g(B), so B / w_max <= a_g / n_g with a_g = max over the batch range of B·r_g(B)
(bounds.ReplicaBound.fr·L_dec: g's decoder layers per second, t-normalised over its TP groups,
times B). The L_dec layers must be placed with n_g <= C_g / m_dec(N), so

    T(N) = max over such n of min_g a_g / n_g,  the T with Σ_g min(C_g / m_dec(N), a_g / T) = L_dec

(water-filling; T(0) is the fluid rate Σ a_g / L_dec when nothing caps a device). The same cap
couples the two terms: a plan at t tokens/s has n_g <= a_g / t, so its round trip is at least
R_lb(N, t), the fill above with device g holding at most min(C_g / m_dec(N), a_g / t) layers
(fast devices cannot take every layer at a high rate, so slow ones enter the round trip).
T(N) and R_lb(N, t) are monotone (T does not rise with N; R_lb does not fall with N or t), so
over N ∈ [N_i, N_{i+1}]

    tokens/s <= max_t min( t, T(N_i), N_{i+1} / R_lb(N_i, t) ) <= t_i,

t_i found by bisection on t (the crossing of t and N_{i+1} / R_lb(N_i, t), kept on the upper
side), and v(D) <= max_i t_i. (For TP groups a group of t GPUs holding n layers counts n / t on
each member, whose memory and rate share are its own: the caps hold per member.)

over a geometric grid N_0 = the smallest batch < N_1 < ... < N_last = the most sequences the
memory of D holds beyond the weights (capacity.sequence_cap's rule). The bound of
partitioner.deploy.bounds takes R at the weights alone (N = 0) against the largest N; this one
couples them, which is what binds when the KV cache fills the GPUs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["GRID_RATIO", "joint_bound"]

GRID_RATIO = 1.5  # N_{i+1} / N_i: the bound's looseness from the grid is at most this factor
BISECT = 16  # bisection steps on t (kept on the upper side: at most 2^-16 of the fluid rate loose)


def _fill(cost: np.ndarray, hold: np.ndarray, layers: float) -> np.ndarray:
    """Per row of `hold` (grid × devices): Σ of the cheapest `layers` fractional layers, device i
    holding at most hold[., i] at cost[i]; inf where the devices cannot hold them all."""
    order = np.argsort(cost, kind="stable")
    c, h = cost[order], hold[:, order]
    cum = np.cumsum(h, axis=1)
    take = np.clip(layers - (cum - h), 0.0, h)
    total = (np.where(np.isfinite(take), take, 0.0) * c).sum(axis=1) if len(c) else np.zeros(len(h))
    return np.where(cum[:, -1] >= layers * (1 - 1e-12), total, math.inf) if len(c) else np.full(len(h), math.inf)


def _water(a: np.ndarray, hold: np.ndarray, layers: float, iters: int = BISECT) -> np.ndarray:
    """Per row of `hold`: the largest T with Σ_i min(hold[., i], a[i] / T) >= layers (bisection on
    [0, Σa / layers], kept on the side of a valid upper bound); 0 where Σ hold < layers."""
    hi = np.full(len(hold), float(a.sum()) / layers)
    lo = np.zeros(len(hold))
    for _ in range(iters):
        mid = (lo + hi) / 2
        with np.errstate(divide="ignore", invalid="ignore"):
            ok = np.minimum(hold, np.where(mid[:, None] > 0, a[None, :] / mid[:, None], np.inf)).sum(axis=1) >= layers
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
    return np.where(np.minimum(hold, np.inf).sum(axis=1) >= layers * (1 - 1e-12), hi, 0.0)


def joint_bound(rb: Any, devices: list[int]) -> float:
    """The bound of the module doc for `rb` (a bounds.ReplicaBound built with `seq_cap`) on
    `devices`; rb's plain bound where it has no KV model."""
    base, cluster = rb.base, rb.cluster
    if rb.seq_cap is None or base.weight_gb is None or base.kv_bytes_per_token is None:
        return float(rb(devices))
    weights, kv_seq = rb.seq_cap
    dec = np.array([k == "decoder" for k in base.kinds]) if any(k == "decoder" for k in base.kinds) \
        else np.ones(base.L, dtype=bool)
    kv_l = base.kv_bytes_per_token * base.context / 1e9
    w_dec, kv_dec = float(base.weight_gb[dec].min()), float(kv_l[dec].min())
    low = rb.lows[devices]
    rest = float(low[:, ~dec].min(axis=0).sum()) if (~dec).any() else 0.0
    per_dec = low[:, dec].min(axis=1)
    caps = base.capacity_gb[devices].astype(float)
    n_max = float(rb.sequences(float(caps.sum())))
    floor = max(1.0, float(rb.batch_floor))
    if n_max < floor:
        return 0.0
    room: dict[str, float] = {}
    for g in devices:
        node = cluster.devices[g].node
        room[node] = room.get(node, 0.0) + float(base.capacity_gb[g])
    rooms = sorted(room.values(), reverse=True)
    a_min = x_min = 0.0
    if len(rooms) > 1:
        nodes = np.array([cluster.devices[g].node for g in devices])
        inter = nodes[:, None] != nodes[None, :]
        ix = np.ix_(devices, devices)
        a_min = float(base.latency_s[ix][inter].min())
        x_min = float(rb.per_byte[ix][inter].min()) * rb.cut_min

    grid = [floor]
    while grid[-1] * GRID_RATIO < n_max:
        grid.append(grid[-1] * GRID_RATIO)
    grid.append(n_max)
    N = np.array(grid)
    m = w_dec + N * kv_dec
    with np.errstate(divide="ignore"):
        hold = np.where(m[:, None] > 0, caps[None, :] / m[:, None], math.inf)
    cum_rooms = np.cumsum(rooms)
    need = (weights + N * kv_seq) * (1 - 1e-9)
    s = np.minimum(np.searchsorted(cum_rooms, need) + 1, len(rooms)).astype(float)  # fewest nodes holding it
    hops = np.where(s > 1, s * a_min + (s - 1) * x_min, 0.0)
    a = rb.fr[devices] * rb.L_dec
    layers = float(dec.sum())
    lo, hi = np.zeros(len(N) - 1), _water(a, hold, layers)[:-1]
    for _ in range(BISECT):
        mid = (lo + hi) / 2
        with np.errstate(divide="ignore", invalid="ignore"):
            cap = np.minimum(hold[:-1], np.where(mid[:, None] > 0, a[None, :] / mid[:, None], math.inf))
            rt = rest + _fill(per_dec, cap, layers) + hops[:-1]
            ok = mid * rt <= N[1:]
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
    best = float(hi.max())
    return min(float(rb.fluid(devices)), best)
