"""Evidence for the CP-SAT presolve setting (docs/cpsat-presolve.md): prints a table.

1. The two OR-Tools 9.15 reproducers in ../shared/data/cpsat-presolve (wrong OPTIMAL, false
   INFEASIBLE) under each presolve setting.
2. The planner's own CP-SAT model against brute force on seeded small instances (every
   objective x regime x order, no DP hint) under each setting: how many answers differ.

    python benchmarks/solvers_presolve.py [--instances 150]
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from pathlib import Path

from ortools.sat.python import cp_model

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("PARTITIONER_SHARED", ROOT / ".." / "shared")) / "data" / "cpsat-presolve"
sys.path.insert(0, str(ROOT / "tests"))

DEFAULT_INCLUSION = 100_000_000  # OR-Tools 9.15's default presolve_inclusion_work_limit
SETTINGS: dict[str, dict[str, object]] = {
    "off": {"cp_model_presolve": False},
    "on (default)": {"cp_model_presolve": True, "presolve_inclusion_work_limit": DEFAULT_INCLUSION},
    "on, inclusion_work_limit=0": {"cp_model_presolve": True, "presolve_inclusion_work_limit": 0},
    "on, keep_all_feasible": {"cp_model_presolve": True, "presolve_inclusion_work_limit": DEFAULT_INCLUSION,
                              "keep_all_feasible_solutions_in_presolve": True},
}


def _apply(solver: cp_model.CpSolver, setting: dict[str, object]) -> None:
    for key, value in setting.items():
        setattr(solver.parameters, key, value)


def reproducers() -> None:
    if not SHARED.is_dir():
        print(f"(skipped: {SHARED} not found)")
        return
    source = (SHARED / "wrong_optimal.py").read_text().split("for presolve in")[0]
    sys.argv = ["wrong_optimal.py"]
    space: dict[str, object] = {}
    exec(compile(source, "wrong_optimal.py", "exec"), space)  # defines build(); the loop is cut off
    text = (SHARED / "false_infeasible.pb.txt").read_text()
    print(f"{'setting':30s} {'wrong_optimal (true 340652019)':>32s} {'false_infeasible (true OPTIMAL)':>32s}")
    for name, setting in SETTINGS.items():
        s = cp_model.CpSolver()
        s.parameters.num_workers = 1
        _apply(s, setting)
        st = s.Solve(space["build"]())  # type: ignore[operator]
        first = f"{s.status_name(st)} {int(s.ObjectiveValue())}"
        m = cp_model.CpModel()
        m.Proto().parse_text_format(text)
        s = cp_model.CpSolver()
        s.parameters.num_workers = 1
        s.parameters.max_time_in_seconds = 60
        _apply(s, setting)
        second = s.status_name(s.Solve(m))
        print(f"{name:30s} {first:>32s} {second:>32s}")


def properties(n: int) -> None:
    import numpy as np
    from test_cpsat_props import random_tables

    from partitioner.errors import InfeasibleError
    from partitioner.problem import Problem, lex_compare
    from partitioner.solvers import brute, cpsat
    from partitioner.solvers.cpsat import search

    rng = np.random.default_rng(7)
    cases = []
    for _ in range(n):
        G, L = int(rng.integers(1, 5)), int(rng.integers(1, 7))
        t = random_tables(int(rng.integers(2**32)), G, L, bool(rng.integers(2)), bool(rng.integers(2)),
                          bool(rng.integers(2)))
        cases.append((t, int(rng.integers(1, 7))))
    want = {}
    for i, (t, M) in enumerate(cases):
        for combo in itertools.product(("balanced", "throughput", "makespan"), ("async", "blocking"), ("free", "fixed")):
            p = Problem(t, M=M, objective=combo[0], regime=combo[1], order=combo[2])  # type: ignore[arg-type]
            try:
                want[i, combo] = brute.solve(p).objective
            except InfeasibleError:
                want[i, combo] = None
    print(f"\n{'setting':30s} {'problems':>9s} {'wrong':>6s} {'seconds':>8s}")
    original = search.extra_parameters
    for name, setting in SETTINGS.items():
        search.extra_parameters = dict(setting)
        wrong, start = 0, time.perf_counter()
        for (i, combo), key in want.items():
            t, M = cases[i]
            p = Problem(t, M=M, objective=combo[0], regime=combo[1], order=combo[2])  # type: ignore[arg-type]
            try:
                got = cpsat.solve(p, hint=None, use_dp=False).objective
            except InfeasibleError:
                got = None
            if (got is None) != (key is None) or (got is not None and key is not None and lex_compare(got, key)):
                wrong += 1
        print(f"{name:30s} {len(want):9d} {wrong:6d} {time.perf_counter() - start:8.1f}")
    search.extra_parameters = original


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--instances", type=int, default=150, help="brute-force instances (0: reproducers only)")
    args = ap.parse_args()
    reproducers()
    if args.instances:
        properties(args.instances)


if __name__ == "__main__":
    main()
