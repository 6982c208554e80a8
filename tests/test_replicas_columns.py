"""Column generation over node kinds (partitioner.deploy.columns) against the exact recursion, and
the vectorized replica bound (partitioner.deploy.bounds) against the per-device-set one, seeded."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from test_replicas_exact import _instance

import partitioner.deploy.replicas as rep
from partitioner.deploy.columns import _count, count_vectors
from partitioner.deploy.plan import plan_deployment
from partitioner.deploy.pricing import _tail
from partitioner.errors import PartitionerError, SolverError
from partitioner.models.cluster import ClusterSpec
from partitioner.models.llm import ModelSpec


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("replicas", ["auto", 2])
def test_columns_agree_with_the_exact_recursion(seed: int, replicas: str | int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Forced into column mode, the deployment is never better than the exact optimum, its upper
    bound is never below it, and a proven one equals it."""
    model, cluster = _instance(seed)
    try:
        exact = plan_deployment(model, cluster, replicas=replicas, tp="off")
    except PartitionerError as exc:  # the same error must come from column mode
        monkeypatch.setattr(rep, "MAX_STATES", 1)
        with pytest.raises(type(exc)):
            plan_deployment(model, cluster, replicas=replicas, tp="off")
        return
    monkeypatch.setattr(rep, "MAX_STATES", 1)
    d = plan_deployment(model, cluster, replicas=replicas, tp="off")
    assert d.tokens_per_s <= exact.tokens_per_s * (1 + 1e-9)
    assert d.upper_bound_tokens_per_s >= exact.tokens_per_s * (1 - 1e-9)
    if d.optimal:
        assert d.tokens_per_s == pytest.approx(exact.tokens_per_s, rel=1e-9)
    if replicas != "auto":
        assert len(d.replicas) == replicas
    used = [st.device for p in d.replicas for st in p.stages]
    assert len(used) == len(set(used))


