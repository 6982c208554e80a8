"""The README's worked example of a request mix: Llama-3-70B-FP8 on 8×L4 under vLLM.

    python benchmarks/mix_example.py

The even split over 8 stages (vLLM's default partition), engine vllm: K = PP = 8 micro-batches
in flight, 16 requests each (max_num_seqs 128), vLLM's token budget on a 24 GB GPU (2048).
Prompts and outputs of 512-1536 tokens (mean 1024, every length equally likely), at
saturation and at 4 concurrent clients. Prints the closed form (partitioner.analysis.chunked)
beside the event-driven simulation (partitioner.simulate.chunked, seed 0: 1500 requests
saturated, 150 with 4 clients) and the decode-only numbers; the README table is this output
(tests/test_readme_serving.py checks every row).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

__all__ = ["report", "main"]

ROOT = Path(__file__).resolve().parents[1]
EVEN = (0, 11, 21, 31, 41, 51, 61, 71, 82)  # embed + 10 decoders, 10 x 6, 10 + head (vLLM's even split)


SPREAD = dict.fromkeys(range(512, 1537), 1.0)  # every length 512..1536 equally likely: mean 1024


REQUESTS = {"saturated (128 slots)": 1500, "4 clients": 150}  # simulated requests per load


def report(simulate: bool = True) -> str:
    from partitioner.analysis.chunked import EngineLimits
    from partitioner.costs import build_tables
    from partitioner.models import load_cluster, load_model
    from partitioner.problem import Problem, evaluate
    from partitioner.serving.score import serving_of, step_cost
    from partitioner.simulate.chunked import simulate_mix

    m = load_model(ROOT / "examples" / "models" / "llama-3-70b-fp8.yaml")
    wl = m.workload.model_copy(update={"batch": 16, "in_flight": 8, "engine": "vllm", "input_tokens": SPREAD,
                                       "output_tokens": SPREAD})
    t = build_tables(m.model_copy(update={"workload": wl}), load_cluster(ROOT / "examples" / "clusters" / "l4x8.yaml"))
    devices = tuple(range(8))
    metrics = evaluate(Problem(t, M=8), devices, EVEN)
    decode = serving_of(replace(t, request_mix=None), devices, EVEN, metrics, "async")
    cost, lim = step_cost(t, devices, EVEN, metrics), EngineLimits(8, 16 * 8, t.token_budget)
    lines = [f"{'load':<22} {'source':<12} {'out tok/s':>9} {'total tok/s':>11} {'TPOT ms':>8} {'TTFT ms':>8}",
             f"{'decode only':<22} {'closed form':<12} {decode.tokens_per_s:>9.1f} {decode.tokens_per_s:>11.1f} "
             f"{decode.tpot_s * 1e3:>8.1f} {'-':>8}"]
    for label, mix in (("saturated (128 slots)", t.request_mix), ("4 clients", replace(t.request_mix, concurrency=4))):
        got = serving_of(replace(t, request_mix=mix), devices, EVEN, metrics, "async").mix
        assert got is not None
        rows = [("closed form", got.output_tokens_per_s, got.total_tokens_per_s, got.tpot_s, got.ttft_s)]
        if simulate:
            sim = simulate_mix(cost, mix, lim, requests=REQUESTS[label], seed=0)
            rows.append(("simulated", sim.output_tokens_per_s, sim.total_tokens_per_s, sim.tpot_s, sim.ttft_s))
        for source, out, total, tpot, ttft in rows:
            lines.append(f"{label:<22} {source:<12} {out:>9.1f} {total:>11.1f} {tpot * 1e3:>8.1f} {ttft * 1e3:>8.1f}")
        if simulate:
            (_, *model), (_, *sim_row) = rows
            err = [f"{(a / b - 1) * 100:>+{w}.1f}%" for a, b, w in zip(model, sim_row, (8, 10, 7, 7), strict=True)]
            lines.append(f"{label:<22} {'model - sim':<12} {' '.join(err)}")
    return "\n".join(lines)


def main() -> None:
    print(report())


if __name__ == "__main__":
    main()
