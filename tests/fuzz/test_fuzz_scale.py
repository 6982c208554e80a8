"""Fuzz at scale (marker `fuzz`, run by .ci/run as `pytest -m fuzz`): at least 10,000 generated
cases over every command in-process, 0 failures, seed printed.

The cases are those of tests/fuzz/test_fuzz.py (grammar.py: newline and escape names, tiny and huge
valid numbers, FIFOs, devices and symlink loops, NaN/inf, alias bombs, ...) but drawn with a fresh
seed each run, so CI covers new ground every time; a failure's message starts with the seed and
`python benchmarks/fuzz.py --seed SEED --cases N` replays it. Knobs: PARTITIONER_FUZZ_CASES
(default 10000), PARTITIONER_FUZZ_SEED (default: random) and PARTITIONER_FUZZ_WORKERS (default 2
processes). About 4 minutes of one core, so about 2 on the 2-core CI machine.
"""

from __future__ import annotations

import os
import random
import sys

import pytest

from fuzz import harness

CASES = int(os.environ.get("PARTITIONER_FUZZ_CASES", "10000"))
WORKERS = int(os.environ.get("PARTITIONER_FUZZ_WORKERS", str(min(2, os.cpu_count() or 1))))


@pytest.mark.fuzz
def test_ten_thousand_generated_cases_keep_the_contract() -> None:
    seed = int(os.environ.get("PARTITIONER_FUZZ_SEED", str(random.SystemRandom().randrange(10**6))))
    print(f"\nfuzz: {CASES} cases, seed {seed} (replay: python benchmarks/fuzz.py --seed {seed} --cases {CASES} --workers {WORKERS})",
          file=sys.__stderr__, flush=True)
    run = harness.run_many(CASES, seed, workers=WORKERS)
    print(f"fuzz: {run.cases} cases over {len(run.tried)} commands, {len(run.failures)} failures, seed {seed}",
          file=sys.__stderr__, flush=True)
    assert run.cases >= CASES and len(run.tried) == len(harness.commands()), (seed, run.tried)
    assert not run.failures, f"seed {seed}: " + "\n".join(f"{c}\n  -> {'; '.join(p)}\n  stderr: {e!r}"
                                                          for c, p, e in run.failures[:10])
