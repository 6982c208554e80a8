"""The seeded replica search (partitioner.deploy.seeds): per-kind homogeneous replicas solved first,
and a serve deployment never below the best of them, whether the search runs to the end, is cut
short after the seeds, or runs as column generation. The per-kind layout is computed here
independently (serve_plan on every homogeneous node set, a 1-D knapsack per kind)."""

from __future__ import annotations

import random

import pytest
from test_replicas_exact import _best_partition
from test_replicas_serve import _instance

import partitioner.deploy.replicas as rep
from partitioner.api import serve_plan
from partitioner.deploy import closing
from partitioner.deploy.plan import plan_deployment
from partitioner.deploy.seeds import kind_seeds, seed_deployment
from partitioner.errors import InfeasibleError
from partitioner.models.cluster import ClusterSpec


def test_kind_seeds_by_hand() -> None:
    # kind 0: 5 nodes, 2 hold the model; kind 1: 3 nodes, none enough; kind 2: 9 nodes, 1 holds it
    room = {0: 2, 1: 4, 2: 1}
    fits = lambda x: any(x[k] >= room[k] for k in range(3) if x[k])  # noqa: E731
    got = kind_seeds((5, 3, 9), fits, max_sizes=4)
    assert got == [(2, 0, 0), (3, 0, 0), (4, 0, 0), (5, 0, 0), (0, 0, 1), (0, 0, 2), (0, 0, 3), (0, 0, 9)]


def test_seed_deployment_is_the_per_kind_knapsack() -> None:
    seeds = [(2, 0), (3, 0), (5, 0), (0, 1), (0, 4)]
    value = {(2, 0): 10.0, (3, 0): 16.0, (5, 0): 25.0, (0, 1): 3.0, (0, 4): 13.0}
    total, chosen = seed_deployment((5, 4), seeds, value.__getitem__)
    assert total == pytest.approx(26.0 + 13.0)  # 2+3 nodes (26) beats all 5 (25); 4 nodes alone (13 > 4·3)
    assert sorted(chosen) == [(0, 4), (2, 0), (3, 0)]
    assert seed_deployment((1, 0), seeds, value.__getitem__) == (0.0, [])  # no seed fits one node


def _per_kind(model, cluster: ClusterSpec) -> float:  # type: ignore[no-untyped-def]
    """Helix's separate pipelines, best form: per GPU kind, the best partition of its one-GPU nodes
    into homogeneous replicas (brute force over set partitions), summed over kinds."""
    total = 0.0
    kinds: dict[str, list[int]] = {}
    for g, d in enumerate(cluster.devices):
        kinds.setdefault(d.gpu, []).append(g)
    for members in kinds.values():
        value: dict[int, float] = {}

        def v(part: list[int], members: list[int] = members) -> float:
            n = len(part)  # nodes of one kind are interchangeable: the value depends on the count only
            if n not in value:
                sub = cluster.model_copy(update={"devices": [cluster.devices[g] for g in members[:n]]})
                try:
                    value[n] = serve_plan(model, sub).serving.tokens_per_s
                except InfeasibleError:
                    value[n] = 0.0
            return value[n]

        total += _best_partition(len(members), None, v)
    return total


def _homogeneous_heavy(seed: int):  # type: ignore[no-untyped-def]
    """_instance with more nodes of fewer kinds (so per-kind replicas are a real alternative)."""
    model, _ = _instance(seed)
    rng = random.Random(100 + seed)
    gpus = rng.sample(["a100-40gb", "l4", "t4"], 2)
    devices = [{"name": f"h{n}", "gpu": gpus[n % 2], "node": f"hm{n}"} for n in range(rng.randint(5, 7))]
    links = {"intra_node": "pcie4", "inter_node": {"latency_ms": rng.choice([0.2, 1.0]), "bandwidth_gb_s": 0.125}}
    return model, ClusterSpec.model_validate({"devices": devices, "links": links, "tp": [1]})


@pytest.mark.parametrize("seed", range(4))
def test_serve_search_is_never_below_the_per_kind_layout(seed: int) -> None:
    model, cluster = _homogeneous_heavy(seed)
    floor = _per_kind(model, cluster)
    d = plan_deployment(model, cluster, replicas="auto", tp="off", objective="serve")
    assert d.tokens_per_s >= floor * (1 - 1e-9)
    assert d.upper_bound_tokens_per_s >= d.tokens_per_s * (1 - 1e-9)


@pytest.mark.parametrize("seed", range(3))
def test_columns_cut_short_after_the_seeds_keep_the_seed_deployment(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Column generation stopped as soon as the seeds are solved (the clock says late from then on):
    the answer is still at least the per-kind layout, the bound at least the exact optimum."""
    model, cluster = _homogeneous_heavy(seed)
    floor = _per_kind(model, cluster)
    exact = plan_deployment(model, cluster, replicas="auto", tp="off", objective="serve")
    monkeypatch.setattr(rep, "MAX_STATES", 1)
    n_seeds, solves = [0], [0]
    real = rep.search_replicas

    def counting(nk, value, **kw):  # type: ignore[no-untyped-def]
        fits, bound = kw["fits"], kw["bound"]
        n_seeds[0] = len(kind_seeds(nk.counts, lambda x: fits(nk.devices(x)) and bound(nk.devices(x)) > 0))

        def count(f):  # type: ignore[no-untyped-def]
            def run(devices):  # type: ignore[no-untyped-def]
                solves[0] += 1
                return f(devices)
            return run

        kw["quick"] = count(kw["quick"])
        return real(nk, count(value), **kw)

    monkeypatch.setattr(closing, "_late", lambda *a, **k: solves[0] >= n_seeds[0])  # late once the seeds are solved
    monkeypatch.setattr(rep, "search_replicas", counting)  # plan_deployment imports it at call time
    d = plan_deployment(model, cluster, replicas="auto", tp="off", objective="serve")
    assert n_seeds[0] > 0
    assert d.stopped == "time_limit"
    assert d.tokens_per_s >= floor * (1 - 1e-9)
    assert d.tokens_per_s <= exact.tokens_per_s * (1 + 1e-9)
    assert d.upper_bound_tokens_per_s >= exact.tokens_per_s * (1 - 1e-9)
