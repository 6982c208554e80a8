"""Lower bounds on the optimum, for reporting a gap (docs/algorithms.md §4).

    tau* >= max_l min_{g: m[l] <= C_g} c[g][l]                       (every layer runs somewhere)
    S    >= fewest devices whose memory can hold the model           (memory floor on stage count)
    tau* >= B_LP: min B s.t. sum_t x_tl = 1, sum_l c_t[l] x_tl <= m_t B,
                  sum_l m[l] x_tl <= m_t C_t, x >= 0                 (fluid LP over device types)
    W*   >= W_LP: min sum_{t,l} c_t[l] x_tl s.t. sum_t x_tl = 1, sum_l m[l] x_tl <= m_t C_t, x >= 0
                  (the least total compute sum tau any plan that fits can have)
    T*   >= min_{B >= tau_LB} [(M-1) B + W_LP(B)] + (S_min - 1) d_min, W_LP(B) the same LP with
           each type's load sum_l c_t[l] x_tl <= m_t B (one LP with B a variable), and
    T*   >= (M-1) tau_LB + max(tau_LB, W_LP) + (S_min - 1) d_min   (Thm 2 / Thm 3; sigma_max >=
           tau_max and sum sigma = sum tau + sum d, so the same bound holds for blocking); with the
           DP's exact tau* as tau_LB this is the bound of the free-order makespan search
The LP is solved with OR-Tools' GLOP (pywraplp), imported lazily.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from partitioner.errors import SolverError
from partitioner.problem import CostTables, Problem

__all__ = [
    "tau_floor", "min_stages", "fluid_bound", "min_work", "tau_bound", "min_delay", "makespan_bound", "lower_bound",
]


def _room(tables: CostTables) -> np.ndarray:
    """Capacity plus the tied-embedding saving (a single full stage counts it once), with the
    tolerance of `Metrics.fits`: memory no layer set beyond it can use on device g."""
    saving = tables.tied_gb if tables.L > 1 else 0.0
    return np.asarray(tables.capacity_gb, dtype=float) * (1 + 1e-9) + 1e-12 + saving


def _without_memory(tables: CostTables) -> CostTables:
    """The same tables with unlimited memory: bounds of it hold for every plan, fitting or not."""
    return dataclasses.replace(tables, capacity_gb=np.full(tables.G, np.inf))


def tau_floor(tables: CostTables) -> float:
    """max_l min over devices that can hold layer l of c[g][l] (inf if some layer fits nowhere)."""
    fits = tables.memory_gb[None, :] <= _room(tables)[:, None]
    cheapest = np.where(fits, tables.cost, np.inf).min(axis=0)
    return float(cheapest.max())


def min_stages(tables: CostTables) -> int:
    """Fewest stages any plan needs: 1 if the whole model fits one device (tied embeddings counted
    once), else the fewest largest capacities whose sum holds all layers (G + 1 when none does)."""
    need_one = float(tables.memory_gb.sum()) - (tables.tied_gb if tables.L > 1 else 0.0)
    caps = np.sort(np.asarray(tables.capacity_gb, dtype=float))[::-1]
    if caps[0] * (1 + 1e-9) + 1e-12 >= need_one:
        return 1
    need = float(tables.memory_gb.sum())
    total = np.cumsum(caps) * (1 + 1e-9) + 1e-12
    hit = np.flatnonzero(total >= need)
    return max(2, int(hit[0]) + 1) if hit.size else tables.G + 1


def _types(tables: CostTables) -> list[list[int]]:
    types: dict[bytes, list[int]] = {}
    for g in range(tables.G):
        key = tables.cost[g].tobytes() + np.float64(tables.capacity_gb[g]).tobytes()
        types.setdefault(key, []).append(g)
    return list(types.values())


def min_work(tables: CostTables, M: int = 1, tau_lb: float = 0.0) -> float:
    """W_LP (M = 1): the least sum of stage compute times of any plan that fits. For M > 1 the
    parametric form min (M-1) B + sum c x over the same x with each type's load <= m_t B and
    B >= tau_lb, a lower bound on (M-1) tau_max + sum tau of every plan (each device's load is
    at most tau_max). Via GLOP; sum_l min_g c[g][l] (+ (M-1) tau_lb) when the LP cannot be
    solved, inf when nothing can fit."""
    from ortools.linear_solver import pywraplp

    floor = float(tables.cost.min(axis=0).sum()) + (M - 1) * tau_lb
    solver = pywraplp.Solver.CreateSolver("GLOP")
    if solver is None:
        return floor
    room = _room(tables)
    B = solver.NumVar(float(tau_lb), solver.infinity(), "B")
    x: dict[tuple[int, int], object] = {}
    objective = [(M - 1) * B] if M > 1 else []
    for t, members in enumerate(_types(tables)):
        g = members[0]
        row, load = [], []
        for ly in range(tables.L):
            if tables.memory_gb[ly] <= room[g]:
                var = solver.NumVar(0.0, 1.0, f"x_{t}_{ly}")
                x[t, ly] = var
                row.append(float(tables.memory_gb[ly]) * var)
                load.append(float(tables.cost[g, ly]) * var)
                objective.append(float(tables.cost[g, ly]) * var)
        if row:
            solver.Add(sum(row) <= len(members) * float(room[g]))
            if M > 1:
                solver.Add(sum(load) <= len(members) * B)
    for ly in range(tables.L):
        vars_l = [v for (t, ll), v in x.items() if ll == ly]
        if not vars_l:
            return float("inf")
        solver.Add(sum(vars_l) == 1)  # type: ignore[arg-type]
    solver.Minimize(sum(objective))
    status = solver.Solve()
    if status == pywraplp.Solver.INFEASIBLE:
        return float("inf")
    if status != pywraplp.Solver.OPTIMAL:
        return floor
    return max(floor, float(solver.Objective().Value()) * (1 - 1e-9))  # LP tolerance


def fluid_bound(tables: CostTables) -> float:
    """The fluid LP bound on tau* over device types (same cost row and capacity), via GLOP:

        min B  s.t.  sum_l c[t][l] x[t][l] <= m_t B,  sum_l mem[l] x[t][l] <= m_t room_t,
                     sum_t x[t][l] = 1,  0 <= x <= 1  (x[t][l] only where layer l fits type t)

    Built through GLOP's coefficient API (one SetCoefficient per variable and row), linear in
    types x layers: the operator form (`sum(c * v)`) took minutes for TP-group tables of 64 GPUs."""
    from ortools.linear_solver import pywraplp

    solver = pywraplp.Solver.CreateSolver("GLOP")
    if solver is None:
        raise SolverError("OR-Tools GLOP is not available for the fluid lower bound")
    inf = solver.infinity()
    room = _room(tables)
    B = solver.NumVar(0.0, inf, "B")
    per_layer: list[list[Any]] = [[] for _ in range(tables.L)]
    for t, members in enumerate(_types(tables)):
        g, m = members[0], len(members)
        load = solver.Constraint(-inf, 0.0)  # sum c x - m B <= 0
        load.SetCoefficient(B, -float(m))
        mem = solver.Constraint(-inf, m * float(room[g]))
        for ly in np.flatnonzero(tables.memory_gb <= room[g]):
            v = solver.NumVar(0.0, 1.0, f"x_{t}_{ly}")
            load.SetCoefficient(v, float(tables.cost[g, ly]))
            mem.SetCoefficient(v, float(tables.memory_gb[ly]))
            per_layer[int(ly)].append(v)
    return least_B(solver, B, [(vars_l, 1.0) for vars_l in per_layer])


def least_B(solver: Any, B: Any, shares: Sequence[tuple[Sequence[Any], float]]) -> float:
    """Solve a fluid LP built on GLOP's coefficient API: each (variables, total) of `shares` sums
    to its total, and B is minimised. B* less the LP tolerance (never above the true bound); inf
    when it is infeasible or some share has no variable; SolverError when GLOP stops short of
    optimal."""
    from ortools.linear_solver import pywraplp

    for vs, total in shares:
        if not vs:
            return float("inf")
        one = solver.Constraint(float(total), float(total))
        for v in vs:
            one.SetCoefficient(v, 1.0)
    objective = solver.Objective()
    objective.SetCoefficient(B, 1.0)
    objective.SetMinimization()
    status = solver.Solve()
    if status == pywraplp.Solver.INFEASIBLE:
        return float("inf")
    if status != pywraplp.Solver.OPTIMAL:
        raise SolverError(f"GLOP could not solve the fluid LP (status {status})")
    return float(B.solution_value()) * (1 - 1e-9)  # LP tolerance: never above the true bound


def tau_bound(tables: CostTables, lp: bool = True) -> float:
    """The best tau* lower bound: max(tau_floor, fluid_bound) (the LP only when `lp`)."""
    floor = tau_floor(tables)
    return max(floor, fluid_bound(tables)) if lp else floor


def min_delay(tables: CostTables) -> float:
    """The cheapest cut any plan can make: min over g != h and cut positions of alpha + b / beta."""
    if tables.G < 2 or tables.L < 2:
        return 0.0
    off = ~np.eye(tables.G, dtype=bool)
    b = float(np.min(tables.cut_bytes[: tables.L - 1]))
    with np.errstate(divide="ignore"):
        d = tables.latency_s + np.where(np.isinf(tables.bandwidth_Bps), 0.0, b / tables.bandwidth_Bps)
    return float(d[off].min())


def makespan_bound(problem: Problem, tau_lb: float | None = None) -> float:
    """T* >= (M-1) tau_LB + max(tau_LB, W_LP) + (S_min - 1) d_min (Thm 2 / Thm 3)."""
    t = problem.tables
    lb = tau_bound(t) if tau_lb is None else tau_lb
    work = min_work(t)
    if not np.isfinite(work):
        work = float(t.cost.min(axis=0).sum())
    S = min(min_stages(t), t.G)
    links = (S - 1) * min_delay(t)
    flat = (problem.M - 1) * lb + max(lb, work) + links
    if problem.M == 1:
        return flat
    both = min_work(t, int(problem.M), lb)  # tau_max and the work traded off in one LP
    return max(flat, both + links) if np.isfinite(both) else flat


def lower_bound(problem: Problem, lp: bool = True, memory: bool = True) -> float:
    """A lower bound on the first component of `objective_key` (tau_max, the period, or T(M)).

    With `memory` it bounds the optimum over plans that fit; it falls back to the memory-free
    bound (always finite) when no plan fits. `memory=False` bounds every plan, including
    baselines that break a memory limit."""
    if memory:
        lb = tau_bound(problem.tables, lp=lp)
        if np.isfinite(lb) and min_stages(problem.tables) <= problem.G:
            return makespan_bound(problem, lb) if problem.objective == "makespan" else lb
    free = dataclasses.replace(problem, tables=_without_memory(problem.tables))
    lb = tau_bound(free.tables, lp=lp)
    return makespan_bound(free, lb) if problem.objective == "makespan" else lb
