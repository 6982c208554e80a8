"""The serve replica planner past the command's time limit (partitioner.deploy.serve, "Late"):
one search per replica, over single GPUs, never the `auto` relaxation; before it, the relaxation
runs first. Counts searches, not seconds."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import partitioner.serving.search as search_mod
from partitioner.deploy.serve import seconds_left, serve_planner
from partitioner.models import load_model
from partitioner.models.cluster import ClusterSpec
from partitioner.planning.serve_limits import serve_limits

MODEL = Path(__file__).resolve().parents[1] / "examples" / "models" / "llama-3.1-8b.yaml"


def _cluster() -> ClusterSpec:
    devices = [{"name": f"g{k}", "gpu": gpu, "node": "node0"} for k, gpu in enumerate(["l4", "l4", "t4", "t4"])]
    return ClusterSpec.model_validate({"devices": devices, "tp": [1, 2, 4], "links": {
        "intra_node": "pcie4", "inter_node": "10gbe"}})


def _plan(deadline: float | None, monkeypatch: pytest.MonkeyPatch) -> tuple[object, list[int]]:
    """(the replica's plan on every GPU, the row count of each search it ran)."""
    model, cluster = load_model(MODEL), _cluster()
    limits, _ = serve_limits(model, None, None, 8)
    rows: list[int] = []
    real = search_mod.search

    def counted(tables_at, grid, **kw):  # type: ignore[no-untyped-def]
        rows.append(tables_at(grid[0] if grid else 1).cost.shape[0])
        return real(tables_at, grid, **kw)

    monkeypatch.setattr(search_mod, "search", counted)
    planner = serve_planner(model, cluster, tp="auto", engine=None, regime="async", order="free", solver="auto",
                            limits=limits, batches=[1, 2], left=seconds_left(deadline))
    return planner([0, 1, 2, 3]), rows


def test_past_the_limit_one_search_over_single_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    plan, rows = _plan(time.monotonic() - 1.0, monkeypatch)
    assert rows == [4]  # one search, over the 4 single GPUs (degree 1), no relaxation, no other degree
    assert all(not st.members or len(st.members) == 1 for st in plan.stages)  # type: ignore[attr-defined]
    assert plan.serving.tokens_per_s > 0 and not plan.optimal  # type: ignore[attr-defined]


def test_without_a_limit_the_relaxation_runs_first(monkeypatch: pytest.MonkeyPatch) -> None:
    plan, rows = _plan(None, monkeypatch)
    single = 4
    assert rows[0] > single  # every candidate group of degrees 1, 2 and 4: the relaxation
    assert plan.serving.tokens_per_s > 0  # type: ignore[attr-defined]
