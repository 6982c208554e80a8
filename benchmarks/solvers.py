"""Solver benchmark (issue 4): solve time and plan quality on synthetic heterogeneous clusters.

Prints a table: for L in {32, 80, 128, 256} and clusters of 4..64 devices of 2..6 GPU
types, fixed and free order, each objective: the DP's wall time, CP-SAT's wall time and gap
at its time limit (on the smaller instances), and plan quality (throughput, T(M)) against
every baseline and the fluid lower bound.

    python benchmarks/solvers.py                # the full table (several minutes with CP-SAT)
    python benchmarks/solvers.py --quick        # a few rows
    python benchmarks/solvers.py --no-cpsat     # DP and baselines only
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from instances import random_tables

from partitioner import solvers
from partitioner.errors import PartitionerError
from partitioner.problem import Problem
from partitioner.result import Plan

CLUSTERS = [(4, 2), (8, 3), (16, 4), (32, 4), (64, 4), (64, 6)]
LAYERS = [32, 80, 128, 256]


def timed(problem: Problem, solver: str, **kw: object) -> tuple[Plan | None, float, str]:
    start = time.perf_counter()
    try:
        solution = solvers.solve(problem, solver, **kw)
    except PartitionerError as exc:
        return None, time.perf_counter() - start, type(exc).__name__
    return Plan.from_solution(problem, solution), time.perf_counter() - start, ""


def fluid_bound(problem: Problem) -> float:
    """The fluid LP lower bound on tau_max (algorithms.md §4): 1/bound bounds throughput."""
    from partitioner.solvers import bounds

    return float(bounds.fluid_bound(problem.tables))


def row(L: int, G: int, T: int, order: str, objective: str, args: argparse.Namespace) -> str:
    problem = Problem(random_tables(L, G, T, seed=L * 1000 + G), M=args.M, order=order, objective=objective)
    dp_plan, dp_s, dp_err = timed(problem, "dp") if solvers.get("dp") and _applies(problem) else (None, 0.0, "n/a")
    cp = "—"
    if args.cpsat and args.cpsat_max >= L * G:
        cp_plan, cp_s, cp_err = timed(
            Problem(problem.tables, M=args.M, order=order, objective=objective, time_limit_s=args.time_limit), "cpsat"
        )
        cp = cp_err or f"{cp_s:7.2f}s gap {_gap(cp_plan):5.1%}"
    base = []
    for name in solvers.BASELINES:
        plan, _, err = timed(problem, name)
        base.append("infeas." if plan is None or not plan.feasible else f"{plan.throughput:8.1f}")
    dp_col = dp_err or f"{dp_s * 1e3:9.1f}ms"
    if dp_err == "n/a":  # free order beyond the exact sigma/T lattice: time the exact tau* step alone
        from partitioner.solvers import dp

        start = time.perf_counter()
        tau_star = dp.free_tau(problem)
        dp_col = f"tau*{(time.perf_counter() - start) * 1e3:7.1f}ms" if tau_star is not None else "n/a"
    thr = f"{dp_plan.throughput:8.1f}" if dp_plan else "   —"
    T_M = f"{dp_plan.T * 1e3:8.2f}" if dp_plan else "   —"
    fb = fluid_bound(problem)
    fl = f"{1 / fb:8.1f}" if fb == fb and fb > 0 else "   —"
    return f"{L:4d} {G:3d} {T:2d} {order:5s} {objective:10s} {dp_col:>11s} {cp:>20s} {thr} {T_M} {fl} " + " ".join(base)


def _applies(problem: Problem) -> bool:
    from partitioner.solvers import dp

    return bool(dp.applies(problem))


def _gap(plan: Plan | None) -> float:
    if plan is None or not plan.objective_value or plan.objective_value[0] <= 0:
        return float("nan")
    return max(0.0, 1 - plan.lower_bound / plan.objective_value[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-cpsat", dest="cpsat", action="store_false")
    ap.add_argument("--time-limit", type=float, default=5.0)
    ap.add_argument("--cpsat-max", type=int, default=80 * 8, help="largest L*G given to CP-SAT")
    ap.add_argument("--M", type=int, default=8)
    args = ap.parse_args()
    layers = [32, 256] if args.quick else LAYERS
    clusters = [(4, 2), (64, 4)] if args.quick else CLUSTERS
    objectives = ["balanced"] if args.quick else ["balanced", "throughput", "makespan"]
    print(f"{'L':>4} {'G':>3} {'T':>2} {'order':5s} {'objective':10s} {'dp time':>11s} {'cp-sat (limit ' + str(args.time_limit) + 's)':>20s}"
          f" {'thr/s':>8s} {'T(M) ms':>8s} {'fluidUB':>8s} " + " ".join(f"{b:>8s}" for b in solvers.BASELINES))
    for L in layers:
        for G, T in clusters:
            for order in ("fixed", "free"):
                for objective in objectives:
                    print(row(L, G, T, order, objective, args), flush=True)


if __name__ == "__main__":
    main()
