"""A `--tp auto` answer cut short keeps a bound that holds over every TP plan: after Ctrl-C in the
group search the best floor answers, not proven, with the shared fluid bound over every TP group
(the `--tp node` floor's own bound is above the TP optimum here, so it must not be kept)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from test_planning_floors import CLUSTER42_LIKE, _cluster, _model

from partitioner.planning.request import PlanRequest
from partitioner.planning.routing import route
from partitioner.result import Plan


def test_ctrl_c_in_the_tp_search_answers_the_best_floor_with_the_groups_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    import partitioner.deploy.plan as plan_mod

    req = PlanRequest(_model(7.0), _cluster(CLUSTER42_LIKE, [1, 2, 4]), objective="balanced", replicas=1, tp="auto")
    exact = route(req)
    node = route(dataclasses.replace(req, tp="node"))
    assert isinstance(exact, Plan) and isinstance(node, Plan) and exact.optimal
    assert node.lower_bound > exact.objective_value[0]  # the floor's bound is of its own, smaller space

    real = plan_mod.plan_request

    def interrupted(request: PlanRequest, *args: Any, **kwargs: Any) -> Any:
        if request.tp == "auto":  # the group search itself; the --tp node floor still runs
            raise KeyboardInterrupt
        return real(request, *args, **kwargs)

    monkeypatch.setattr(plan_mod, "plan_request", interrupted)
    got = route(req)
    assert isinstance(got, Plan) and not got.optimal and got.status == "INTERRUPTED"
    assert got.objective_value == node.objective_value  # the best floor
    assert 0.0 < got.lower_bound <= exact.objective_value[0] * (1 + 1e-9)  # finite, and it holds
