"""Queueing formulas the request-mix closed form uses (pure): exact MVA of a closed cyclic network,
the M/G/1 wait for the token budget and the Erlang C wait for a request slot."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["mva_cycle", "budget_wait", "slot_wait"]


def mva_cycle(means: np.ndarray, delay: float, K: int) -> float:
    """Exact MVA of a closed cyclic network, exponential FCFS stations of `means` plus a delay:
    the cycle K/X(K) (Reiser & Lavenberg 1980)."""
    q = np.zeros_like(means)
    cycle = float(means.sum()) + delay
    for k in range(1, K + 1):
        resid = means * (1.0 + q)
        cycle = float(resid.sum()) + delay
        q = k * resid / cycle
    return cycle


def budget_wait(r: float, n_in: float, n_in2: float, C: float, n_d: float, K: int, P: float) -> float:
    """Mean wait for the token budget: prompts queue first come first served for the C - n_d
    prefill tokens a step has, steps every P/K (M/G/1, Pollaczek-Khinchine)."""
    cap = C - n_d
    u = r * n_in / cap if cap > 0 else math.inf
    if r <= 0 or n_in <= 0:
        return 0.0
    if u >= 1.0:
        return math.inf
    return r * n_in2 * P / (K * cap * cap * 2.0 * (1.0 - u))


def slot_wait(rate: float, hold: float, hold_scv: float, slots: int) -> float:
    """Mean wait for one of `slots` request slots (max_num_seqs), each held `hold` seconds:
    Erlang C with the Allen-Cunneen factor (1 + scv)/2 for the holding times' spread."""
    a = rate * hold
    if a >= slots:
        return math.inf
    erlang_b = 1.0
    for k in range(1, slots + 1):
        erlang_b = a * erlang_b / (k + a * erlang_b)
    erlang_c = slots * erlang_b / (slots - a * (1.0 - erlang_b))
    return erlang_c * hold / (slots - a) * (1.0 + hold_scv) / 2.0
