"""A step's round trip among K engine steps in flight, with random prompt tokens per step (pure).

Chunked prefill makes steps uneven: a step carries the running requests' n_d decode tokens and
X prompt tokens, X compound Poisson (r prompts a step, sizes from the input histogram) and at
most the budget left, cap = C - n_d (vLLM 0.33.0 `Scheduler.schedule`, vllm/v1/core/sched/
scheduler.py: prompt chunks fill what the decodes leave of max_num_batched_tokens). A prompt
step can be many decode steps long (Llama-3-70B-FP8 on L4: 1024 prompt tokens add ~9x a decode
step on every stage), so the K steps in flight do not share the pipeline evenly: stages serve
first come first served and a step cannot overtake, so a heavy step holds the steps behind it
on every stage (the max-plus cycle of partitioner.analysis.closed_loop, taken per step).

A step of X tokens comes back after the longest of (symbols per stage s: τ0_s = a_s + b_s·n_d
its decode time, p_s its time per prompt token; ρ = Σ_s p_s + Σ_s q_s):

- its bottleneck path max_s (K·τ0_s + p_s·(X + O')), O' = (K - 1)·E[X] - E[max of K - 1 X's]:
  every stage serves the K steps, the others' prompts but their largest (covered next);
- its own route g(X) = Σ_s τ0_s + Σ_s (e_s + q_s·n_d) + d_ret + ρ·X;
- W = max_{j=1..K-1} (g(X_j) - j·Δ): the remaining route of the j-th step launched before it,
  launches one bottleneck decode step Δ = max_s τ0_s apart (behind a heavy step the others come
  back bunched, so they are relaunched that close).

    P = max( E[max(bottleneck path, g(X), W)],  max_s (K·τ0_s + p_s·K·E[X]) )

the second term the work every stage must do per K steps. X_1..X_K are independent; E over X
is exact on a token grid (compound Poisson by FFT), W's distribution is the product of the K - 1
shifted CDFs. Without prompts P is the closed-loop decode period max(K·τ_max, Στ + Σd + d_ret).
`tagged_trip` is the same for a step known to carry a prompt's chunk (Y = min(chunk + X', cap)),
`launch_residual` the mean wait of a random arrival for the next return. These are
approximations, checked against the event simulator (partitioner.simulate.chunked;
tests/test_chunked_agreement.py, benchmarks/mix_agreement.py).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["StepTokens", "step_tokens", "circulation", "tagged_trip", "ahead", "others", "launch_residual"]

GRID = 512  # bins of the token grid from 0 to cap


class StepTokens:
    """The distribution of X, one step's prompt tokens: pmf over `x` (tokens, a grid up to cap)."""

    def __init__(self, x: np.ndarray, pmf: np.ndarray) -> None:
        self.x, self.pmf = x, pmf

    @property
    def mean(self) -> float:
        return float(self.x @ self.pmf)


def step_tokens(r: float, sizes: np.ndarray, weights: np.ndarray, cap: float) -> StepTokens:
    """X = min(Σ_{j<=J} I_j, cap), J ~ Poisson(r), I_j from (sizes, weights): compound Poisson by
    FFT on a grid of cap/GRID tokens (mass at or above cap put on cap)."""
    cap = max(float(cap), 1.0)
    w = max(cap / GRID, 1.0)
    n_cap = math.ceil(cap / w)
    x = np.minimum(np.arange(n_cap + 1) * w, cap)
    mu = r * float(sizes @ weights)
    sd = math.sqrt(r * float((sizes * sizes) @ weights))
    if r <= 0 or mu <= 0:
        pmf = np.zeros(n_cap + 1)
        pmf[0] = 1.0
        return StepTokens(x, pmf)
    if mu - 8.0 * sd >= cap:  # the budget is always full
        pmf = np.zeros(n_cap + 1)
        pmf[-1] = 1.0
        return StepTokens(x, pmf)
    top = (min(mu + 12.0 * sd, mu + cap) + float(sizes.max())) / w
    L = 1 << max(4, math.ceil(math.log2(top + n_cap + 2)))
    one = np.zeros(L)
    np.add.at(one, np.minimum(np.rint(sizes / w).astype(int), L - 1), weights)
    dist = np.fft.irfft(np.exp(r * (np.fft.rfft(one) - 1.0)), L)
    dist = np.clip(dist, 0.0, None)
    pmf = dist[: n_cap + 1].copy()
    pmf[-1] += max(0.0, 1.0 - float(dist[: n_cap + 1].sum()))  # at or above cap: a full step
    return StepTokens(x, pmf / pmf.sum())


def _stage_term(K: int, tau0: np.ndarray, p: np.ndarray, T: np.ndarray) -> np.ndarray:
    return np.max(K * tau0[None, :] + p[None, :] * T.reshape(-1, 1), axis=1).reshape(T.shape)


