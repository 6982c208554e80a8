"""The serve search against a brute force over splits × batch × in-flight count.

400 seeded instances (tests/oracle.py `serve_instance`: 2-4 devices, 2-5 layers, batches 1-3),
each with one of: a TPOT limit, a TTFT limit, both, a max batch, or the blocking regime (half of
those with a TPOT limit too); a quarter in fixed device order. The limits are drawn around the
brute force's own least TPOT and TTFT, so they bind, and some cannot be met at all. The search
must return the brute force's best tokens/s, prove it, and report the same Pareto frontier
(tokens/s against TPOT over every plan within the limits); when no plan meets the limits it must
say "infeasible" (InfeasibleError), never "not proven".
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import frontier_of, serve_instance, serve_points

from partitioner.errors import InfeasibleError
from partitioner.problem import RTOL
from partitioner.serving.points import limit_reason
from partitioner.serving.search import Limits, search

MODES = ("tpot", "ttft", "both", "max_batch", "blocking")
INSTANCES, CHUNKS = 400, 8


def _limits(mode: str, seed: int, pts: list[tuple[int, int, float, float, float]]) -> Limits:
    r = np.random.default_rng(seed + 1_000_003)
    tpot = min(p[3] for p in pts) * float(r.uniform(0.9, 2.5)) if pts else 1.0
    ttft = min(p[4] for p in pts) * float(r.uniform(0.9, 1.6)) if pts else 1.0
    if mode == "tpot" or (mode == "blocking" and seed % 2):
        return Limits(tpot_s=tpot)
    if mode == "ttft":
        return Limits(ttft_s=ttft)
    if mode == "both":
        return Limits(tpot_s=tpot, ttft_s=ttft)
    if mode == "max_batch":
        return Limits(max_batch=int(r.integers(1, 3)))
    return Limits()


def _meets(p: tuple[int, int, float, float, float], lim: Limits) -> bool:
    return ((lim.tpot_s is None or p[3] <= lim.tpot_s * (1 + RTOL))
            and (lim.ttft_s is None or p[4] <= lim.ttft_s * (1 + RTOL))
            and (lim.max_batch is None or p[0] <= lim.max_batch))


def _disagreement(seed: int) -> str | None:
    """None when the search agrees with the brute force on instance `seed`, else why not."""
    tables, order = serve_instance(seed)
    mode = MODES[seed % len(MODES)]
    regime = "blocking" if mode == "blocking" else "async"
    every = serve_points(tables, regime, order)
    lim = _limits(mode, seed, every)
    pts = [p for p in every if _meets(p, lim)]
    try:
        res = search(tables.__getitem__, [1, 2, 3], regime=regime, order=order, solver="auto", limits=lim)
    except InfeasibleError as exc:
        return None if not pts else f"infeasible ({exc}) but brute force finds {max(p[2] for p in pts):.6g} tokens/s"
    if not pts:
        return f"found {res.best.serving.tokens_per_s:.6g} tokens/s where brute force finds no plan"
    best = max(p[2] for p in pts)
    got = res.best.serving
    if limit_reason(got, lim) is not None or (lim.max_batch is not None and got.batch > lim.max_batch):
        return f"best plan breaks a limit ({limit_reason(got, lim)}, batch {got.batch})"
    if got.tokens_per_s != pytest.approx(best, rel=1e-9) or not res.proven or res.status != "OPTIMAL":
        return f"{got.tokens_per_s:.9g} tokens/s (proven {res.proven}, {res.status}) against brute force {best:.9g}"
    want = frontier_of([(p[2], p[3]) for p in pts])
    have = [(p.serving.tokens_per_s, p.serving.tpot_s) for p in res.frontier]
    if len(want) != len(have) or any(a != pytest.approx(b, rel=1e-9) for x, y in zip(want, have, strict=True)
                                     for a, b in zip(x, y, strict=True)):
        return f"frontier {have} against brute force {want}"
    return None


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_serve_search_equals_brute_force(chunk: int) -> None:
    n = INSTANCES // CHUNKS
    bad = {seed: why for seed in range(chunk * n, (chunk + 1) * n) if (why := _disagreement(seed)) is not None}
    assert not bad, bad
