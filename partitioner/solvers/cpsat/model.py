"""The CP-SAT model of the planning problem, in labelled steps (style rule 10).

Layer-based formulation (docs/algorithms.md §5), indexed by device rather than by stage slot:

    w[l][g]      layer l runs on device g            (exactly one g per layer)
    start[l][g]  g's stage begins at l  = w[l][g] and not w[l-1][g]
    end[l][g]    g's stage ends after l and another stage follows = w[l][g] and not w[l+1][g]
    y[l][g][h]   the pipeline is cut after l, from g to h (h follows g)

Each device holds at most one contiguous interval (sum_l start[l][g] <= 1), so its stage
time is linear: tau_g = sum_l c[g][l] w[l][g], d_g = sum_{l,h} d(g,h,l) y[l][g][h] and
sigma_g = tau_g + d_g (d_g = 0 for the last stage; Thm 3). The objectives are
tau_max >= tau_g, sigma_max >= sigma_g and T(M) = (M-1) P + sum tau + sum d with P = tau_max
(Thm 2, async) or sigma_max (Thm 3, blocking). Memory is exact: every stage [i, j) whose
`problem.stage_memory` does not fit C_g is forbidden by a clause (this keeps the tied-embedding
rule of the one-stage plan), plus a rounded-down linear relaxation for the LP.
Order "fixed": y only from g to h > g. Free order: interchangeable devices (same costs,
capacity and links) are used as a prefix of their class, in pipeline order (symmetry break).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
from ortools.sat.python import cp_model

from partitioner.problem import RTOL, Problem, stage_memory
from partitioner.solvers.cpsat.ticks import Ticks

__all__ = ["Vars", "build", "phases", "assignment", "canonical", "device_classes"]

Lit = cp_model.IntVar
Expr = cp_model.LinearExpr


@dataclass
class Vars:
    """Decision variables and the objective expressions (ticks) of one model."""

    w: list[list[Lit]]
    start: list[list[Lit]]
    end: list[list[Lit]]
    y: dict[tuple[int, int, int], Lit]
    tau_max: Lit
    sigma_max: Lit
    goals: dict[str, Lit] = field(default_factory=dict)
    out: dict[int, list[tuple[int, int, int]]] = field(default_factory=dict)


def build(problem: Problem, ticks: Ticks) -> tuple[cp_model.CpModel, Vars]:
    """The full model: variables, constraints and the objective expressions."""
    model = cp_model.CpModel()
    v = _variables(model, problem, ticks)
    _constraints(model, problem, ticks, v)
    v.goals = _objective(model, problem, ticks, v)
    return model, v


def phases(problem: Problem) -> tuple[str, ...]:
    """The lexicographic components, in order, as names of `Vars.goals` (objective_key)."""
    period = "tau" if problem.regime == "async" else "sigma"
    return {"balanced": ("tau", "sigma", "T"), "throughput": (period, "T"), "makespan": ("T",)}[
        problem.objective
    ]


# [START variables]
def _variables(model: cp_model.CpModel, problem: Problem, ticks: Ticks) -> Vars:
    G, L = problem.G, problem.L
    w = [[model.new_bool_var(f"w[{ly}][{g}]") for g in range(G)] for ly in range(L)]
    start = [w[0]] + [[model.new_bool_var(f"start[{ly}][{g}]") for g in range(G)] for ly in range(1, L)]
    end = [[model.new_bool_var(f"end[{ly}][{g}]") for g in range(G)] for ly in range(L - 1)]
    y = {
        (ly, g, h): model.new_bool_var(f"y[{ly}][{g}][{h}]")
        for ly in range(L - 1)
        for g in range(G)
        for h in range(G)
        if h != g and (problem.order == "free" or h > g)
    }
    top = int(ticks.c.sum(axis=1).max()) + (int(ticks.d.max()) if ticks.d.size else 0)
    return Vars(w, start, end, y, model.new_int_var(0, top, "tau_max"), model.new_int_var(0, top, "sigma_max"))


# [START constraints]
def _constraints(model: cp_model.CpModel, problem: Problem, ticks: Ticks, v: Vars) -> None:
    _intervals(model, problem, v)
    _links(model, problem, v)
    _memory(model, problem, v)
    if problem.order == "free":
        _symmetry(model, problem, v)
    if problem.max_stages is not None:  # every stage starts exactly once: the starts count the stages
        model.add(sum(v.start[ly][g] for ly in range(problem.L) for g in range(problem.G)) <= problem.max_stages)
    for g in range(problem.G):
        model.add(_tau(ticks, v, g) <= v.tau_max)
        model.add(_tau(ticks, v, g) + _delay(ticks, v, g) <= v.sigma_max)


def _intervals(model: cp_model.CpModel, problem: Problem, v: Vars) -> None:
    """One device per layer; start/end are exact; each device holds one contiguous interval."""
    G, L = problem.G, problem.L
    for ly in range(L):
        model.add_exactly_one(v.w[ly])
    for g in range(G):
        for ly in range(1, L):
            s, now, before = v.start[ly][g], v.w[ly][g], v.w[ly - 1][g]
            model.add_bool_or([s, now.negated(), before])
            model.add_implication(s, now)
            model.add_implication(s, before.negated())
        for ly in range(L - 1):
            e, now, after = v.end[ly][g], v.w[ly][g], v.w[ly + 1][g]
            model.add_bool_or([e, now.negated(), after])
            model.add_implication(e, now)
            model.add_implication(e, after.negated())
        model.add_at_most_one(v.start[ly][g] for ly in range(L))
    if problem.order == "fixed":  # redundant: the device index never decreases along the layers
        for ly in range(L - 1):
            model.add(sum(g * v.w[ly][g] for g in range(G)) <= sum(g * v.w[ly + 1][g] for g in range(G)))


def _links(model: cp_model.CpModel, problem: Problem, v: Vars) -> None:
    """y[l][g][h] = end[l][g] and start[l+1][h], as two flow equalities (one cut, one pair)."""
    G = problem.G
    out: dict[tuple[int, int], list[Lit]] = {}
    into: dict[tuple[int, int], list[Lit]] = {}
    for (ly, g, h), y in v.y.items():
        out.setdefault((ly, g), []).append(y)
        into.setdefault((ly, h), []).append(y)
    for ly in range(problem.L - 1):
        for g in range(G):
            model.add(cp_model.LinearExpr.sum(out.get((ly, g), [])) == v.end[ly][g])
            model.add(cp_model.LinearExpr.sum(into.get((ly, g), [])) == v.start[ly + 1][g])


def _memory(model: cp_model.CpModel, problem: Problem, v: Vars) -> None:
    """Forbid every stage [i, j) that breaks C_g (Metrics.fits semantics), plus an LP relaxation."""
    t, L = problem.tables, problem.L
    mem = {(i, j): stage_memory(t, i, j) for i in range(L) for j in range(i + 1, L + 1)}
    for g in range(problem.G):
        cap = float(t.capacity_gb[g]) * (1 + RTOL) + 1e-12
        for i in range(L):
            fits = {j: mem[i, j] <= cap for j in range(i + 1, L + 1)}
            _forbid_ends(model, v, g, i, fits)
        _memory_relaxation(model, problem, v, g, cap)


def _forbid_ends(model: cp_model.CpModel, v: Vars, g: int, i: int, fits: dict[int, bool]) -> None:
    """Clauses so that a stage of g starting at i can only end at a j with fits[j]."""
    L = max(fits)
    j0 = L + 1
    while j0 - 1 > i and not fits[j0 - 1]:
        j0 -= 1  # every end in [j0, L] is infeasible
    if j0 == i + 1:
        model.add(v.start[i][g] == 0)
        return
    if j0 <= L:
        model.add_implication(v.start[i][g], v.w[j0 - 1][g].negated())
    for j in range(i + 1, min(j0, L)):
        if not fits[j]:  # may not stop at j, but a longer stage fits (tied embeddings)
            model.add_bool_or([v.start[i][g].negated(), v.w[j - 1][g].negated(), v.w[j][g]])


def _memory_relaxation(model: cp_model.CpModel, problem: Problem, v: Vars, g: int, cap: float) -> None:
    """sum floor(m K) w[.][g] <= ceil((C + tied) K) + L: never cuts a feasible plan. K keeps the
    coefficients below 2^30: OR-Tools 9.15's presolve mis-handled knapsacks with coefficients
    of 2^31 and more (docs/cpsat-presolve.md)."""
    m = np.asarray(problem.tables.memory_gb, dtype=float)
    if not (np.all(np.isfinite(m)) and np.all(m >= 0) and np.isfinite(cap)) or m.sum() <= cap:
        return
    K = 2.0 ** np.floor(np.log2(2.0**30 / max(float(m.sum()), abs(cap), 1e-300)))
    rhs = int(np.ceil((cap + problem.tables.tied_gb) * K)) + problem.L
    model.add(sum(int(np.floor(m[ly] * K)) * v.w[ly][g] for ly in range(problem.L)) <= rhs)


def device_classes(problem: Problem) -> list[list[int]]:
    """Classes of interchangeable devices: swapping any two leaves every metric unchanged."""
    t = problem.tables
    lat = np.array(t.latency_s, dtype=float)
    bw = np.array(t.bandwidth_Bps, dtype=float)
    np.fill_diagonal(lat, 0.0)
    np.fill_diagonal(bw, 0.0)

    def swappable(g: int, h: int) -> bool:
        p = np.arange(problem.G)
        p[[g, h]] = [h, g]
        return (
            bool(np.array_equal(t.cost[g], t.cost[h]))
            and float(t.capacity_gb[g]) == float(t.capacity_gb[h])
            and bool(np.array_equal(lat[np.ix_(p, p)], lat) and np.array_equal(bw[np.ix_(p, p)], bw))
        )

    classes: list[list[int]] = []
    for g in range(problem.G):
        home = next((c for c in classes if all(swappable(g, h) for h in c)), None)
        if home is None:
            classes.append([g])
        else:
            home.append(g)
    return classes


def _symmetry(model: cp_model.CpModel, problem: Problem, v: Vars) -> None:
    """Within a class, used devices are its lowest indices, appearing in pipeline order."""
    L = problem.L
    for cls in device_classes(problem):
        for g, h in itertools.pairwise(cls):
            used_g = sum(v.start[ly][g] for ly in range(L))
            used_h = sum(v.start[ly][h] for ly in range(L))
            model.add(used_g >= used_h)
            for ly in range(1, L):  # h starting at l forces g to start earlier
                model.add_bool_or([v.start[ly][h].negated()] + [v.start[k][g] for k in range(ly)])
            model.add(v.start[0][h] == 0)


# [START objective]
def _tau(ticks: Ticks, v: Vars, g: int, c: np.ndarray | None = None) -> Expr:
    c = ticks.c if c is None else c
    return cp_model.LinearExpr.weighted_sum([v.w[ly][g] for ly in range(len(v.w))], [int(x) for x in c[g]])


def _delay(ticks: Ticks, v: Vars, g: int, d: np.ndarray | None = None) -> Expr:
    d = ticks.d if d is None else d
    keys = _out_links(v).get(g, [])
    return cp_model.LinearExpr.weighted_sum([v.y[k] for k in keys], [int(d[g, k[2], k[0]]) for k in keys])


def _out_links(v: Vars) -> dict[int, list[tuple[int, int, int]]]:
    """The y keys (l, g, h) grouped by the sending device g (built once per model)."""
    if not v.out:
        for key in v.y:
            v.out.setdefault(key[1], []).append(key)
    return v.out


def _objective(model: cp_model.CpModel, problem: Problem, ticks: Ticks, v: Vars) -> dict[str, Lit]:
    """tau_max, sigma_max and T(M) = (M-1) P + sum tau + sum d (Thm 2 / Thm 3), in ticks.

    T gets its own variable: CP-SAT 9.15's presolve wrongly reported INFEASIBLE when a
    cut-off `expr <= ub` was posted on the very expression being minimised. When T(M) needs
    coarser ticks than the stage phases (`Ticks.split`), it is built on its own tick tables with
    its own period variable P_T >= every stage's tau (async) or sigma (blocking) in those ticks.
    """
    c, d = (ticks.Tc, ticks.Td) if ticks.split else (ticks.c, ticks.d)
    assert c is not None and d is not None
    G, L = problem.G, problem.L
    worst_d = int(d.max()) if d.size else 0
    if ticks.split:
        period = model.new_int_var(0, int(c.sum(axis=1).max()) + worst_d, "P_T")
        for g in range(G):
            tau_g = _tau(ticks, v, g, c)
            model.add(period >= (tau_g if problem.regime == "async" else tau_g + _delay(ticks, v, g, d)))
    else:
        period = v.tau_max if problem.regime == "async" else v.sigma_max
    work = cp_model.LinearExpr.weighted_sum([v.w[ly][g] for ly in range(L) for g in range(G)],
                                           [int(c[g, ly]) for ly in range(L) for g in range(G)])
    keys = list(v.y)
    links = cp_model.LinearExpr.weighted_sum([v.y[k] for k in keys], [int(d[k[1], k[2], k[0]]) for k in keys])
    top = (problem.M - 1) * (int(c.sum(axis=1).max()) + worst_d) + int(c.max(axis=0).sum())
    top += (min(G, L) - 1) * worst_d
    T = model.new_int_var(0, top, "T")
    model.add((problem.M - 1) * period + work + links == T)
    return {"tau": v.tau_max, "sigma": v.sigma_max, "T": T}


# [START hints]
def canonical(problem: Problem, devices: tuple[int, ...]) -> tuple[int, ...]:
    """Relabel interchangeable devices so the plan satisfies the symmetry break (free order)."""
    if problem.order == "fixed":
        return devices
    out = list(devices)
    for cls in device_classes(problem):
        slots = [s for s, g in enumerate(devices) if g in cls]
        for s, g in zip(slots, sorted(cls), strict=False):  # the first slots get the lowest ids
            out[s] = g
    return tuple(out)


def assignment(v: Vars, devices: tuple[int, ...], cuts: tuple[int, ...]) -> list[tuple[Lit, int]]:
    """Values of the boolean variables that encode the plan (for AddHint)."""
    L, G = len(v.w), len(v.w[0])
    on = np.zeros((L, G), dtype=int)
    for s, g in enumerate(devices):
        on[cuts[s]:cuts[s + 1], g] = 1
    pairs: list[tuple[Lit, int]] = []
    for ly in range(L):
        for g in range(G):
            pairs.append((v.w[ly][g], int(on[ly, g])))
            if ly > 0:
                pairs.append((v.start[ly][g], int(on[ly, g] and not on[ly - 1, g])))
            if ly < L - 1:
                pairs.append((v.end[ly][g], int(on[ly, g] and not on[ly + 1, g])))
    nxt = {cuts[s + 1] - 1: (devices[s], devices[s + 1]) for s in range(len(devices) - 1)}
    pairs += [(y, int(nxt.get(ly) == (g, h))) for (ly, g, h), y in v.y.items()]
    return pairs
