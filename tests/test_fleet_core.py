"""partitioner.fleets: hand-computed pieces, every error path, and the search against a brute force on tables."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from partitioner.errors import InputError
from partitioner.fleets.candidates import boxes, enumerate_fleets, fleet_cluster, fleet_cost
from partitioner.fleets.evaluate import Point
from partitioner.fleets.market import Offer, Target, parse_counts
from partitioner.fleets.search import RUNNERS_UP, WAVE, meets, search
from partitioner.models import load_cluster
from partitioner.models.prices import hourly, price_of


def test_counts_boxes_costs_by_hand():
    offers = (Offer("l4", 2, 0.78), Offer("a100-80gb", 1, 2.45, box=1))
    assert enumerate_fleets(offers, own_gpus=0) == [(0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]
    assert enumerate_fleets(offers, own_gpus=2)[0] == (0, 0)
    assert boxes(5, 2) == [2, 2, 1] and boxes(4, 4) == [4] and boxes(0, 3) == []
    assert fleet_cost((2, 1), offers, 0.2) == pytest.approx(0.2 + 2 * 0.78 + 2.45)


def test_parse_counts_and_errors():
    assert parse_counts("l4:4, a100-80gb:2", "--market") == {"l4": 4, "a100-80gb": 2}
    for bad, match in (("l4", "expected GPU:COUNT"), ("l4:x", "expected"), ("l4:1,l4:2", "given twice"),
                       ("l4:65", "0..64"), (":3", "expected")):
        with pytest.raises(InputError, match=match):
            parse_counts(bad, "--market")


def test_target_checks():
    with pytest.raises(InputError, match="needs a target"):
        Target().check()
    with pytest.raises(InputError, match="tokens-per-s"):
        Target(tokens_per_s=float("nan")).check()
    with pytest.raises(InputError, match="--users"):
        Target(users=0).check()
    assert Target(users=10, tpot_ms=50).check().need_tokens_per_s() == pytest.approx(200.0)
    assert Target(budget_usd_h=3).mode == "most" and Target(tokens_per_s=1, budget_usd_h=3).mode == "cheapest"


def test_prices_catalogue_and_overrides():
    assert price_of("l4").on_demand_usd_h == pytest.approx(0.78)
    assert price_of("l4").source.startswith("[R]") and price_of("l4").date == "2026-03-10"
    assert price_of("t4").on_demand_usd_h is None
    assert price_of("t4", {"t4": {"spot_usd_h": 0.1}}).spot_usd_h == 0.1
    assert hourly("rtx-3090", "on_demand", True, {"rtx-3090": {"owned_usd_h": 0.1}}) == 0.1
    assert hourly("rtx-3090", "spot", False) == pytest.approx(0.22)


def test_offers_refuse_unknown_and_unpriced():
    from partitioner.fleets.api import offers_for

    with pytest.raises(InputError, match="unknown GPU id 'l5'"):
        offers_for({"l5": 1}, tier="on_demand", overrides=None)
    with pytest.raises(InputError, match="t4 has no on-demand price"):
        offers_for({"t4": 1}, tier="on_demand", overrides=None)
    with pytest.raises(InputError, match="--box: 'l4' is not in --market"):
        offers_for({"a100-80gb": 1}, tier="on_demand", overrides=None, boxes={"l4": 2})
    assert offers_for({"t4": 2}, tier="spot", overrides={"t4": {"spot_usd_h": 0.1}}, boxes={"t4": 2}) == (
        Offer("t4", 2, 0.1, 2),)


def test_fleet_cluster_keeps_own_and_links_new_boxes():
    own = load_cluster("examples/clusters/seed.yaml")  # intra pcie3, inter 10gbe
    c = fleet_cluster(own, (3,), (Offer("l4", 3, 0.78, box=2),), intra="pcie4", inter="10gbe")
    names = [d.name for d in c.devices]
    assert names[:4] == [d.name for d in own.devices] and names[4:] == ["add-l4-0-0", "add-l4-0-1", "add-l4-1-0"]
    new = {d.name: d for d in c.devices}
    # inside an added box: pcie4 (the seed's intra default is pcie3, so a pair says so); to the rest 10gbe
    assert c.link(new["add-l4-0-0"], new["add-l4-0-1"]).bandwidth_gb_s == 25
    assert c.link(new["add-l4-0-0"], new["add-l4-1-0"]).bandwidth_gb_s == pytest.approx(1.125)
    assert c.link(new["node03-3090"], new["node03-1070"]).bandwidth_gb_s == 12  # own links unchanged
    assert c.prices == own.prices


def _table_case(seed: int):
    rng = random.Random(seed)
    offers = tuple(Offer(f"g{i}", rng.randint(1, 3), round(rng.uniform(0.1, 3.0), 2)) for i in range(rng.randint(1, 3)))
    fleets = enumerate_fleets(offers, own_gpus=rng.choice([0, 1]))
    value = {x: (rng.uniform(0, 1000) * sum(x) if rng.random() > 0.15 else 0.0) for x in fleets}
    bound = {x: value[x] * rng.uniform(1.0, 1.5) + (0 if value[x] else rng.uniform(0, 500)) for x in fleets}
    holds = {x: value[x] > 0 or rng.random() < 0.5 for x in fleets}
    seqs = {x: rng.randint(1, 300) for x in fleets}
    return offers, fleets, value, bound, holds, seqs


def _brute(fleets, cost, value, seqs, target):
    pts = {x: Point(x, value[x] > 0, value[x], sequences=seqs[x]) for x in fleets}
    if target.mode == "cheapest":
        good = [x for x in fleets if meets(pts[x], target) and (target.budget_usd_h is None or cost(x) <= target.budget_usd_h * (1 + 1e-9))]
        return sorted(good, key=lambda x: (cost(x), -value[x], x))
    good = [x for x in fleets if value[x] > 0 and cost(x) <= target.budget_usd_h * (1 + 1e-9)]
    return sorted(good, key=lambda x: (-value[x], cost(x), x))


@pytest.mark.parametrize("seed", range(300))
def test_search_equals_brute_force_on_tables(seed):
    """Any sound bound: the answer and runners-up equal a brute force over every fleet."""
    offers, fleets, value, bound, holds, seqs = _table_case(seed)
    rng = random.Random(seed + 1)
    target = rng.choice([Target(tokens_per_s=rng.uniform(100, 2000)), Target(users=rng.randint(1, 300)),
                         Target(budget_usd_h=rng.uniform(0.5, 6)), Target(tokens_per_s=300, budget_usd_h=4.0)])
    cost = lambda x: fleet_cost(x, offers, 0.0)  # noqa: E731
    calls: list[int] = []

    def run(jobs):
        calls.append(len(jobs))
        assert len(jobs) <= WAVE
        return [Point(j, value[j] > 0, value[j], sequences=seqs[j]) for j in jobs]

    out = search(fleets, cost, lambda x: (bound[x], holds[x] or value[x] > 0), lambda x: x, run, target)
    want = _brute(fleets, cost, value, seqs, target)
    assert out.proven
    got = [s.point.fleet for s in ([out.best] if out.best else []) + list(out.runners_up)]
    assert got == want[:1 + RUNNERS_UP]


def test_search_stopped_by_work_budget_keeps_a_true_bound():
    offers = (Offer("a", 6, 1.0), Offer("b", 6, 1.7))
    fleets = enumerate_fleets(offers, 0)
    value = {x: 100.0 * x[0] + 180.0 * x[1] for x in fleets}
    cost = lambda x: fleet_cost(x, offers, 0.0)  # noqa: E731
    run = lambda jobs: [Point(j, True, value[j]) for j in jobs]  # noqa: E731
    target = Target(tokens_per_s=900)
    loose = lambda x: (2 * value[x] + 1000, True)  # noqa: E731
    full = search(fleets, cost, loose, lambda x: x, run, target)
    cut = search(fleets, cost, loose, lambda x: x, run, target, max_evaluations=WAVE)
    assert full.proven and not cut.proven and cut.stopped == f"work budget of {WAVE} plans"
    assert len(cut.planned) == WAVE
    assert cut.cost_lower_bound is not None and cut.cost_lower_bound <= full.best.cost_usd_h + 1e-9
    most = Target(budget_usd_h=8.0)
    cut2 = search(fleets, cost, loose, lambda x: x, run, most, max_evaluations=1)
    full2 = search(fleets, cost, loose, lambda x: x, run, most)
    assert cut2.tokens_upper_bound >= full2.best.point.tokens_per_s - 1e-9


def test_search_ctrl_c_returns_the_best_so_far():
    offers = (Offer("a", 20, 1.0),)
    fleets = enumerate_fleets(offers, 0)
    waves = []

    def run(jobs):
        waves.append(jobs)
        if len(waves) == 2:
            raise KeyboardInterrupt
        return [Point(j, True, 10.0 * j[0]) for j in jobs]

    out = search(fleets, lambda x: float(x[0]), lambda x: (10.0 * x[0] + 100, True), lambda x: x, run,
                 Target(budget_usd_h=20.0))
    assert out.stopped == "interrupted" and not out.proven
    assert out.best.point.fleet == (20,) and len(out.planned) == WAVE  # the first wave's answers are kept
    assert math.isfinite(out.tokens_upper_bound) and out.tokens_upper_bound >= 200


def test_enumerate_refuses_a_huge_market():
    offers = tuple(Offer(f"g{i}", 64, 1.0) for i in range(4))
    with pytest.raises(InputError, match="fleets"):
        enumerate_fleets(offers, 0)
    assert len(list(itertools.islice(enumerate_fleets(offers[:2], 0), 3))) == 3
