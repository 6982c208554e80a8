"""Closed forms (Thms 2-3) vs the simulated recurrences (1)/(2): the paper's App. C fuzz.

2e4 random configurations, S uniform in 2..8, tau_j = 10**U(-1, 1) (log-uniform over two
decades), d_j = U(0.01, 20) * tau_j (theory.md's concrete reading of "from 10^-2x to 20x the
compute"), M in {1, 2, 4, 8, 16, 32, 64, 100} (Table 2's values plus 64), both regimes:
1.6e5 points per regime. Each (configuration, M, regime) is simulated independently by
`partitioner.simulate.simulate_batch` (numpy over configurations) and compared with
`partitioner.analysis` vectorised closed forms. Also counts violations of T_async <= T_block.

    python benchmarks/validate_closed_forms.py [--seed 0] [--configs 20000]

Exit status 1 if the worst relative error exceeds 1e-9 or the sandwich is violated.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from partitioner.analysis import makespan_async_batch, makespan_blocking_batch
from partitioner.simulate import simulate_batch

M_VALUES = (1, 2, 4, 8, 16, 32, 64, 100)
TOLERANCE = 1e-9


def draw(n: int, rng: np.random.Generator) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Random configurations grouped by S: {S: (tau (n_S, S), d (n_S, S-1))}."""
    sizes = rng.integers(2, 9, size=n)
    groups = {}
    for S in range(2, 9):
        k = int((sizes == S).sum())
        tau = 10.0 ** rng.uniform(-1.0, 1.0, size=(k, S))
        d = rng.uniform(0.01, 20.0, size=(k, S - 1)) * tau[:, :-1]
        groups[S] = (tau, d)
    return groups


def validate(groups: dict[int, tuple[np.ndarray, np.ndarray]]) -> dict[str, float]:
    """Worst relative error per regime, sandwich violations and point count."""
    worst = {"async": 0.0, "blocking": 0.0}
    points = violations = 0
    for tau, d in groups.values():
        if tau.shape[0] == 0:
            continue
        for M in M_VALUES:
            sim = {r: simulate_batch(tau, d, M, r) for r in worst}
            exact = {"async": makespan_async_batch(tau, d, M), "blocking": makespan_blocking_batch(tau, d, M)}
            for r in worst:
                worst[r] = max(worst[r], float(np.max(np.abs(sim[r] - exact[r]) / exact[r])))
            violations += int((sim["async"] > sim["blocking"] * (1 + TOLERANCE)).sum())
            points += tau.shape[0]
    return {**worst, "points": points, "violations": violations}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="RNG seed (default 0)")
    parser.add_argument("--configs", type=int, default=20_000, help="random configurations (default 2e4)")
    args = parser.parse_args()
    t0 = time.perf_counter()
    groups = draw(args.configs, np.random.default_rng(args.seed))
    res = validate(groups)
    wall = time.perf_counter() - t0
    rows = [
        ("configurations", f"{args.configs}"),
        ("M values", ",".join(map(str, M_VALUES))),
        ("points per regime", f"{res['points']}"),
        ("points total (2 regimes)", f"{2 * res['points']}"),
        ("worst rel. error, async (Thm 2)", f"{res['async']:.3e}"),
        ("worst rel. error, blocking (Thm 3)", f"{res['blocking']:.3e}"),
        ("T_async > T_block violations", f"{res['violations']}"),
        ("wall time", f"{wall:.2f} s"),
    ]
    width = max(len(k) for k, _ in rows)
    print(f"validate_closed_forms (seed {args.seed})")
    for k, v in rows:
        print(f"  {k:<{width}}  {v}")
    ok = max(res["async"], res["blocking"]) <= TOLERANCE and res["violations"] == 0
    print("  result" + " " * (width - 4) + ("OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
