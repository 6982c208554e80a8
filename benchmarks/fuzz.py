"""Run the CLI fuzz harness of tests/fuzz/ for longer than CI does, and report what it found.

    python benchmarks/fuzz.py                      # 2,000 cases over every command, seed 0
    python benchmarks/fuzz.py --cases 20000 --seed 7 --command plan --command report
    python benchmarks/fuzz.py --minutes 10         # as many cases as fit in ten minutes

Prints the cases tried per command, each failure (the case, what broke) and the slowest cases.
Exit code 1 if any case broke the contract (see tests/fuzz/harness.py). The same strategies and
checks run in `pytest` with a fixed seed and a small budget (tests/fuzz/test_fuzz.py).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # before benchmarks/, so `fuzz` is the tests package

from fuzz import harness  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=2000, help="cases to try (default 2000)")
    ap.add_argument("--minutes", type=float, default=None, help="stop after this long instead")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--command", action="append", default=None, help="only this command (repeatable), e.g. plan")
    ap.add_argument("--slowest", type=int, default=5)
    ap.add_argument("--workers", type=int, default=1, help="processes (as in CI's PARTITIONER_FUZZ_WORKERS, for a replay)")
    opts = ap.parse_args()

    chosen = [(p, c) for p, c in harness.commands() if opts.command is None or " ".join(p) in opts.command]
    if not chosen:
        print(f"no such command: {opts.command}", file=sys.stderr)
        return 2
    deadline = None if opts.minutes is None else time.monotonic() + 60 * opts.minutes
    start = time.perf_counter()
    try:
        run = harness.run_many(opts.cases, opts.seed, chosen, until=deadline, workers=opts.workers)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    total = time.perf_counter() - start
    tried, failures, timings = run.tried, run.failures, run.timings

    print(f"{'command':<22} {'cases':>7}")
    for name, n in sorted(tried.items()):
        print(f"{name:<22} {n:>7}")
    print(f"{'all':<22} {sum(tried.values()):>7}   in {total:.1f} s, seed {opts.seed}")
    print(f"\nfailures: {len(failures)}")
    for case, found, stderr in failures[:50]:
        print(f"  {case}\n    -> {'; '.join(found)}\n    stderr: {stderr!r}")
    print(f"\nslowest {opts.slowest}:")
    for seconds, case in sorted(timings, reverse=True)[: opts.slowest]:
        print(f"  {seconds * 1e3:9.1f} ms  {case}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
