"""Marginal value: what one change to your cluster is worth, "which card next".

For each change, adding one card of a GPU type (its own box, joined by the fleet's link) or
removing one of your devices, the serve plan of the changed cluster (partitioner.fleets.evaluate)
gives the new tokens/s; the change in dollars per hour (the added card's rental, or the removed
card's running cost saved) over the change in tokens/s is the price of one more token/s. Rows
come sorted: additions by dollars per extra token/s (the best buy first; an addition that gains
nothing last), then removals by the tokens/s they lose (the cheapest loss first).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from partitioner.errors import InputError
from partitioner.fleets.evaluate import Job, Point

__all__ = ["Change", "parse_changes", "what_if"]


@dataclass(frozen=True)
class Change:
    """One change and its result: tokens/s before and after, dollars per hour gained (+) or saved (−)."""

    kind: str  # "add" | "remove"
    what: str  # GPU id or device name
    tokens_per_s: float
    delta_tokens_per_s: float
    delta_usd_h: float
    feasible: bool
    reason: str = ""

    @property
    def usd_per_token_s(self) -> float | None:
        """Dollars per hour for each extra token/s (additions that gain tokens/s)."""
        if self.kind != "add" or self.delta_tokens_per_s <= 0:
            return None
        return self.delta_usd_h / self.delta_tokens_per_s

    def to_dict(self) -> dict[str, Any]:
        return {"change": f"{self.kind}:{self.what}", "feasible": self.feasible, "tokens_per_s": self.tokens_per_s,
                "delta_tokens_per_s": self.delta_tokens_per_s, "delta_usd_per_hour": self.delta_usd_h,
                "usd_per_hour_per_token_s": self.usd_per_token_s, "reason": self.reason or None}


def parse_changes(specs: tuple[str, ...] | list[str]) -> list[tuple[str, str]]:
    """``("add:l4,a100-80gb", "remove:gpu3")`` -> [("add", "l4"), ("add", "a100-80gb"), ("remove", "gpu3")]."""
    out: list[tuple[str, str]] = []
    for spec in specs:
        kind, sep, rest = spec.partition(":")
        if kind not in ("add", "remove") or not sep or not rest:
            raise InputError(f"--what-if: expected add:GPU[,GPU...] or remove:DEVICE[,DEVICE...] (got {spec!r})")
        for item in (s.strip() for s in rest.split(",")):
            if not item:
                raise InputError(f"--what-if: an empty name in {spec!r}")
            if (kind, item) not in out:
                out.append((kind, item))
    return out


def _order(c: Change) -> tuple[Any, ...]:
    if c.kind == "add":
        price = c.usd_per_token_s
        return (0, math.inf if price is None else price, -c.delta_tokens_per_s, c.what)
    return (1, -c.delta_tokens_per_s, c.what)


def what_if(model: Any, cluster: Any, changes: list[tuple[str, str]], *, tier: str = "on_demand",
            link: str = "10gbe", engine: str | None = None, tp: str | None = None,
            tpot_ms: float | None = None, ttft_ms: float | None = None, max_batch: int | None = None,
            time_limit_s: float | None = None, run: Any = None) -> tuple[Point, list[Change]]:
    """(the cluster as it is, one row per change sorted as the module doc says)."""
    from partitioner.fleets.api import _own_cost, offers_for
    from partitioner.fleets.pool import SerialRunner
    from partitioner.models import catalog
    from partitioner.models.prices import hourly
    from partitioner.models.whatif import without_device

    overrides = dict(cluster.prices)
    adds = [what for kind, what in changes if kind == "add"]
    for kind, what in changes:
        if kind == "remove" and what not in {d.name for d in cluster.devices}:
            raise InputError(f"--what-if remove:{what}: {catalog.unknown_message('device', what, [d.name for d in cluster.devices])}")
    offers = offers_for(dict.fromkeys(adds, 1), tier=tier, overrides=overrides) if adds else ()
    intra = cluster.links.intra_node if isinstance(cluster.links.intra_node, str) else "pcie4"

    def job(own: Any, fleet: tuple[int, ...]) -> Job:
        return Job(model, own, offers, fleet, intra, link, engine, tp, tpot_ms, ttft_ms, max_batch, time_limit_s)

    zero = tuple(0 for _ in offers)
    jobs = [job(cluster, zero)]
    jobs += [job(cluster, tuple(int(j == i) for j in range(len(offers)))) for i in range(len(offers))]
    removes = [what for kind, what in changes if kind == "remove"]
    jobs += [job(without_device(cluster, name), zero) for name in removes]
    points = (run or SerialRunner().map)(jobs)
    base, rows = points[0], []
    for offer, p in zip(offers, points[1:1 + len(offers)], strict=True):
        rows.append(Change("add", offer.gpu, p.tokens_per_s, p.tokens_per_s - base.tokens_per_s, offer.usd_h,
                           p.feasible, p.reason))
    own_usd = _own_cost(cluster, overrides)
    for name, p in zip(removes, points[1 + len(offers):], strict=True):
        dev = next(d for d in cluster.devices if d.name == name)
        saved = hourly(dev.gpu_id, tier, True, overrides) or 0.0
        rows.append(Change("remove", name, p.tokens_per_s, p.tokens_per_s - base.tokens_per_s,
                           -min(saved, own_usd), p.feasible, p.reason))
    return base, sorted(rows, key=_order)
