"""The LP side of column generation: the restricted master LP, its duals, and the tail's reduced cost.

The restricted master (GLOP) is the LP relaxation of the deployment problem over the columns
added so far (partitioner.deploy.columns' module doc),

    max Σ_i u_i·y_i   s.t.  Σ_i y_i·x_i <= N,  y_i >= 0   (and Σ_i y_i = r for a fixed count);

its duals π >= 0 (μ for the count) price every column, x's reduced cost being u(x) − π·x − μ.
`_tail` bounds the reduced cost of a replica of more than c nodes, which is not a column, from
the tail bound (partitioner.deploy.bounds.ReplicaBound.tail) and the per-node fluid rates, by LP
duality on the min of the two.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np


class _Master:
    """The restricted LP: max Σ u_i y_i, Σ y_i x_i <= N, (Σ y_i = r)."""

    def __init__(self, N: tuple[int, ...], replicas: int | None) -> None:
        from ortools.linear_solver import pywraplp

        self.lp = pywraplp.Solver.CreateSolver("GLOP")
        inf = self.lp.infinity()
        self.rows = [self.lp.Constraint(-inf, float(n)) for n in N]
        self.count = None if replicas is None else self.lp.Constraint(float(replicas), float(replicas))
        self.obj = self.lp.Objective()
        self.obj.SetMaximization()
        self.vars: dict[int, Any] = {}

    def add(self, i: int, x: np.ndarray, u: float) -> None:
        var = self.lp.NumVar(0.0, self.lp.infinity(), "")
        for k, xk in enumerate(x):
            if xk:
                self.rows[k].SetCoefficient(var, float(xk))
        if self.count is not None:
            self.count.SetCoefficient(var, 1.0)
        self.obj.SetCoefficient(var, float(u))
        self.vars[i] = var

    def set_value(self, i: int, u: float) -> None:
        self.obj.SetCoefficient(self.vars[i], float(u))

    def solve(self) -> tuple[np.ndarray, float, dict[int, float]] | None:
        if self.lp.Solve() != 0:  # OPTIMAL
            return None
        pi = np.maximum(0.0, np.array([c.dual_value() for c in self.rows]))
        mu = 0.0 if self.count is None else float(self.count.dual_value())
        return pi, mu, {i: v.solution_value() for i, v in self.vars.items()}


def _best_linear(N: np.ndarray, m: int, coef: np.ndarray) -> float:
    """max coef·x over integer x <= N with Σx = m (greedy: the m largest coefficients)."""
    total, need = 0.0, m
    for k in np.argsort(-coef):
        take = min(int(N[k]), need)
        total += float(coef[k]) * take
        need -= take
        if need == 0:
            return total
    return -math.inf


def _tail(N: np.ndarray, c: int, pi: np.ndarray, mu: float, rates: np.ndarray, cap: Callable[[int], float]) -> float:
    """max over x <= N with Σx = m > c of min(rates·x, cap(m)) − π·x − μ, the reduced cost of a
    replica that uses m > c nodes (cap(m): bounds.ReplicaBound.tail). For each m, by LP duality on
    the min, it is at most λ·max(rates·x − π·x / λ ...) : max_x (λ·rates − π)·x + (1 − λ)·cap(m) for
    every λ in [0, 1]; the least over a grid of λ is taken (each one is a valid bound)."""
    worst = -math.inf
    for m in range(c + 1, int(N.sum()) + 1):
        cm = cap(m - 1)
        best = min(_best_linear(N, m, lam * rates - pi) + (1.0 - lam) * cm for lam in np.linspace(0.0, 1.0, 21))
        worst = max(worst, best - mu)
    return worst