def _multi_gpu(seed: int) -> tuple[ModelSpec, ClusterSpec]:
    rng = random.Random(seed)
    layers = [{"name": "layer", "repeat": 6, "cost": {"a100-40gb": 1.4e-3, "l4": 7e-3, "t4": 7.5e-3},
               "memory_gb": rng.uniform(6, 14), "out_bytes": 262144, "kv_bytes_per_token": 4096}]
    model = ModelSpec.model_validate({"name": "m", "layers": layers, "workload": {"batch": 8, "in_flight": 2}})
    devices = []
    for n in range(rng.randint(4, 8)):
        gpu, k = rng.choice([("a100-40gb", 1), ("l4", 1), ("l4", 2), ("t4", 2), ("t4", 4)])
        devices += [{"name": f"n{n}-{i}", "gpu": gpu, "node": f"m{n}"} for i in range(k)]
    links = {"intra_node": "pcie4", "inter_node": {"latency_ms": 1.0, "bandwidth_gb_s": 0.125}}
    return model, ClusterSpec.model_validate({"devices": devices, "links": links, "tp": [1, 2, 4]})


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("tp", ["off", "node", "auto"])
def test_vectorized_bound_equals_the_device_set_bound(seed: int, tp: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import partitioner.deploy.replicas as r
    from partitioner.deploy import units

    # machine units: the vectorized bound counts a kind's units as machines (partitioner.deploy.bounds);
    # with GPU units (partitioner.deploy.units) a unit is one GPU and the two bounds differ, both valid
    monkeypatch.setattr(units, "MAX_UNIT_VECTORS", 0)
    model, cluster = _multi_gpu(seed)
    seen = {}

    def spy(nk, value, **kw):  # type: ignore[no-untyped-def]
        seen.update(kw, nk=nk, value=value)
        raise KeyboardInterrupt  # stop before any solve

    monkeypatch.setattr(r, "search_replicas", spy)
    with pytest.raises(KeyboardInterrupt):
        plan_deployment(model, cluster, replicas="auto", tp=tp)
    b, nk = seen["bound"], seen["nk"]
    b.prepare(nk)
    X = np.array([x for x in itertools.product(*(range(n + 1) for n in nk.counts)) if any(x)])
    v = b.vectors(X)
    s = np.array([b(nk.devices(tuple(x))) for x in X])
    assert np.allclose(v, s, rtol=1e-12, atol=1e-12)
    # and it bounds the replica planner's tokens/s on every vector
    for x, ub in zip(X[:12], v[:12], strict=True):
        try:
            plan = seen["value"](nk.devices(tuple(x)))
        except PartitionerError:  # infeasible sets have no tokens/s to bound
            continue
        assert plan.serving.tokens_per_s <= ub * (1 + 1e-9)


def test_count_vectors_and_count() -> None:
    N = (3, 0, 2, 4)
    for c in range(10):
        X = count_vectors(N, c)
        want = {x for x in itertools.product(*(range(n + 1) for n in N)) if 1 <= sum(x) <= c}
        assert {tuple(int(a) for a in x) for x in X} == want and len(X) == len(want)
        assert _count(N, c) == len(want) + 1  # _count includes the zero vector


def test_tail_bound_by_hand() -> None:
    """Two kinds, N = (2, 2), replicas of more than c = 2 nodes: m = 3 or 4 nodes; with π = 0 the
    bound is min(rates·x, cap(m)), at most cap(2) = 5 (rates large)."""
    N = np.array([2, 2])
    got = _tail(N, 2, np.zeros(2), 0.0, np.array([100.0, 100.0]), lambda c: 5.0 if c == 2 else 4.0)
    assert got == pytest.approx(5.0)
    # with prices above the rates no replica of 3+ nodes has positive reduced cost
    assert _tail(N, 2, np.array([200.0, 200.0]), 0.0, np.array([100.0, 100.0]), lambda c: 5.0) < 0
    assert _tail(N, 4, np.zeros(2), 0.0, np.ones(2), lambda c: 1.0) == float("-inf")


def test_moved_replicas_equal_replanned_ones() -> None:
    """A later replica of the same count vector is the memoised plan moved onto its own nodes: the
    same figures as planning it there again, on disjoint devices (interchangeable nodes)."""
    from partitioner.deploy.kinds import node_kinds
    from partitioner.deploy.replica_result import _place

    layers = [{"name": "layer", "repeat": 6, "cost": {"a100-40gb": 1.4e-3, "l4": 7e-3}, "memory_gb": 9.0,
               "out_bytes": 262144, "kv_bytes_per_token": 4096}]
    model = ModelSpec.model_validate({"name": "m", "layers": layers, "workload": {"batch": 8, "in_flight": 2}})
    devices = [{"name": f"l{n}-{i}", "gpu": "l4", "node": f"l{n}"} for n in range(2) for i in range(2)]
    devices += [{"name": f"a{n}", "gpu": "a100-40gb", "node": f"a{n}"} for n in range(2)]
    cluster = ClusterSpec.model_validate({"devices": devices, "tp": [1, 2], "links": {
        "intra_node": "pcie4", "inter_node": {"latency_ms": 1.0, "bandwidth_gb_s": 0.125}}})
    d = plan_deployment(model, cluster, replicas=2, tp="auto")
    nk = node_kinds(cluster)
    names = [x.name for x in cluster.devices]
    used = [m for p in d.replicas for st in p.stages for m in (st.members or (st.device,))]
    assert len(used) == len(set(used))
    for p in d.replicas:  # every stage names a real device of the node it claims
        for st in p.stages:
            for m in st.members or (st.device,):
                assert cluster.devices[names.index(m)].node == st.node

    calls = []

    def value(devices):  # type: ignore[no-untyped-def]
        calls.append(devices)
        return plan_deployment(model, cluster.model_copy(update={"devices": [cluster.devices[g] for g in devices]}),
                               replicas=1, tp="off")

    x = (1, 1)  # one L4 pair and one A100: two such replicas fit
    first = value(nk.devices(x))
    memo = {x: (first.serving.tokens_per_s, first)}
    moved = _place(nk, [x, x], 1, memo, value, cluster)
    again = _place(nk, [x, x], 1, memo, value)
    assert moved.serving.tokens_per_s == pytest.approx(again.serving.tokens_per_s, rel=1e-12)
    assert [st.device for st in moved.stages] == [st.device for st in again.stages]


def test_columns_ctrl_c_and_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Column mode: Ctrl-C during a replica solve, or the time limit, returns the best deployment of
    the replicas solved so far, not proven, with an upper bound no smaller than the exact optimum."""
    import partitioner.deploy.plan as plan_mod

    model, cluster = _instance(5)
    exact = plan_deployment(model, cluster, replicas="auto", tp="off")
    monkeypatch.setattr(rep, "MAX_STATES", 1)
    real = plan_mod.replica_planner
    calls = {"n": 0}

    def interrupting(*args, **kwargs):  # type: ignore[no-untyped-def]
        inner = real(*args, **kwargs)

        def planner(devices):  # type: ignore[no-untyped-def]
            calls["n"] += 1
            if calls["n"] == 3:
                raise KeyboardInterrupt
            return inner(devices)

        planner.upper = inner.upper  # type: ignore[attr-defined]
        return planner

    monkeypatch.setattr(plan_mod, "replica_planner", interrupting)
    d = plan_deployment(model, cluster, replicas="auto", tp="off")
    assert d.stopped == "interrupted" and not d.optimal
    assert 0 < d.tokens_per_s <= exact.tokens_per_s * (1 + 1e-9) <= d.upper_bound_tokens_per_s * (1 + 1e-9)
    monkeypatch.setattr(plan_mod, "replica_planner", real)
    with pytest.raises(SolverError, match="not proven"):  # out of time is not infeasibility
        plan_deployment(model, cluster, replicas="auto", tp="off", time_limit_s=1e-9)


def test_no_integer_split_is_infeasible_in_column_mode_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """One A100 and two T4s, three 9 GB layers: the T4 pair passes the memory test (30 GB) but no
    split fits it (18 GB on one 15 GB card), so 2 replicas do not exist. Column generation's LP
    takes that pair before it is solved; its integer step then finds no 2 replicas, and that is the
    exact recursion's error type (InfeasibleError, exit code 3), not bad input."""
    from partitioner.errors import InfeasibleError

    layers = [{"name": "layer", "repeat": 3, "cost": {"a100-40gb": 1.4e-3, "t4": 7.5e-3}, "memory_gb": 9.0,
               "out_bytes": 262144}]
    model = ModelSpec.model_validate({"name": "m", "layers": layers, "workload": {"batch": 4, "in_flight": 1}})
    devices = [{"name": "big", "gpu": "a100-40gb", "node": "a"}, {"name": "s0", "gpu": "t4", "node": "b"},
               {"name": "s1", "gpu": "t4", "node": "c"}]
    cluster = ClusterSpec.model_validate({"devices": devices, "links": {
        "intra_node": "pcie4", "inter_node": {"latency_ms": 1.0, "bandwidth_gb_s": 0.125}}})
    with pytest.raises(InfeasibleError, match="cannot hold 2 replicas"):
        plan_deployment(model, cluster, replicas=2, tp="off")
    monkeypatch.setattr(rep, "MAX_STATES", 1)
    with pytest.raises(InfeasibleError, match="cannot hold 2 replicas"):
        plan_deployment(model, cluster, replicas=2, tp="off")
    assert len(plan_deployment(model, cluster, replicas=1, tp="off").stages) >= 1
