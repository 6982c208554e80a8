"""CP-SAT's worker count: the usable cores other processes leave idle, pinned by an env var."""

from __future__ import annotations

import pytest


def test_cpsat_workers_follow_free_cores_and_can_be_pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from partitioner.solvers.cpsat import search

    monkeypatch.delenv("PARTITIONER_CPSAT_WORKERS", raising=False)
    assert 1 <= search.usable_cpus() <= (os.cpu_count() or 1)
    monkeypatch.setattr(search, "usable_cpus", lambda: 8)
    monkeypatch.setattr(os, "getloadavg", lambda: (1.0, 1.0, 1.0))  # only the caller: every core
    assert search.workers() == 8
    monkeypatch.setattr(os, "getloadavg", lambda: (6.2, 1.0, 1.0))  # five others busy
    assert search.workers() == 3
    monkeypatch.setattr(os, "getloadavg", lambda: (40.0, 1.0, 1.0))
    assert search.workers() == 1
    monkeypatch.setenv("PARTITIONER_CPSAT_WORKERS", "2")
    assert search.workers() == 2 and search.make_solver(1.0).parameters.num_workers == 2
