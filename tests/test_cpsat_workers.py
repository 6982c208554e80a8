"""CP-SAT's worker count: a fixed number whatever the load, pinned by an env var."""

from __future__ import annotations

import pytest


def test_cpsat_workers_are_fixed_and_can_be_pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from partitioner.solvers.cpsat import search

    monkeypatch.delenv("PARTITIONER_CPSAT_WORKERS", raising=False)
    assert 1 <= search.usable_cpus() <= (os.cpu_count() or 1)
    for load in (0.0, 6.2, 40.0):  # the load of other processes does not change the count
        monkeypatch.setattr(os, "getloadavg", lambda load=load: (load, 1.0, 1.0))
        assert search.workers() == search.DEFAULT_WORKERS
    monkeypatch.setenv("PARTITIONER_CPSAT_WORKERS", "3")
    assert search.workers() == 3 and search.make_solver(1.0).parameters.num_workers == 3
    monkeypatch.setenv("PARTITIONER_CPSAT_WORKERS", "99")
    assert search.workers() == search.MAX_WORKERS


def test_without_a_wall_clock_limit_cpsat_is_limited_in_work() -> None:
    from partitioner.solvers.cpsat import search

    timed, counted = search.make_solver(2.5), search.make_solver(0.0, work=3.0)
    assert timed.parameters.max_time_in_seconds == 2.5
    assert counted.parameters.max_deterministic_time == 3.0
    assert counted.parameters.max_time_in_seconds == search.WORK_WALL_CAP_S  # only the backstop
