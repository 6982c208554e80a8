"""The request-mix closed form against the event-driven simulator on seeded random instances.

    python benchmarks/mix_agreement.py [SEEDS] [REQUESTS]

Three families, each instance an engine-like pipeline (K = S micro-batches in flight, vLLM V1
without async scheduling; B requests per micro-batch; budgets 2048 / 8192; every prompt and
output length within +-50 % of its mean equally likely):

- prefill: a mean prompt's stage time 3-12x a decode step, prompts 256-2048, outputs 64-384;
- decode: prompts 32-384 costing 0.2-2x a decode step, outputs 128-768.

Loads: "saturated" (every slot busy), "concurrency" (30-90 % of the slots as clients) and
"rate" (20-70 % of the saturated requests/s; the closed form is taken at the simulation's
realised arrival rate). Prints the relative error (model / simulation - 1) of output tokens/s,
total tokens/s, TPOT (vLLM's benchmark definition) and TTFT per instance, and the worst per
family and load. tests/test_chunked_agreement.py runs the first seeds.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Any

import numpy as np

__all__ = ["instance", "errors", "main", "FAMILIES"]

FAMILIES = (("prefill", "saturated"), ("prefill", "rate"), ("decode", "concurrency"), ("decode", "rate"))
SEED_BASE = {"prefill": 7000, "decode": 7500}


def _spread(mean: int) -> Any:
    from partitioner.analysis.chunked import histogram

    return histogram(dict.fromkeys(range(mean // 2, mean * 3 // 2 + 1), 1.0), "tokens")


def instance(seed: int, family: str) -> tuple[Any, Any, Any]:
    """(StepCost, RequestMix, EngineLimits) of one seeded instance of `family` (module doc)."""
    from partitioner.analysis.chunked import EngineLimits, RequestMix, StepCost

    rng = np.random.default_rng(SEED_BASE[family] + seed)
    S = int(rng.integers(1, 9)) if family == "prefill" else int(rng.integers(1, 5))
    base = rng.uniform(5e-3, 40e-3, S)
    if family == "prefill":
        n_in, n_out = int(rng.integers(256, 2048)), int(rng.integers(64, 384))
        per_tok = base * rng.uniform(3, 12) / n_in * rng.uniform(0.8, 1.2, S)
        B = int(rng.integers(8, 33))
    else:
        n_in, n_out = int(rng.integers(32, 384)), int(rng.integers(128, 768))
        per_tok = base * rng.uniform(0.2, 2.0) / n_in * rng.uniform(0.8, 1.2, S)
        B = int(rng.integers(8, 41))
    cost = StepCost(tuple(base), tuple(rng.uniform(0, 3e-4, S)), tuple(per_tok), tuple(rng.uniform(0, 1e-3, S - 1)),
                    tuple(rng.uniform(0, 1e-7, S - 1)), float(rng.uniform(0, 1e-3)))
    return cost, RequestMix(_spread(n_in), _spread(n_out)), EngineLimits(S, B * S, int(rng.choice([2048, 8192])))


def errors(seed: int, family: str, load: str, requests: int = 2000) -> tuple[list[float], Any, Any]:
    """[output tokens/s, total tokens/s, TPOT, TTFT] relative errors of the closed form against
    the simulation of one instance under `load`, with the instance's limits and the closed form."""
    from partitioner.analysis.chunked import steady_state
    from partitioner.simulate.chunked import simulate_mix

    cost, mix, lim = instance(seed, family)
    rng = np.random.default_rng(SEED_BASE[family] + 100 + seed)
    if load == "concurrency":
        mix = replace(mix, concurrency=max(1, int(lim.max_num_seqs * rng.uniform(0.3, 0.9))))
    elif load == "rate":
        mix = replace(mix, request_rate=steady_state(cost, mix, lim).requests_per_s * rng.uniform(0.2, 0.7))
    sim = simulate_mix(cost, mix, lim, requests=requests, seed=seed)
    got = steady_state(cost, replace(mix, request_rate=sim.offered_per_s) if load == "rate" else mix, lim)
    pairs = ((got.output_tokens_per_s, sim.output_tokens_per_s), (got.total_tokens_per_s, sim.total_tokens_per_s),
             (got.tpot_s, sim.tpot_s), (got.ttft_s, sim.ttft_s))
    return [a / b - 1.0 for a, b in pairs], lim, got


def main() -> None:
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    requests = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    print(f"{'family':<8} {'load':<12} {'seed':>4} {'S':>2} {'B':>3} {'C':>5} {'binding':<13} "
          f"{'out':>7} {'total':>7} {'TPOT':>7} {'TTFT':>7}")
    for family, load in FAMILIES:
        worst = [0.0] * 4
        for seed in range(seeds):
            err, lim, got = errors(seed, family, load, requests)
            worst = [max(w, abs(e)) for w, e in zip(worst, err, strict=True)]
            print(f"{family:<8} {load:<12} {seed:>4} {lim.in_flight:>2} {lim.max_num_seqs // lim.in_flight:>3} "
                  f"{lim.token_budget:>5} {got.binding:<13} " + " ".join(f"{e * 100:>+6.1f}%" for e in err), flush=True)
        print(f"{family:<8} {load:<12} {'worst':>4} {'':>2} {'':>3} {'':>5} {'':<13} "
              + " ".join(f"{w * 100:>6.1f}%" for w in worst), flush=True)


if __name__ == "__main__":
    main()
