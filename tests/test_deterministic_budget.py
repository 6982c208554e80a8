"""Without the user's wall-clock limit a run is limited in work, so it gives the same answer on an
idle machine and beside a CPU-bound process: byte-identical JSON."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from partitioner.problem import CostTables, Problem

ROOT = Path(__file__).resolve().parents[1]
HOG = "import time\nend = time.time() + 120\nwhile time.time() < end:\n    sum(i * i for i in range(10000))\n"


@contextmanager
def cpu_hogs(n: int = 2) -> Iterator[None]:
    """`n` CPU-bound processes beside the test (killed on exit, by their own handles)."""
    procs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(n)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def _heterogeneous(G: int = 7, L: int = 24, seed: int = 3) -> Problem:
    """Link-distinct devices of random speed and memory: the DP does not apply, CP-SAT runs."""
    rng = np.random.default_rng(seed)
    t = CostTables(
        cost=np.outer(rng.uniform(0.5, 3.0, size=G), rng.uniform(0.8, 1.2, size=L)), memory_gb=np.ones(L),
        cut_bytes=np.full(L, 1e6), capacity_gb=rng.integers(4, 9, size=G).astype(float),
        latency_s=rng.uniform(1e-4, 5e-3, size=(G, G)), bandwidth_Bps=rng.uniform(1e9, 1e10, size=(G, G)),
        layer_names=tuple(f"l{i}" for i in range(L)), device_names=tuple(f"d{g}" for g in range(G)),
        gpu_names=("t4",) * G, node_names=tuple(f"n{g}" for g in range(G)),
    )
    return Problem(t, objective="balanced", M=4, order="free")


def test_cpsat_cut_short_by_work_gives_the_same_plan_under_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """CP-SAT stopped long before its proof (a tiny work limit) returns the same plan, bound and
    status when two CPU hogs compete for the cores; a wall-clock limit would not."""
    from partitioner.solvers import cpsat
    from partitioner.solvers.cpsat import search

    monkeypatch.setattr(cpsat, "DEFAULT_WORK", 0.05)
    problem = _heterogeneous()

    def key() -> tuple[object, ...]:
        s = cpsat.solve(problem)  # seeded by the DP's plan, improved within the work limit
        return s.devices, s.cuts, s.objective, s.lower_bound, s.status

    idle = key()
    with cpu_hogs():
        busy = key()
    assert search.workers() == search.DEFAULT_WORKERS or "PARTITIONER_CPSAT_WORKERS" in os.environ
    assert idle == busy


def test_cli_json_is_byte_identical_beside_a_cpu_hog(tmp_path: Path) -> None:
    """`partition plan --objective serve --replicas auto --json` twice, once beside CPU hogs."""
    model = tmp_path / "m.yaml"
    model.write_text("name: m\nlayers:\n  - {name: layer, repeat: 6, cost: {l4: 0.007, t4: 0.012}, memory_gb: 4.0}\n")
    cluster = tmp_path / "c.yaml"
    cluster.write_text("devices:\n" + "".join(f"  - {{name: g{i}, gpu: {'l4' if i < 2 else 't4'}, node: n{i // 2}}}\n"
                                              for i in range(6)))
    cmd = [sys.executable, "-c", "from partitioner.cli import main; main()", "plan", str(model), str(cluster), "--objective", "serve",
           "--replicas", "auto", "--max-batch", "16", "--json"]
    env = {k: v for k, v in os.environ.items() if k != "PARTITIONER_CPSAT_WORKERS"}
    idle = subprocess.run(cmd, capture_output=True, cwd=ROOT, env=env, check=True).stdout
    with cpu_hogs():
        busy = subprocess.run(cmd, capture_output=True, cwd=ROOT, env=env, check=True).stdout
    assert idle and idle == busy
