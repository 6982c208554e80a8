"""Least-squares fit of the two-regime roofline t = max(a·f, b·m) + c·n to measured times.

Pure numpy (scipy is not a dependency). Per row i: f_i FLOPs, m_i bytes, n_i layers, y_i the
measured seconds, w_i its weight (samples). Parameters p = (a, b, c) with a = 1/(eta_c·F),
b = 1/(eta_m·BW), c = t_fixed (docs/costmodel.md: t = max(FLOPs/(eta_c F), bytes/(eta_m BW)) + t_fixed),
bounded by eta <= 1 (a >= 1/F, b >= 1/BW) and c >= 0. Objective: the weighted relative squared
error J(p) = Σ w_i ((t_i(p) - y_i)/y_i)².

Method (deterministic). Row i is compute-bound iff f_i/m_i > b/a, so every regime assignment a
parameter vector can induce is a threshold split of the rows sorted by arithmetic intensity f/m:
enumerate the (at most N+1) splits. Within a split the model is linear in p; solve the weighted
least squares exactly under the bounds by enumerating active sets (each identified parameter free or
at its bound: at most 8 solves), and score every feasible candidate by the TRUE max-objective J.
The catalogue defaults are a candidate too, so the fit is never worse than them. A few
alternating passes then re-split the rows by the regimes the best p induces and re-solve.
Candidates whose J equals the least within numerical noise explain the data equally well (one
workload point fits either regime): those whose p induces their own split are preferred, then
the one nearest the defaults, then the one claiming fewer identified factors.

Identifiability (rank of the split's design matrix [f·1_compute, m·1_memory, n]): a has no
column without a compute-bound row, b none without a memory-bound row; the a and b columns have
disjoint supports, so only c can be collinear with them (n_i ∝ f_i on compute rows and n_i ∝ m_i
on memory rows). An unidentified parameter keeps its default, moved (`clamped`) only as far as
the bounds and the regimes need: an unidentified a (b) to the least eta that keeps the rows on
their side; a collinear c off its default when its partner sits at eta = 1. When c is not
identified the fitted etas are conditional on its value.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

__all__ = ["RowData", "Solution", "STATUSES", "predict", "objective", "solve"]

#: fitted: free and optimal; bound: held at its bound (eta = 1 or overhead 0); unidentified: no
#: information in the data, the default kept; clamped: not identified, moved off the default only
#: as far as the regimes or the bounds require; kept: no candidate beat the defaults.
STATUSES = ("fitted", "bound", "unidentified", "clamped", "kept")
_RANK_RTOL = 1e-7  # singular-value ratio below which the column-normalised design is deficient
_PASSES = 5
_KINK = 1e-9  # relative slack within which a row sits on the kink max(a·f, b·m)


@dataclass(frozen=True)
class RowData:
    """Per-row arrays (length N): FLOPs f, bytes m, layers n, measured seconds y, weights w."""

    f: np.ndarray
    m: np.ndarray
    n: np.ndarray
    y: np.ndarray
    w: np.ndarray


@dataclass(frozen=True)
class Solution:
    """The best parameters p = (a, b, c), the status of each (STATUSES) and J(p)."""

    p: tuple[float, float, float]
    status: tuple[str, str, str]
    objective: float


def predict(p: np.ndarray | tuple[float, ...], d: RowData) -> np.ndarray:
    """t_i = max(a·f_i, b·m_i) + c·n_i (docs/costmodel.md roofline with t_fixed per layer)."""
    a, b, c = p
    return np.maximum(a * d.f, b * d.m) + c * d.n


def objective(p: np.ndarray | tuple[float, ...], d: RowData) -> float:
    """J(p) = Σ w_i ((t_i - y_i) / y_i)²."""
    r = (predict(p, d) - d.y) / d.y
    return float(np.sum(d.w * r * r))


def _design(d: RowData, compute: np.ndarray) -> np.ndarray:
    """[f·1_compute, m·1_memory, n]: the split's linear model t = X p."""
    return np.column_stack([np.where(compute, d.f, 0.0), np.where(compute, 0.0, d.m), d.n])


def _full_rank(Z: np.ndarray) -> bool:
    if Z.shape[1] > Z.shape[0]:
        return False
    Zn = Z / np.linalg.norm(Z, axis=0)
    sv = np.linalg.svd(Zn, compute_uv=False)
    return bool(sv.min() > _RANK_RTOL * sv.max())


def _free_columns(Z: np.ndarray, free: list[int]) -> list[int]:
    """The free columns the data determine: c (2) is dropped if it makes the rank deficient."""
    if free and not _full_rank(Z[:, free]):
        return [j for j in free if j != 2]
    return free


