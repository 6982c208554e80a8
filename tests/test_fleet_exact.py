"""`fleet` with the real planner equals a brute force over every fleet × the planner (small markets),
and the fleet bound is never below the planner's answer."""

from __future__ import annotations

import functools

import pytest
from fleet_cases import PRICES, random_case, tiny_model

from partitioner.fleets import fleet, pool
from partitioner.fleets.api import offers_for
from partitioner.fleets.bound import FleetBound
from partitioner.fleets.candidates import enumerate_fleets, fleet_cost
from partitioner.fleets.evaluate import Job, evaluate
from partitioner.fleets.search import RUNNERS_UP

MODEL = tiny_model()
MAX_BATCH = 8  # a real planner limit that keeps each plan small enough for CI
_cached_plan = functools.lru_cache(maxsize=None)(evaluate)


def _plan(job: Job):
    """The planner is deterministic: plan each fleet once (jobs on an own cluster are not hashable)."""
    return _cached_plan(job) if job.own is None else evaluate(job)


@pytest.fixture(autouse=True)
def _cached(monkeypatch):
    monkeypatch.setattr(pool, "evaluate", _plan)


def _brute(case):
    offers = offers_for(case["market"], tier="on_demand", overrides=PRICES_SPEC)
    pts = {x: _plan(Job(MODEL, None, offers, x, "pcie4", "10gbe", tpot_ms=case["tpot_ms"],
                         max_batch=MAX_BATCH))
           for x in enumerate_fleets(offers, 0)}
    cost = {x: fleet_cost(x, offers, 0.0) for x in pts}
    return offers, pts, cost


PRICES_SPEC = {g: {"on_demand_usd_h": p} for g, p in PRICES.items()}


def _kwargs(case):
    kw = {"market": case["market"], "tpot_ms": case["tpot_ms"], "prices": PRICES_SPEC, "workers": 1,
          "max_batch": MAX_BATCH}
    if case["mode"] == "cheapest":
        kw["tokens_per_s"] = case["tokens"]
    elif case["mode"] == "users":
        kw["users"] = case["users"]
    else:
        kw["budget_per_hour"] = case["budget"]
    return kw


@pytest.mark.parametrize("seed", range(56))
def test_fleet_equals_brute_force_over_fleets_times_planner(seed):
    case = random_case(seed)
    _, pts, cost = _brute(case)
    r = fleet(MODEL, **_kwargs(case))
    if case["mode"] == "most":
        good = sorted((x for x in pts if pts[x].feasible and cost[x] <= case["budget"] * (1 + 1e-9)),
                      key=lambda x: (-pts[x].tokens_per_s, cost[x], x))
    else:
        need_tps = case["tokens"] if case["mode"] == "cheapest" else 0.0
        need_users = case["users"] if case["mode"] == "users" else 0
        good = sorted((x for x in pts if pts[x].feasible and pts[x].tokens_per_s >= need_tps * (1 - 1e-9)
                       and pts[x].sequences >= need_users), key=lambda x: (cost[x], -pts[x].tokens_per_s, x))
    got = [s.point.fleet for s in ([r.best] if r.best else []) + list(r.outcome.runners_up)]
    assert r.outcome.proven
    assert got == good[:1 + RUNNERS_UP]
    if r.best is not None:
        assert r.best.point.tokens_per_s == pts[r.best.point.fleet].tokens_per_s
        assert r.to_dict()["cost_per_hour"] == pytest.approx(cost[r.best.point.fleet])


@pytest.mark.parametrize("seed", range(0, 56, 7))
def test_bound_is_never_below_the_planner(seed):
    case = random_case(seed)
    offers, pts, _ = _brute(case)
    bound = FleetBound(MODEL, None, offers, "pcie4", "10gbe", None, "off", MAX_BATCH, case["tpot_ms"], None)
    for x, p in pts.items():
        rate, _ = bound(x)
        assert rate >= p.tokens_per_s * (1 - 1e-9), (x, rate, p.tokens_per_s)
        if p.feasible:
            assert bound.holds(x)


def test_users_target_means_sequences_in_flight():
    r = fleet(MODEL, users=16, tpot_ms=20.0, market={"t4": 2, "gtx-1070": 2}, prices=PRICES_SPEC, workers=1,
              max_batch=MAX_BATCH)
    assert r.best is not None and r.best.point.sequences >= 16 and r.best.point.tpot_s <= 0.020 + 1e-12


def test_prices_of_owned_cards_and_market_on_an_own_cluster():
    from partitioner.models import load_cluster

    own = load_cluster("examples/clusters/own-2x3090.yaml")
    r = fleet(MODEL, budget_per_hour=1.5, own=own, market={"l4": 1}, workers=1, max_batch=MAX_BATCH)
    d = r.to_dict()
    assert d["own"] == {"gpus": ["rtx-3090", "rtx-3090"], "cost_per_hour": pytest.approx(0.2)}
    assert d["market"] == [{"gpu": "l4", "max_count": 1, "usd_per_hour": 0.78, "box": 1}]
    assert d["fleet"] == [{"gpu": "l4", "count": 1}] and d["cost_per_hour"] == pytest.approx(0.98)
