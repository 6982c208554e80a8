"""The link-distinct subset DP without a deadline is limited in DP cells, not in seconds: the same
answer whatever the clock says, stopped at the same point, with a bound that holds."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from partitioner.solvers import budget as budget_mod
from partitioner.solvers.budget import Budget
from partitioner.solvers.dp import distinct, subsets

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from instances import random_problem


def _problem(objective: str) -> object:
    p = random_problem(24, 10, 3, seed=1, distinct=True, objective=objective)
    assert distinct.applies(p) and p.G > subsets.SMALL_G  # the counted case
    return p


class _Racing:
    """A clock a day ahead at every read: any wall-clock limit would stop the search at once."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        self.t += 86_400.0
        return self.t


@pytest.mark.parametrize("objective", ["makespan", "balanced"])
def test_no_deadline_means_cells_not_seconds(objective: str, monkeypatch: pytest.MonkeyPatch) -> None:
    p = _problem(objective)
    calm = Budget(None)
    found = distinct.solve(p, calm)  # type: ignore[arg-type]
    monkeypatch.setattr(budget_mod, "clock", _Racing())
    raced = Budget(None)
    again = distinct.solve(p, raced)  # type: ignore[arg-type]
    assert (again.devices, again.cuts, again.objective, again.status) == (found.devices, found.cuts,
                                                                          found.objective, found.status)
    assert raced.work == calm.work > 0 and calm.work <= distinct.DEFAULT_CELLS


@pytest.mark.parametrize("cells", [20_000, 200_000])
def test_a_cell_budget_stops_at_the_same_point_with_a_valid_bound(cells: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(distinct, "DEFAULT_CELLS", cells)
    p = _problem("makespan")
    exact = Budget(1e9)  # a deadline: not counted, runs to the optimum
    best = distinct.solve(p, exact)  # type: ignore[arg-type]
    assert best.optimal
    runs = []
    for clock in (_Racing(), budget_mod.clock):
        monkeypatch.setattr(budget_mod, "clock", clock)
        b = Budget(None)
        runs.append((distinct.solve(p, b), b.work))  # type: ignore[arg-type]
    (one, w1), (two, w2) = runs
    assert (one.devices, one.cuts, one.objective, w1) == (two.devices, two.cuts, two.objective, w2)
    assert one.lower_bound <= best.objective[0] * (1 + 1e-9) <= one.objective[0] * (1 + 1e-9)
    if not one.optimal:
        assert w1 > cells  # stopped by the count, not by anything else
