"""CPU time of `partition` where nothing heavy should run: --help, --version and error paths.

    python benchmarks/startup.py            # 5 runs each, median user+sys CPU seconds

Target: under 0.3 s of CPU each (lazy imports: click only for --help; no pydantic, numpy or
ortools before an input file is known to exist). Wall time on a loaded machine says little, so
the table reports the child's CPU time (resource.getrusage), not the clock.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CASES = {
    "--help": ["--help"],
    "plan --help": ["plan", "--help"],
    "--version": ["--version"],
    "missing model file": ["plan", "missing.yaml", str(REPO / "examples/clusters/l4x8.yaml")],
    "unknown command": ["plna"],
    "bad --time-limit": ["plan", "m.yaml", "c.yaml", "--time-limit", "nan"],
    "empty --out": ["plan", "m.yaml", "c.yaml", "--out", ""],
}


def cpu_seconds(args: list[str], where: str) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", "import sys; sys.argv[0] = 'partition'; from partitioner.cli import main; main()", *args], cwd=where, capture_output=True, check=False,
                   env={**os.environ, "PYTHONPATH": str(REPO)})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    print(f"{'case':<22} {'median CPU s':>12} {'max':>8}   target < 0.3 s")
    worst = 0.0
    with tempfile.TemporaryDirectory() as where:
        for name, args in CASES.items():
            times = [cpu_seconds(args, where) for _ in range(runs)]
            worst = max(worst, statistics.median(times))
            print(f"{name:<22} {statistics.median(times):>12.3f} {max(times):>8.3f}")
    print(f"worst median {worst:.3f} s: {'within' if worst < 0.3 else 'OVER'} the 0.3 s target")
    return 0


if __name__ == "__main__":
    sys.exit(main())
