"""What `partition fleet` may add to what you own: offers of GPU types, boxes, links, the target.

An `Offer` is one GPU type you may add: up to `max_count` cards at `usd_h` dollars per card-hour,
packed `box` cards to a machine (a box is a node of the cluster; the cards of one box share its
`intra` link, boxes reach each other and your own nodes over `inter`). A `Target` is what the fleet
must serve: output tokens/s, or N users (sequences in flight at once) under the TPOT/TTFT limits,
and/or an hourly budget. All of it is plain data: the search (partitioner.fleets.search) is pure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from partitioner.errors import InputError

__all__ = ["Offer", "Target", "parse_counts", "MAX_CANDIDATES"]

#: The most fleets one search may enumerate (Π (max_count + 1) over offers).
MAX_CANDIDATES = 1_000_000


@dataclass(frozen=True)
class Offer:
    """One GPU type on the market."""

    gpu: str  # GPU id (presets/gpus.yaml)
    max_count: int  # cards you may add, 0..max_count
    usd_h: float  # dollars per card-hour (the rental at the chosen tier, or cluster.yaml `prices:`)
    box: int = 1  # cards per machine


@dataclass(frozen=True)
class Target:
    """What the fleet must reach. `tokens_per_s` and `users` are floors (the cheapest fleet that
    meets them is the answer); `budget_usd_h` alone asks for the most tokens/s within it, and with
    a floor it caps the cost. TPOT and TTFT limits bound every plan the planner considers."""

    tokens_per_s: float | None = None
    users: int | None = None
    tpot_ms: float | None = None
    ttft_ms: float | None = None
    budget_usd_h: float | None = None

    @property
    def mode(self) -> str:
        """"cheapest" (a floor is given) or "most" (only a budget)."""
        return "cheapest" if self.tokens_per_s is not None or self.users is not None else "most"

    def need_tokens_per_s(self) -> float:
        """The least tokens/s a meeting fleet has: the floor, and N users at TPOT <= the limit
        decode N / TPOT >= N / limit tokens/s (each user gets one token per TPOT)."""
        need = self.tokens_per_s or 0.0
        if self.users is not None and self.tpot_ms is not None:
            need = max(need, self.users / (self.tpot_ms / 1e3))
        return need

    def check(self) -> Target:
        """self, or InputError naming the bad field."""
        for name in ("tokens_per_s", "tpot_ms", "ttft_ms", "budget_usd_h"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value > 0):
                raise InputError(f"--{name.replace('_', '-').replace('-usd-h', '-per-hour')} must be a finite number > 0 "
                                 f"(got {value!r})")
        if self.users is not None and self.users < 1:
            raise InputError(f"--users must be an integer >= 1 (got {self.users!r})")
        if self.tokens_per_s is None and self.users is None and self.budget_usd_h is None:
            raise InputError("a fleet needs a target: --tokens-per-s, --users (with --tpot-ms) or --budget-per-hour")
        return self


def parse_counts(text: str, option: str) -> dict[str, int]:
    """``"l4:4,a100-80gb:2"`` -> {"l4": 4, "a100-80gb": 2}; InputError naming `option` otherwise."""
    out: dict[str, int] = {}
    for part in (p.strip() for p in text.split(",")):
        gpu, sep, count = part.partition(":")
        if not sep or not gpu or not count.strip().isdigit():
            raise InputError(f"{option}: expected GPU:COUNT[,GPU:COUNT...], e.g. l4:4 (got {part!r})")
        if gpu in out:
            raise InputError(f"{option}: {gpu!r} is given twice")
        n = int(count)
        if n < 0 or n > 64:
            raise InputError(f"{option}: {gpu}: the count must be 0..64 (got {n})")
        out[gpu.strip()] = n
    return out
