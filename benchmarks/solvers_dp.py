"""Timing of the dp steps against the planning targets (prints a table; not a test).

    /work/venv/bin/python benchmarks/solvers_dp.py

Instances: benchmarks/instances.py (unrelated costs, binding memory, 4 devices per node).
Each row is the best of `REPEAT` runs (wall clock, seconds).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from instances import random_problem

from partitioner.solvers import dp
from partitioner.solvers.bounds import fluid_bound
from partitioner.solvers.dp.fixed import fixed_stages, fixed_tau
from partitioner.solvers.dp.tables import build_tables, cap

REPEAT = 3


def best_of(f: Callable[[], object]) -> float:
    times = []
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    print(f"{'case':58s} {'seconds':>9s}  target")
    for L, G, types in ((256, 64, 2), (256, 64, 4), (256, 64, 6)):
        p = random_problem(L, G, types, seed=0, order="fixed")
        T = build_tables(p.tables)
        tau = fixed_tau(T)[0]
        name = f"L={L} G={G} types={types}"
        rows = [
            (f"fixed tau step ({name})", lambda T=T: fixed_tau(T), "10 ms"),
            (f"fixed sigma step ({name})", lambda T=T, tau=tau: fixed_stages(T, "max", cap(tau), np.inf), "50 ms"),
            (f"fixed tables build ({name})", lambda p=p: build_tables(p.tables), ""),
        ]
        for objective, regime in (("balanced", "async"), ("makespan", "async"), ("makespan", "blocking")):
            q = random_problem(L, G, types, seed=0, order="fixed", objective=objective, regime=regime)
            target = "0.5 s" if objective == "makespan" else ""
            rows.append((f"fixed solve {objective}/{regime} ({name})", lambda q=q: dp.solve(q), target))
        free = random_problem(L, G, types, seed=0, order="free")
        if types <= 4:
            rows.append((f"free tau step ({name})", lambda free=free: dp.free_tau(free), "0.5 s"))
        rows.append((f"fluid LP bound ({name})", lambda free=free: fluid_bound(free.tables), ""))
        for label, f, target in rows:
            print(f"{label:58s} {best_of(f):9.4f}  {target}")
    for G, types in ((8, 2), (8, 3)):
        q = random_problem(32, G, types, seed=1, order="free")
        print(f"{f'free solve balanced (L=32 G={G} types={types}) applies={dp.applies(q)}':58s} "
              f"{best_of(lambda q=q: dp.solve(q)):9.4f}")


if __name__ == "__main__":
    main()
