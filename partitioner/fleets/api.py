"""`fleet(model, ...)`: the typed entry point of `partition fleet` and of deploy scripts (module doc of partitioner.fleets)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from partitioner.errors import InputError
from partitioner.fleets.market import Offer, Target
from partitioner.fleets.search import Scored, SearchOutcome

__all__ = ["fleet", "FleetResult", "offers_for", "FLEET_FORMAT"]

FLEET_FORMAT = "partitioner.fleets/1"


def offers_for(market: dict[str, int], *, tier: str, overrides: dict[str, Any] | None,
               boxes: dict[str, int] | None = None) -> tuple[Offer, ...]:
    """The offers of `market` (GPU id -> most cards), priced at `tier`; InputError for an unknown GPU
    or one without a price at that tier."""
    from partitioner.models import catalog
    from partitioner.models.prices import price_of

    out = []
    for gpu, n in market.items():
        if gpu not in catalog.ids("gpus"):
            raise InputError(f"--market: {catalog.unknown_message('GPU id', gpu, catalog.ids('gpus'))}")
        usd = price_of(gpu, overrides).rental(tier)
        if usd is None:
            raise InputError(f"--market: {gpu} has no {tier.replace('_', '-')} price in the catalogue "
                             f"(`partition catalog prices`); give one in cluster.yaml `prices:` or --prices")
        box = (boxes or {}).get(gpu, 1)
        if box < 1:
            raise InputError(f"--box: {gpu}: cards per box must be >= 1 (got {box})")
        out.append(Offer(gpu, int(n), float(usd), int(box)))
    for gpu in boxes or {}:
        if gpu not in market:
            raise InputError(f"--box: {gpu!r} is not in --market ({', '.join(market) or 'empty'})")
    return tuple(out)


@dataclass(frozen=True)
class FleetResult:
    """The search's outcome with the offers and target it ran on (JSON: `to_dict`)."""

    outcome: SearchOutcome
    offers: tuple[Offer, ...]
    target: Target
    own_gpus: tuple[str, ...]
    own_usd_h: float
    tier: str
    inter: str
    intra: str

    @property
    def best(self) -> Scored | None:
        return self.outcome.best

    def added(self, s: Scored) -> list[dict[str, Any]]:
        return [{"gpu": o.gpu, "count": x} for o, x in zip(self.offers, s.point.fleet, strict=True) if x]

    def _row(self, s: Scored, with_plan: bool) -> dict[str, Any]:
        p = s.point
        row: dict[str, Any] = {
            "fleet": self.added(s), "cost_per_hour": s.cost_usd_h, "gpus": p.gpus,
            "serving": {"tokens_per_s": p.tokens_per_s, "tpot_s": p.tpot_s, "ttft_s": p.ttft_s,
                        "sequences": p.sequences, "replicas": p.replicas, "proven": p.proven},
            "tokens_per_s_bound": s.bound,
        }
        if with_plan:
            row["plan"] = p.plan
        return row

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready and deterministic (no timings)."""
        o = self.outcome
        best = self._row(o.best, True) if o.best is not None else None
        return {
            "format": FLEET_FORMAT,
            "mode": o.mode,
            "target": {"tokens_per_s": self.target.tokens_per_s, "users": self.target.users,
                       "tpot_s": None if self.target.tpot_ms is None else self.target.tpot_ms / 1e3,
                       "ttft_s": None if self.target.ttft_ms is None else self.target.ttft_ms / 1e3,
                       "budget_per_hour": self.target.budget_usd_h},
            "own": {"gpus": list(self.own_gpus), "cost_per_hour": self.own_usd_h},
            "market": [{"gpu": f.gpu, "max_count": f.max_count, "usd_per_hour": f.usd_h, "box": f.box}
                       for f in self.offers],
            "tier": self.tier,
            "links": {"intra": self.intra, "inter": self.inter},
            "found": o.best is not None,
            "fleet": best["fleet"] if best else None,
            "cost_per_hour": best["cost_per_hour"] if best else None,
            "serving": best["serving"] if best else None,
            "plan": best["plan"] if best else None,
            "runners_up": [self._row(s, False) for s in o.runners_up],
            "proof": {"proven": o.proven, "stopped": o.stopped or None, "candidates": o.candidates,
                      "planned": len(o.planned), "pruned_by_bound": o.pruned_bound,
                      "pruned_by_memory": o.pruned_memory, "pruned_by_budget": o.pruned_budget,
                      "cost_lower_bound": o.cost_lower_bound, "tokens_per_s_upper_bound": o.tokens_upper_bound},
            "planned": [{"fleet": self.added(s), "cost_per_hour": s.cost_usd_h, "feasible": s.point.feasible,
                         "tokens_per_s": s.point.tokens_per_s, "tpot_s": s.point.tpot_s} for s in o.planned],
        }


def _own_cost(own: Any, overrides: dict[str, Any] | None) -> float:
    from partitioner.models.prices import hourly

    if own is None:
        return 0.0
    return math.fsum(hourly(d.gpu_id, "on_demand", True, overrides) or 0.0 for d in own.devices)


def fleet(model: Any, *, target: Target | dict[str, Any] | None = None, tokens_per_s: float | None = None,
          users: int | None = None,
          tpot_ms: float | None = None, ttft_ms: float | None = None, budget_per_hour: float | None = None,
          own: Any = None, market: dict[str, int] | None = None, spot: bool = False,
          boxes: dict[str, int] | None = None, link: str = "10gbe", box_link: str = "pcie4",
          prices: dict[str, Any] | None = None, engine: str | None = None, tp: str | None = None,
          max_batch: int | None = None, workers: int | None = None, ray: str | None = None,
          max_evaluations: int | None = None, time_limit_s: float | None = None,
          plan_time_limit_s: float | None = None,
          progress: Callable[[int, int, float], None] | None = None) -> FleetResult:
    """The cheapest fleet meeting the target, or the most tokens/s within the budget (module doc of
    partitioner.fleets). `target` (a Target, or a mapping of its fields) may stand for the five target
    keywords; `own` is a cluster (path or ClusterSpec) or None; `prices` overrides the catalogue per
    GPU id (cluster.yaml `prices:` too, which `prices` wins over)."""
    from partitioner.api import load_inputs
    from partitioner.fleets.bound import FleetBound
    from partitioner.fleets.candidates import enumerate_fleets, fleet_cost
    from partitioner.fleets.evaluate import Job
    from partitioner.fleets.pool import make_runner
    from partitioner.fleets.search import search
    from partitioner.models import catalog

    start = time.monotonic()
    if target is None:
        target = Target(tokens_per_s, users, tpot_ms, ttft_ms, budget_per_hour)
    elif isinstance(target, dict):
        unknown = set(target) - {"tokens_per_s", "users", "tpot_ms", "ttft_ms", "budget_usd_h"}
        if unknown:
            raise InputError(f"target: unknown key(s) {', '.join(sorted(unknown))}; valid: tokens_per_s, users, "
                             "tpot_ms, ttft_ms, budget_usd_h")
        target = Target(**target)
    if any(v is not None for v in (tokens_per_s, users, budget_per_hour)) and target != Target(
            tokens_per_s, users, tpot_ms, ttft_ms, budget_per_hour):
        raise InputError("give the target either as target= or as keywords, not both")
    target = target.check()
    tpot_ms, ttft_ms = target.tpot_ms, target.ttft_ms
    if own is not None:
        model, own = load_inputs(model, own)
    else:
        model, _ = load_inputs(model, None)
    for name, value in (("--link", link), ("--box-link", box_link)):
        if value not in catalog.ids("links"):
            raise InputError(f"{name}: {catalog.unknown_message('link id', value, catalog.ids('links'))}")
    overrides = {**(dict(own.prices) if own is not None else {}), **(prices or {})}
    tier = "spot" if spot else "on_demand"
    offers = offers_for(market or {}, tier=tier, overrides=overrides, boxes=boxes)
    own_usd = _own_cost(own, overrides)
    fleets = enumerate_fleets(offers, 0 if own is None else len(own.devices))
    # the planner's TP mode (partitioner.deploy.plan: None is "auto" when cluster.yaml has tp:, else "off");
    # the bound takes every TP group ("auto") unless TP is off
    effective_tp = tp or ("auto" if own is not None and own.tp is not None else "off")
    bound = FleetBound(model, own, offers, box_link, link, engine, "off" if effective_tp == "off" else "auto",
                       max_batch, tpot_ms, ttft_ms)

    def job(x: tuple[int, ...]) -> Job:
        return Job(model, own, offers, x, box_link, link, engine, tp, tpot_ms, ttft_ms, max_batch, plan_time_limit_s)

    def bound_of(x: tuple[int, ...]) -> tuple[float, bool]:
        rate, _ = bound(x)
        return rate, bound.holds(x)

    runner = make_runner(workers, ray)
    try:
        outcome = search(fleets, lambda x: fleet_cost(x, offers, own_usd), bound_of, job, runner.map, target,
                         max_evaluations=max_evaluations,
                         deadline=None if time_limit_s is None else start + time_limit_s, progress=progress)
    finally:
        runner.close()
    own_gpus = tuple(d.gpu_id for d in own.devices) if own is not None else ()
    return FleetResult(outcome, offers, target, own_gpus, own_usd, tier, link, box_link)
