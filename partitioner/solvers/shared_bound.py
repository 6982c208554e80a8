"""A fluid lower bound on tau* when rows share devices (tensor-parallel groups of one node).

The rows r of the tables are candidate groups; `members[r]` are the physical devices of row r, and
a plan uses pairwise disjoint rows. The relaxation that lets every row run at once (the fluid LP of
partitioner.solvers.bounds over the rows) counts a GPU once per group it is in, so on a node of 8
it counts that GPU's time about four times over (8 singles, 4 pairs, 2 quads, 1 eight). Here each
physical device's time is shared by its rows:

    min B  s.t.  sum_r x[r][j] = n_j                                  (every layer runs somewhere)
                 sum_{r ∋ d} sum_j c[r][j] x[r][j] <= B        for each device d (one row at a time)
                 sum_j mem[j] x[r][j] <= room_r                for each row r
                 sum_{r ∋ d} sum_j mem[j] x[r][j] / room_r <= 1  for each device d
                 0 <= x[r][j] <= n_j

with the layer columns j of identical cost and memory merged (n_j layers each: the decoder layers
of a dense model are one column). Every plan over disjoint rows is a point of it (x its 0/1
assignment, a device in at most one used row, whose load is at most tau_max and whose fill at most
1), so B* <= tau_max of every plan that fits: a valid bound on the first key of the balanced and
throughput objectives (and on the period, sigma_max >= tau_max). Solved with GLOP (OR-Tools'
linear solver, imported lazily) through its coefficient API; about rows x distinct columns variables.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from partitioner.errors import SolverError
from partitioner.problem import CostTables

__all__ = ["shared_fluid_bound"]


def _columns(tables: CostTables) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct (cost column, memory) of the layers: their costs [R, J], memory [J] and counts [J]."""
    keyed: dict[bytes, list[int]] = {}
    for ly in range(tables.L):
        key = tables.cost[:, ly].tobytes() + np.float64(tables.memory_gb[ly]).tobytes()
        keyed.setdefault(key, []).append(ly)
    firsts = [ls[0] for ls in keyed.values()]
    counts = np.array([len(ls) for ls in keyed.values()], dtype=float)
    return tables.cost[:, firsts], tables.memory_gb[firsts], counts


def shared_fluid_bound(tables: CostTables, members: Sequence[Sequence[int]]) -> float:
    """B* of the module doc (0.0 when GLOP is missing or fails: no claim; inf when some layer fits
    no row). `members[r]` are the devices of row r."""
    from ortools.linear_solver import pywraplp

    from partitioner.solvers.bounds import _room, least_B

    solver = pywraplp.Solver.CreateSolver("GLOP")
    if solver is None:
        return 0.0
    inf = solver.infinity()
    cost, mem, count = _columns(tables)
    room = _room(tables)
    devices = sorted({d for ms in members for d in ms})
    B = solver.NumVar(0.0, inf, "B")
    load = {d: solver.Constraint(-inf, 0.0) for d in devices}
    fill = {d: solver.Constraint(-inf, 1.0) for d in devices}
    for d in devices:
        load[d].SetCoefficient(B, -1.0)
    per_col: list[list[Any]] = [[] for _ in range(len(count))]
    for r, ms in enumerate(members):
        fits = np.flatnonzero(mem <= room[r])
        if fits.size == 0:
            continue
        row_mem = solver.Constraint(-inf, float(room[r]))
        for j in fits:
            v = solver.NumVar(0.0, float(count[j]), f"x_{r}_{j}")
            per_col[int(j)].append(v)
            row_mem.SetCoefficient(v, float(mem[j]))
            for d in ms:
                load[d].SetCoefficient(v, float(cost[r, j]))
                if np.isfinite(room[r]) and room[r] > 0:
                    fill[d].SetCoefficient(v, float(mem[j]) / float(room[r]))
    try:
        return least_B(solver, B, list(zip(per_col, count, strict=True)))
    except SolverError:  # GLOP short of optimal: no claim
        return 0.0