def _lstsq(A: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Column-scaled least squares min ||A x - t||."""
    norms = np.linalg.norm(A, axis=0)
    x = np.linalg.lstsq(A / norms, t, rcond=None)[0]
    return np.asarray(x / norms)


def _clamp_unidentified(p: np.ndarray, status: list[str], d: RowData, compute: np.ndarray,
                        lower: np.ndarray) -> None:
    """Keep an unidentified a (b) at its default unless that flips a memory (compute) row."""
    a, b, _ = p
    if status[0] == "unidentified" and np.any(d.f > 0):
        cap = float(np.min(b * d.m[d.f > 0] / d.f[d.f > 0]))  # a·f_i <= b·m_i for every row
        if a > cap:
            p[0], status[0] = max(lower[0], cap), "clamped"
    if status[1] == "unidentified" and np.any(compute):
        cap = float(np.min(a * d.f[compute] / d.m[compute]))  # b·m_i <= a·f_i on compute rows
        if b > cap:
            p[1], status[1] = max(lower[1], cap), "clamped"


def _active_sets(d: RowData, X: np.ndarray, Z: np.ndarray, cols: list[int], lower: np.ndarray, *,
                 default: np.ndarray, compute: np.ndarray) -> list[tuple[np.ndarray, list[str]]]:
    """One bounded least-squares solution per feasible active set over `cols` (others fixed)."""
    out = []
    for k in range(len(cols) + 1):
        for held in itertools.combinations(cols, k):
            free = _free_columns(Z, [j for j in cols if j not in held])
            p = default.copy()
            p[list(held)] = lower[list(held)]
            fixed = [j for j in range(3) if j not in free]
            if free:
                t = (1.0 - X[:, fixed] @ p[fixed] / d.y) * np.sqrt(d.w)
                p[free] = _lstsq(Z[:, free], t)
                if np.any(p[free] < lower[free]):
                    continue
            status = ["fitted" if j in free else "bound" if j in held else "unidentified" for j in range(3)]
            _clamp_unidentified(p, status, d, compute, lower)
            out.append((p, status))
    return out


def _candidates(d: RowData, compute: np.ndarray, lower: np.ndarray,
                default: np.ndarray) -> list[tuple[np.ndarray, list[str]]]:
    """The split's bounded least-squares solutions. A c that the split's design does not
    separate stays at its default, unless moving it (to its bound, or with a partner at eta = 1)
    fits strictly better; it is then `clamped`."""
    X = _design(d, compute)
    Z = X * (np.sqrt(d.w) / d.y)[:, None]
    cols = [j for j in range(3) if np.any(X[:, j] != 0)]
    if 2 in _free_columns(Z, cols):
        return _active_sets(d, X, Z, cols, lower, default=default, compute=compute)
    kept = _active_sets(d, X, Z, [j for j in cols if j != 2], lower, default=default, compute=compute)
    moved = [(p, [*s[:2], "clamped"]) for p, s in _active_sets(d, X, Z, cols, lower, default=default, compute=compute)
             if s[2] != "unidentified"]
    J_kept = min((objective(p, d) for p, _ in kept), default=np.inf)
    tol = 1e-12 * float(d.w.sum()) + 1e-9 * J_kept
    return kept + [c for c in moved if objective(c[0], d) < J_kept - tol]


@dataclass(frozen=True)
class _Candidate:
    p: np.ndarray
    status: list[str]
    J: float
    compute: np.ndarray  # the split it was solved on

    def consistent(self, d: RowData) -> bool:
        """Its split is the regimes its p induces (a row on the kink may sit on either side)."""
        a, b, _ = self.p
        tc, tm = a * d.f, b * d.m
        ok = np.where(self.compute, tc >= tm * (1 - _KINK), tc <= tm * (1 + _KINK))
        return bool(np.all(ok))


def _scored(d: RowData, compute: np.ndarray, lower: np.ndarray, default: np.ndarray) -> list[_Candidate]:
    return [_Candidate(p, status, objective(p, d), compute) for p, status in _candidates(d, compute, lower, default)]


def _distance(c: _Candidate, default: np.ndarray, d: RowData) -> tuple[float, int]:
    """How far p moves from the defaults (squared log ratios of a and b, the change of c relative
    to the median time per layer), then fewer factors claimed as identified."""
    p, per_layer = c.p, float(np.median(d.y / d.n))
    dist = (np.log(p[0] / default[0]) ** 2 + np.log(p[1] / default[1]) ** 2
            + ((p[2] - default[2]) / per_layer) ** 2)
    return round(float(dist), 9), sum(s in ("fitted", "bound") for s in c.status)


def _choose(pool: list[_Candidate], kept: _Candidate, d: RowData) -> _Candidate:
    """The least J. Candidates equal to it within numerical noise explain the data equally well
    (e.g. one workload point fits either regime): prefer those consistent with their own split,
    then the one nearest the defaults, then the one claiming fewer identified factors. The
    defaults themselves win only if strictly better."""
    J_min = min(c.J for c in pool)
    tol = 1e-12 * float(d.w.sum()) + 1e-9 * J_min
    near = [c for c in pool if J_min + tol >= c.J]
    near = [c for c in near if c.consistent(d)] or near
    best = min(near, key=lambda c: _distance(c, kept.p, d))
    return kept if kept.J < best.J else best


def _splits(d: RowData) -> list[np.ndarray]:
    """Every threshold split by intensity f/m (ties never separated; f = 0 rows are memory-bound)."""
    r = d.f / d.m
    return [(r >= threshold) & (d.f > 0) for threshold in [*np.unique(r[d.f > 0]), np.inf]]


def solve(d: RowData, lower: tuple[float, float, float], default: tuple[float, float, float]) -> Solution:
    """Minimise J(p) subject to p >= lower (module docstring); `default` where unidentified."""
    lo, dflt = np.asarray(lower, float), np.maximum(np.asarray(default, float), lower)
    kept = _Candidate(dflt, ["kept"] * 3, objective(dflt, d), np.zeros(len(d.y), dtype=bool))
    pool = [c for compute in _splits(d) for c in _scored(d, compute, lo, dflt)]
    best = _choose(pool, kept, d)
    for _ in range(_PASSES):
        a, b, _c = best.p
        pool += _scored(d, (a * d.f > b * d.m) & (d.f > 0), lo, dflt)
        again = _choose(pool, kept, d)
        if again is best:
            break
        best = again
    p, st = best.p, best.status
    return Solution((float(p[0]), float(p[1]), float(p[2])), (st[0], st[1], st[2]), best.J)