class _Ahead:
    """W = max_{j=1..K-1} (g(X_j) - j·Δ): the longest remaining trip of the K - 1 steps launched
    before a step (the j-th, j launches of Δ = P/K earlier, each X's round trip g), as a tail
    integral tail(c) = E[max(W, c)] - c over a grid of z."""

    def __init__(self, K: int, trip0: float, rho: float, X: StepTokens, delta: float) -> None:
        cdf = np.clip(np.cumsum(X.pmf), 0.0, 1.0)
        top = trip0 + rho * float(X.x[-1])
        self.z = np.linspace(trip0 - (K - 1) * delta, top, 2049)
        G = np.ones_like(self.z)
        for j in range(1, K):
            tokens = (self.z + j * delta - trip0) / rho if rho > 0 else np.where(self.z + j * delta >= trip0, np.inf, -1.0)
            G = G * np.where(tokens < 0, 0.0, np.interp(tokens, X.x, cdf, left=0.0, right=1.0))
        dz = np.diff(self.z)
        above = (1.0 - G[1:] + 1.0 - G[:-1]) / 2.0 * dz
        self.tail_at = np.concatenate((np.cumsum(above[::-1])[::-1], [0.0]))  # ∫_z^top (1 - G)

    def expect_max(self, c: np.ndarray) -> np.ndarray:
        """E[max(W, c)] for each c."""
        low = np.minimum(c, self.z[0])  # below the grid W > c surely: E[max] = z0 + tail(z0)
        return np.maximum(c, self.z[0]) + np.interp(np.maximum(c, self.z[0]), self.z, self.tail_at) + 0.0 * low


def others(K: int, X: StepTokens) -> float:
    """The other K - 1 steps' prompt tokens on a step's bottleneck path, less their largest (whose
    round trip W bounds the step anyway): (K - 1)·E[X] - E[max of K - 1 X's]."""
    if K <= 1:
        return 0.0
    cdf = np.clip(np.cumsum(X.pmf), 0.0, 1.0)
    pm = np.diff(np.concatenate(([0.0], cdf ** (K - 1))))
    return max(0.0, (K - 1) * X.mean - float(pm @ X.x))


def circulation(K: int, tau0: np.ndarray, p: np.ndarray, trip0: float, rho: float, X: StepTokens) -> float:
    """P: a step's mean round trip, E[max(own path, W)] (module doc)."""
    own = np.maximum(_stage_term(K, tau0, p, X.x + others(K, X)), trip0 + rho * X.x)
    work = float(_stage_term(K, tau0, p, np.array([K * X.mean]))[0])  # every stage serves the K steps
    if K == 1:
        return max(work, float(X.pmf @ own))
    return max(work, float(X.pmf @ ahead(K, trip0, rho, X, tau0).expect_max(own)))


def ahead(K: int, trip0: float, rho: float, X: StepTokens, tau0: np.ndarray) -> _Ahead:
    """W for steps launched one bottleneck decode step apart (module doc)."""
    return _Ahead(K, trip0, rho, X, float(tau0.max()))


def tagged_trip(K: int, tau0: np.ndarray, p: np.ndarray, trip0: float, rho: float, X: StepTokens,
                chunks: np.ndarray, cap: float, blocking: _Ahead | None = None) -> np.ndarray:
    """The round trip of the step carrying a prompt's last chunk, for each chunk size in `chunks`
    (module doc): E over the others' prompts X' in its step (Y = min(chunk + X', cap), on X's
    grid: a correlation with X's pmf) and over the steps ahead (W)."""
    Y = X.x
    c = np.maximum(_stage_term(K, tau0, p, Y + others(K, X)), trip0 + rho * Y)
    if K > 1:
        c = (blocking or ahead(K, trip0, rho, X, tau0)).expect_max(c)
    n = len(Y)
    padded = np.concatenate((c, np.full(n - 1, c[-1])))  # beyond cap the step is full
    at = np.convolve(padded, X.pmf[::-1], mode="valid")  # at[i] = Σ_j pmf[j]·c[min(i + j, n - 1)]
    step = float(Y[1] - Y[0]) if n > 1 else 1.0
    return np.interp(np.asarray(chunks, dtype=float) / step, np.arange(n), at)


def launch_residual(K: int, tau0: np.ndarray, p: np.ndarray, trip0: float, rho: float, X: StepTokens) -> float:
    """Mean wait of a Poisson arrival for the next step launch (a return): E[G²]/(2·E[G]) over the
    gaps G between returns. A circulation of heaviest step m takes c(m) = max(stage term, g(m));
    behind a heavy step the others return bunched, one bottleneck decode step Δ apart, so its K
    gaps are c - (K - 1)·Δ and K - 1 of Δ; else K of c/K."""
    cdf = np.clip(np.cumsum(X.pmf), 0.0, 1.0)
    pm = np.diff(np.concatenate(([0.0], cdf ** K)))
    below = np.cumsum(X.x * X.pmf) / np.maximum(cdf, 1e-300)  # E[X | X <= m]
    c = np.maximum(_stage_term(K, tau0, p, X.x + (K - 1) * below), trip0 + rho * X.x)
    delta = float(tau0.max())
    squares = np.where(c > K * delta, (c - (K - 1) * delta) ** 2 + (K - 1) * delta**2, c * c / K)
    return float(pm @ squares) / (2.0 * float(pm @ c))
