"""Fleets: count vectors over the offers, their hourly cost, and the cluster each one is.

A fleet adds x_i cards of offer i (0 <= x_i <= max_count) to the cluster you own. Its cost per hour
is the running cost of your own cards (presets/prices.yaml `owned_usd_h`, 0 unless set) plus
Σ x_i·usd_h_i. The cluster of a fleet keeps your devices, nodes and links as they are; the added
cards of offer i fill boxes of `box` cards (the last one may hold fewer), each box a node named
``add-<gpu>-<k>``, its cards joined by the `intra` link and every box joined to every other node by
the `inter` link (explicit device pairs where your cluster's own defaults differ).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from partitioner.errors import InputError
from partitioner.fleets.market import MAX_CANDIDATES, Offer

__all__ = ["Fleet", "enumerate_fleets", "fleet_cost", "fleet_cluster", "boxes"]

Fleet = tuple[int, ...]  # cards added per offer, in offer order


def enumerate_fleets(offers: tuple[Offer, ...], own_gpus: int) -> list[Fleet]:
    """Every count vector, the empty fleet only when you own GPUs; InputError past MAX_CANDIDATES."""
    size = math.prod(o.max_count + 1 for o in offers)
    if size > MAX_CANDIDATES:
        raise InputError(f"--market spans {size:,} fleets (at most {MAX_CANDIDATES:,}): lower the counts")
    out = [tuple(v) for v in itertools.product(*(range(o.max_count + 1) for o in offers))]
    return [v for v in out if own_gpus > 0 or any(v)]


def fleet_cost(fleet: Fleet, offers: tuple[Offer, ...], own_usd_h: float) -> float:
    """Dollars per hour: your cards' running cost plus the added cards' rental."""
    return own_usd_h + math.fsum(x * o.usd_h for x, o in zip(fleet, offers, strict=True))


def boxes(count: int, box: int) -> list[int]:
    """Cards per machine for `count` cards packed `box` to a machine: [box, box, ..., rest]."""
    full, rest = divmod(count, box)
    return [box] * full + ([rest] if rest else [])


def _link_id(link: Any) -> str | None:
    return link if isinstance(link, str) else None


def fleet_cluster(own: Any, fleet: Fleet, offers: tuple[Offer, ...], *, intra: str, inter: str,
                  reserve_gb: float | None = None) -> Any:
    """The ClusterSpec of `own` plus the fleet's boxes (module doc). `own` may be None."""
    from partitioner.models.cluster import ClusterSpec, Links, resolve_link

    devices: list[dict[str, Any]] = [] if own is None else [d.model_dump(by_alias=True, exclude_none=True)
                                                             for d in own.devices]
    added: list[tuple[str, str]] = []  # (device name, node)
    for offer, x in zip(offers, fleet, strict=True):
        for k, n in enumerate(boxes(x, offer.box)):
            node = f"add-{offer.gpu}-{k}"
            for j in range(n):
                name = f"{node}-{j}"
                devices.append({"name": name, "gpu": offer.gpu, "node": node})
                added.append((name, node))
    if own is None:
        data: dict[str, Any] = {"name": "fleet", "devices": devices,
                                "links": Links(intra_node=intra, inter_node=inter).model_dump()}
        if reserve_gb is not None:
            data["reserve_gb"] = reserve_gb
        return ClusterSpec.model_validate(data)
    pairs = [p.model_dump(by_alias=True) for p in own.pairs]
    own_intra, own_inter = _link_id(own.links.intra_node), _link_id(own.links.inter_node)
    if added and (own_intra != intra or own_inter != inter):
        node_of = {d["name"]: d["node"] for d in devices}
        for name, node in added:
            for other, other_node in node_of.items():
                if other == name:
                    continue
                want = intra if other_node == node else inter
                have = own.links.intra_node if other_node == node else own.links.inter_node
                if _link_id(have) != want:
                    spec = resolve_link(want)
                    for a, b in ((name, other), (other, name)):
                        pairs.append({"from": a, "to": b, "latency_ms": spec.latency_ms,
                                      "bandwidth_gb_s": spec.bandwidth_gb_s})
    data = own.model_dump(by_alias=True, exclude_none=True)
    data.update(devices=devices, pairs=_unique_pairs(pairs))
    return ClusterSpec.model_validate(data)


def _unique_pairs(pairs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for p in pairs:
        seen.setdefault((p["from"], p["to"]), p)
    return list(seen.values())
