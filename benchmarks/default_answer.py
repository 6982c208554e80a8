"""The default answer of `partition plan` (no --objective) on the bundled model x cluster pairs.

    python benchmarks/default_answer.py [--pairs all|quick]

For each decode pair: the objective that ran, the answer's tokens/s and layout (one pipeline or
separate pipelines), the paper's least-τ_max plan's tokens/s at the workload's batch and in-flight
count, the worst one-machine loss, and the wall time (partitioner.planning.answer). Wall times
depend on the machine's load; the tokens/s do not (no CP-SAT in the quick searches).
"""

from __future__ import annotations

import argparse
import time

from partitioner.api import load_inputs
from partitioner.errors import PartitionerError
from partitioner.planning.answer import default_answer

QUICK = [("qwen2.5-14b", "seed"), ("llama-3.1-8b", "helix-a100-l4-t4")]
MODELS = ["qwen2.5-14b", "llama-3.1-8b", "llama-3.1-70b-int4", "llama-3-70b-fp8", "hf-qwen2.5-7b"]
CLUSTERS = ["seed", "mixed-8gpu", "l4x8", "a100-l4-t4", "helix-a100-l4-t4"]


def _tps(result: object) -> float:
    if hasattr(result, "replicas"):
        return float(result.serving_totals()["tokens_per_s"])  # type: ignore[attr-defined]
    s = getattr(result, "serving", None)
    return float(s.tokens_per_s) if s is not None else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", choices=("all", "quick"), default="quick")
    args = ap.parse_args()
    pairs = QUICK if args.pairs == "quick" else [(m, c) for m in MODELS for c in CLUSTERS]
    print(f"{'model':<20} {'cluster':<18} {'objective':<9} {'tokens/s':>9} {'layout':<22} {'τ_max plan':>10} "
          f"{'worst loss':>10} {'wall s':>7}")
    for m, c in pairs:
        model, cluster = load_inputs(f"examples/models/{m}.yaml", f"examples/clusters/{c}.yaml")
        start = time.perf_counter()
        try:
            ans = default_answer(model, cluster)
        except PartitionerError as exc:
            print(f"{m:<20} {c:<18} {'—':<9} {'—':>9} {str(exc)[:60]}")
            continue
        wall = time.perf_counter() - start
        r = ans.result
        layout = f"{len(r.replicas)} replicas" if hasattr(r, "replicas") else f"1 pipeline, {len(r.stages)} stages"
        paper = _tps(ans.paper) if hasattr(ans.paper, "stages") else float("nan")
        worst = ans.failure.worst.tokens_per_s if ans.failure and ans.failure.losses else float("nan")
        print(f"{m:<20} {c:<18} {ans.choice.objective:<9} {_tps(r):>9,.0f} {layout:<22} {paper:>10,.0f} "
              f"{worst:>10,.0f} {wall:>7.1f}")


if __name__ == "__main__":
    main()
