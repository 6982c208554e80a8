"""Fleet search over 1,000 candidate fleets, beside planning every one of them (prints a table).

    python benchmarks/fleet.py [--workers 2] [--brute-sample 24]

A market of three GPU types with up to 9 cards each in one machine per type (10 x 10 x 10 = 1,000
fleets) for a small 4-layer model (tests/fleet_cases.py, batches up to 8, so a plan takes about a
second):
per target, the branch and bound of partitioner.fleets.search (planned fleets, pruned fleets, wall
time on the local process pool) against the alternative, a brute force that plans all 1,000,
whose time is estimated from a sample of fleets planned in this process. Target: <= 60 s on 2 cores.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fleet_cases import tiny_model  # noqa: E402

from partitioner.fleets import fleet  # noqa: E402
from partitioner.fleets.api import offers_for  # noqa: E402
from partitioner.fleets.candidates import enumerate_fleets  # noqa: E402
from partitioner.fleets.evaluate import Job, evaluate  # noqa: E402

MARKET = {"gtx-1070": 9, "t4": 9, "l4": 9}
PRICES = {"gtx-1070": {"on_demand_usd_h": 0.08}, "t4": {"on_demand_usd_h": 0.25}}
TARGETS = [("cheapest >= 20k tokens/s", {"tokens_per_s": 20_000.0}),
           ("cheapest >= 64 users at TPOT 20 ms", {"users": 64, "tpot_ms": 20.0}),
           ("most tokens/s within $2/h", {"budget_per_hour": 2.0})]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--brute-sample", type=int, default=24)
    args = ap.parse_args()
    model = tiny_model()
    offers = offers_for(MARKET, tier="on_demand", overrides=PRICES, boxes=dict.fromkeys(MARKET, 9))
    fleets = enumerate_fleets(offers, 0)
    sample = random.Random(0).sample(fleets, args.brute_sample)
    t0 = time.perf_counter()
    for x in sample:
        evaluate(Job(model, None, offers, x, "pcie4", "10gbe", max_batch=8))
    per_plan = (time.perf_counter() - t0) / len(sample)
    print(f"{len(fleets):,} fleets (3 GPU types x 0-9 cards, one machine per type); one plan {per_plan:.2f} s in this process, "
          f"so a brute force takes about {per_plan * len(fleets):,.0f} s on one core")
    print(f"{'target':<38} {'answer':<34} {'planned':>8} {'pruned':>7} {'wall s':>7}  target 60 s")
    for name, target in TARGETS:
        t0 = time.perf_counter()
        r = fleet(model, market=MARKET, prices=PRICES, boxes=dict.fromkeys(MARKET, 9), max_batch=8,
                  workers=args.workers, max_evaluations=1000, **target)
        wall = time.perf_counter() - t0
        o = r.outcome
        answer = (" + ".join(f"{f['count']}x {f['gpu']}" for f in r.added(o.best)) + f" ${o.best.cost_usd_h:.2f}/h"
                  if o.best else "none")
        pruned = o.pruned_bound + o.pruned_memory + o.pruned_budget
        print(f"{name:<38} {answer:<34} {len(o.planned):>8} {pruned:>7} {wall:>7.1f}  "
              f"{'met' if wall <= 60 else 'NOT MET'}{'' if o.proven else ' (not proven)'}")


if __name__ == "__main__":
    main()
