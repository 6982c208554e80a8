"""Speed and accuracy of `partition calibrate` on synthetic data, plus the §7.2 check on real data.

    python benchmarks/calibrate.py [--seed 0]

1. Efficiency fit (`calibrate.fit`): timings on an RTX 3090 made by the roofline with known factors
   (eta_c 0.82, eta_m 0.71, overhead 0.03 ms) and 2 % log-normal noise; the fit's wall time and how
   far it lands from the true factors. Two shapes of data: N rows of Llama-3.1-8B at N random
   workload points (every row its own arithmetic intensity: the worst case, as the fit enumerates
   one regime split per distinct intensity), and the grid `calibrate measure` writes for
   Llama-3.1-70B (every layer at 2 phases x 4 batches x 4 token counts: 2,624 rows).
2. Gateway log aggregation (`calibrate.gateway.aggregate_requests`): n requests of one node.
3. Overlap fit (`calibrate.overlap.fit_overlap`): n makespans of a 4-stage pipeline with 1 % noise.
4. If ../shared/data/gateway (the paper's data set, CC-BY-4.0) is present: legalone:8b on
   node-01..03 against theory.md §7.2 (tau 1.13/2.901/2.621 s, bias 2.051 s, +30.8 %, +0.7 %).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from partitioner.calibrate.fit import fit_efficiencies, row_terms, row_time
from partitioner.calibrate.gateway import aggregate_requests, calibrate_gateway
from partitioner.calibrate.overlap import fit_overlap
from partitioner.calibrate.timings import Timing
from partitioner.costs.roofline import Hardware, Shape
from partitioner.models import catalog
from partitioner.models.cluster import resolve_gpu
from partitioner.models.llm import Architecture

TRUE = (0.82, 0.71, 0.03e-3)  # eta_c, eta_m, overhead seconds
DTYPES = (2.0, 2.0, 2.0)
GATEWAY = Path(__file__).resolve().parents[2] / "shared" / "data" / "gateway" / "real_vs_formula.csv"


def _clock(fn, *args):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


def _timings(n: int, rng: np.random.Generator, shape: Shape) -> list[Timing]:
    """n rows: half decode (batch 1..64, context 512..16384), half prefill (1..4 x 256..8192 tokens)."""
    base = Hardware.of(resolve_gpu("rtx-3090"))
    hw = Hardware(base.F, base.BW, *TRUE)
    rows = []
    for i in range(n):
        phase = "decode" if i % 2 else "prefill"
        batch = int(rng.integers(1, 65)) if phase == "decode" else int(rng.integers(1, 5))
        tokens = int(rng.integers(512, 16385)) if phase == "decode" else int(rng.integers(256, 8193))
        first = int(rng.integers(0, shape.L))
        last = int(rng.integers(first, min(shape.L, first + 8)))
        t = Timing("rtx-3090", "decoder", first, last, phase, batch, tokens, 1.0)
        f, m = row_terms(t, shape, DTYPES)
        y = row_time(f, m, t.n_layers, hw) * float(np.exp(rng.normal(0.0, 0.02)))
        rows.append(Timing("rtx-3090", "decoder", first, last, phase, batch, tokens, y))
    return rows


def _grid(rng: np.random.Generator, shape: Shape) -> list[Timing]:
    """Every layer of `shape` at each (phase, batch, tokens) of a 2 x 4 x 4 grid, one row each."""
    base = Hardware.of(resolve_gpu("rtx-3090"))
    hw = Hardware(base.F, base.BW, *TRUE)
    layers = [("embed", 0, 0), *(("decoder", i, i) for i in range(shape.L)), ("head", 0, 0)]
    rows = []
    for phase in ("prefill", "decode"):
        for batch in (1, 4, 16, 64):
            for tokens in (128, 512, 2048, 8192):
                for kind, first, last in layers:
                    t = Timing("rtx-3090", kind, first, last, phase, batch, tokens, 1.0)
                    f, m = row_terms(t, shape, DTYPES)
                    y = row_time(f, m, t.n_layers, hw) * float(np.exp(rng.normal(0.0, 0.02)))
                    rows.append(Timing("rtx-3090", kind, first, last, phase, batch, tokens, y))
    return rows


def _shape(model: str) -> Shape:
    return Shape.of(Architecture.model_validate(catalog.require("models", model)["architecture"]))


def bench_fit(rng: np.random.Generator) -> None:
    specs = {"rtx-3090": ("rtx-3090", Hardware.of(resolve_gpu("rtx-3090")))}
    small, large = _shape("llama-3.1-8b"), _shape("llama-3.1-70b")
    cases = [(f"8B, {n} random points", _timings(n, rng, small), small) for n in (10, 100, 1000, 5000)]
    cases.append(("70B, measure grid", _grid(rng, large), large))
    print("efficiency fit on rtx-3090, 2 % noise")
    print(f"{'data':<22} {'rows':>5} {'time':>9} {'eta_c':>6} {'eta_m':>6} {'ovh ms':>7} {'RMS before':>10} {'after':>6}")
    for label, rows, shape in cases:
        fit, dt = _clock(fit_efficiencies, rows, specs, shape, DTYPES)
        g = fit.gpus[0]
        print(f"{label:<22} {len(rows):>5} {dt * 1e3:>7.1f}ms {g.fitted.eta_c:>6.3f} {g.fitted.eta_m:>6.3f} "
              f"{g.fitted.t_fixed * 1e3:>7.4f} {g.rms_before:>10.1%} {g.rms_after:>6.1%}")
    print(f"{'true':<22} {'':>5} {'':>9} {TRUE[0]:>6.3f} {TRUE[1]:>6.3f} {TRUE[2] * 1e3:>7.4f}\n")


def bench_gateway(rng: np.random.Generator) -> None:
    print("gateway request-log aggregation (one node)")
    print(f"{'requests':>9} {'time':>9}")
    for n in (10**3, 10**5, 10**6):
        dur = rng.lognormal(0.0, 0.5, n)
        queue = np.where(rng.random(n) < 0.6, rng.exponential(0.4, n), 0.0)
        _, dt = _clock(aggregate_requests, "m", "node", dur, dur + queue, queue)
        print(f"{n:>9} {dt * 1e3:>7.1f}ms")
    print()


def bench_overlap(rng: np.random.Generator) -> None:
    tau, d = [0.5, 1.0, 1.0, 2.0], [0.1, 1.5, 0.2]
    print("overlap fit, tau = [0.5, 1, 1, 2], d = [0.1, 1.5, 0.2], true rho 0.6, 1 % noise")
    print(f"{'points':>7} {'time':>9} {'rho':>7}")
    for n in (2, 10, 100, 1000):
        Ms = rng.integers(1, 200, n)
        Ms[:2] = (2, 150)
        slope = 2.0 + 0.4 * 0.5  # tau_max + (1 - rho)(sigma_max - tau_max), sigma_max 2.5 (§9)
        Ts = (6.3 + (Ms - 1) * slope)  # intercept sum tau + sum d (Thm 2/3 at M = 1) * np.exp(rng.normal(0.0, 0.01, n))
        fit, dt = _clock(fit_overlap, tau, d, [int(m) for m in Ms], [float(t) for t in Ts])
        print(f"{n:>7} {dt * 1e3:>7.2f}ms {fit.rho:>7.3f}")
    print()


def check_real_gateway() -> None:
    if not GATEWAY.exists():
        print(f"real gateway data not found at {GATEWAY}: skipped")
        return
    from partitioner.calibrate.gateway_io import read_gateway

    cal = calibrate_gateway(read_gateway(GATEWAY).stats, "legalone:8b", ["node-01", "node-02", "node-03"])
    errors = ", ".join(f"M={p.M} {p.rel_error:+.1%}" for p in cal.points)
    print(f"§7.2 on the real data: tau = {cal.tau}, bias {cal.homogeneity_bias:.3f} s, {errors}")
    print("paper:                 tau = (1.13, 2.901, 2.621), bias 2.05 s, M=1 +30.8%, M=100 +0.7%")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0)
    rng = np.random.default_rng(parser.parse_args().seed)
    bench_fit(rng)
    bench_gateway(rng)
    bench_overlap(rng)
    check_real_gateway()


if __name__ == "__main__":
    main()
