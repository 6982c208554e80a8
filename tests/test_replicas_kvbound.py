"""The memory-aware serve bound (partitioner.deploy.kvbound): never below what the serve search
finds on any node set of seeded small clusters (so it is an upper bound), at most the plain
bound, and its pieces (fractional fill, water-filling) by hand."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from test_replicas_seeds import _homogeneous_heavy
from test_replicas_serve import _brute, _instance

from partitioner.api import serve_plan
from partitioner.deploy.kvbound import _fill, _water
from partitioner.deploy.plan import plan_deployment
from partitioner.deploy.serve import serve_inputs
from partitioner.errors import InfeasibleError


def test_fill_and_water_by_hand() -> None:
    # 5 layers; device costs 1, 3, 2 holding at most 2, 10, 1 layers: 2·1 + 1·2 + 2·3 = 10
    assert _fill(np.array([1.0, 3.0, 2.0]), np.array([[2.0, 10.0, 1.0]]), 5.0)[0] == pytest.approx(10.0)
    assert _fill(np.array([1.0, 3.0]), np.array([[2.0, 2.0]]), 5.0)[0] == np.inf  # cannot hold 5
    # rates a = (6, 2), 4 layers: uncapped T = 8/4 = 2; device 0 capped at 1 layer: 1 + 2/T = 4 -> T = 2/3
    t = _water(np.array([6.0, 2.0]), np.array([[10.0, 10.0], [1.0, 10.0], [1.0, 1.0]]), 4.0, iters=60)
    assert t[0] == pytest.approx(2.0, rel=1e-9) and t[1] == pytest.approx(2 / 3, rel=1e-9) and t[2] == 0.0


def _subsets(n: int):  # type: ignore[no-untyped-def]
    return (list(c) for r in range(1, n + 1) for c in itertools.combinations(range(n), r))


@pytest.mark.parametrize("make,seed", [(_instance, s) for s in range(4)] + [(_homogeneous_heavy, s) for s in range(2)])
def test_memory_aware_bound_holds_on_every_node_set(make, seed: int) -> None:  # type: ignore[no-untyped-def]
    model, cluster = make(seed)
    _, bound = serve_inputs(model, cluster, tp="off", engine=None, regime="async", order="free", solver="auto",
                            tpot_ms=None, ttft_ms=None, max_batch=None, deadline=None)
    checked = 0
    for devs in _subsets(len(cluster.devices)):
        sub = cluster.model_copy(update={"devices": [cluster.devices[g] for g in devs]})
        try:
            got = serve_plan(model, sub).serving.tokens_per_s
        except InfeasibleError:
            got = 0.0
        joint = bound.joint(devs)
        assert joint >= got * (1 - 1e-9), (devs, joint, got)
        assert joint <= bound.fluid(devs) * (1 + 1e-9)
        checked += got > 0
    assert checked > 0


@pytest.mark.parametrize("seed", range(4, 8))
def test_serve_deployment_bound_is_above_brute_force(seed: int) -> None:
    """The reported upper bound (recursion and solved replicas' own bounds) is >= the brute-force
    optimum, and the deployment equals it (more seeds than test_replicas_serve)."""
    model, cluster = _instance(seed)
    want = _brute(model, cluster, None)
    d = plan_deployment(model, cluster, replicas="auto", tp="off", objective="serve")
    assert d.tokens_per_s == pytest.approx(want, rel=1e-9)
    assert d.upper_bound_tokens_per_s >= want * (1 - 1e-9)
