"""`plan --engine`: wall time and throughput of the launchable plan beside the unrestricted one.

    python benchmarks/engine_order.py [MODEL.yaml]

For every bundled cluster and engine rule (vllm, sglang, trtllm): the free-order plan, the plan the
engine can launch (`partitioner.solvers.engine_order.solve`, GPUs below the engine's minimum
compute capability left out), how many fixed-order sub-problems it solved, whether it is proven
optimal, and the throughput it gives up (1/tau_max or 1/sigma_max) against the free plan.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from partitioner import solvers
from partitioner.api import build_problem, load_inputs
from partitioner.errors import PartitionerError
from partitioner.solvers import engine_order, engine_sequences

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    model_file = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "examples/models/qwen2.5-14b.yaml")
    print(f"{'cluster':<18} {'engine':<7} {'free 1/s':>9} {'engine 1/s':>10} {'lost':>7} {'proven':>6} {'sub-problems':>12} {'time':>8}")
    for cluster_file in sorted((ROOT / "examples/clusters").glob("*.yaml")):
        model, cluster = load_inputs(model_file, str(cluster_file))
        problem = build_problem(model, cluster, order="free")
        free = solvers.solve(problem)
        for engine in ("vllm", "sglang", "trtllm"):
            calls = 0
            original = solvers.solve

            def counting(*args, _orig=original, **kwargs):  # type: ignore[no-untyped-def]
                nonlocal calls
                calls += 1
                return _orig(*args, **kwargs)

            solvers.solve = counting  # type: ignore[assignment]
            start = time.perf_counter()
            try:
                exclude = engine_sequences.unsupported_devices(problem.tables, engine)
                sol = engine_order.solve(problem, engine, exclude=exclude)
                elapsed = time.perf_counter() - start
                lost = 1 - free.objective[0] / sol.objective[0]
                print(f"{cluster_file.stem:<18} {engine:<7} {1 / free.objective[0]:9.2f} {1 / sol.objective[0]:10.2f} "
                      f"{lost:7.1%} {'yes' if sol.optimal else 'no':>6} {calls:12d} {elapsed:7.2f}s")
            except PartitionerError as exc:
                print(f"{cluster_file.stem:<18} {engine:<7} {1 / free.objective[0]:9.2f} {'-':>10} {'-':>7} {'-':>6} {calls:12d}   {exc}")
            finally:
                solvers.solve = original  # type: ignore[assignment]


if __name__ == "__main__":
    main()
