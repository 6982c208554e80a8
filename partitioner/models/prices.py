"""What a GPU costs: the shipped price catalogue (presets/prices.yaml) and cluster.yaml `prices:`.

A `PriceSpec` per GPU id gives the rental per GPU-hour on demand and on the spot market, the
purchase price, and the running cost of a card already owned (power, hosting; 0 by default).
cluster.yaml `prices:` maps GPU ids to partial specs that override the catalogue field by field.
Every figure of the catalogue carries its source and date (presets/prices.yaml header).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import field_validator

from partitioner.models import catalog
from partitioner.models.fields import Frozen, NonNegative

__all__ = ["PriceSpec", "Tier", "TIERS", "price_of", "priced_ids", "hourly"]

Tier = Literal["on_demand", "spot"]
TIERS: tuple[str, ...] = ("on_demand", "spot")


class PriceSpec(Frozen):
    """One GPU's prices in US dollars; None: not offered at that tier (or not known)."""

    on_demand_usd_h: NonNegative | None = None  # rental per GPU-hour, on demand
    spot_usd_h: NonNegative | None = None  # rental per GPU-hour, spot / preemptible
    purchase_usd: NonNegative | None = None  # one card, new
    owned_usd_h: NonNegative = 0.0  # running cost per hour of a card you own
    source: str = ""
    date: str = ""

    @field_validator("date")
    @classmethod
    def _iso(cls, value: str) -> str:
        if value and not (len(value) == 10 and value[4] == value[7] == "-" and value.replace("-", "").isdigit()):
            raise ValueError(f"must be a date YYYY-MM-DD (got {value!r})")
        return value

    def rental(self, tier: str) -> float | None:
        """The hourly rental at `tier` ("on_demand" or "spot")."""
        return self.on_demand_usd_h if tier == "on_demand" else self.spot_usd_h


def priced_ids() -> tuple[str, ...]:
    """The GPU ids the shipped catalogue prices."""
    return catalog.ids("prices")


def price_of(gpu_id: str, overrides: dict[str, Any] | None = None) -> PriceSpec:
    """The catalogue's price of `gpu_id`, field by field overridden by `overrides[gpu_id]`
    (a PriceSpec or a mapping); a GPU the catalogue does not price has no figures but the override's."""
    base: dict[str, Any] = dict(catalog.entries("prices").get(gpu_id, {}))
    extra = (overrides or {}).get(gpu_id)
    if extra is not None:
        given = extra.model_dump(exclude_unset=True) if isinstance(extra, PriceSpec) else dict(extra)
        base.update(given)
    return PriceSpec.model_validate(base)


def hourly(gpu_id: str, tier: str, owned: bool, overrides: dict[str, Any] | None = None) -> float | None:
    """Dollars per hour of one card: its running cost if owned, else its rental at `tier` (None: not for rent)."""
    spec = price_of(gpu_id, overrides)
    return float(spec.owned_usd_h) if owned else spec.rental(tier)
