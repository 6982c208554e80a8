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

from partitioner.errors import InfeasibleError, SolverError
from partitioner.problem import RTOL, CostTables
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


def _two_gpus(B: int) -> CostTables:
    """GPU 0 decodes in 1 ms a layer but prefills slowly (40 ms a layer), GPU 1 decodes in 1.2 ms
    and prefills in 10 ms; either holds the whole model, and the split doubles in-flight work."""
    return CostTables(
        cost=np.array([[1e-3, 1e-3], [1.2e-3, 1.2e-3]]) * B, memory_gb=np.array([1.0, 1.0]) + 1e-3 * B,
        cut_bytes=np.zeros(2), capacity_gb=np.array([10.0, 10.0]), latency_s=np.zeros((2, 2)),
        bandwidth_Bps=np.full((2, 2), np.inf), layer_names=("a", "b"), device_names=("x", "y"),
        gpu_names=("fast", "slow"), node_names=("n", "n"), weight_gb=np.ones(2), kv_bytes_per_token=np.ones(2),
        context=1_000_000, batch=B, in_flight=1, prefill_cost=np.array([[40e-3, 40e-3], [10e-3, 10e-3]]),
        prefill_cut_bytes=np.zeros(2), prompt_tokens=512,
    )


def test_a_ttft_limit_only_one_gpu_meets_is_met_by_that_gpu_alone():
    free = search(_two_gpus, [1, 2], order="free").best.serving
    # without the limit the split wins: K = 2 of τ = (1, 1.2) ms·B, P = max(2.4, 2.2) ms·B
    assert free.gpus == 2 and free.tokens_per_s == pytest.approx(2 / 2.4e-3) and free.ttft_s > 21e-3
    got = search(_two_gpus, [1, 2], order="free", limits=Limits(ttft_s=21e-3))
    s = got.best
    assert s.solution.devices == (1,) and s.serving.ttft_s == pytest.approx(20e-3) and got.proven
    # GPU 1 alone: P = R = 2.4 ms·B at K = 1, and K·B / P = 1 / 2.4 ms at every B and K
    assert s.serving.tokens_per_s == pytest.approx(1 / 2.4e-3) and got.status == "OPTIMAL"
    with pytest.raises(InfeasibleError, match=r"TTFT limit 19 ms: the quickest prompt takes 20 ms"):
        search(_two_gpus, [1, 2], order="free", limits=Limits(ttft_s=19e-3))


def _one_layer(B: int) -> CostTables:
    """One layer on one of three GPUs: decode 1, 5, 2 ms·B; prefill 50, 10, 20 ms."""
    return CostTables(
        cost=np.array([[1e-3], [5e-3], [2e-3]]) * B, memory_gb=np.ones(1), cut_bytes=np.zeros(1),
        capacity_gb=np.full(3, 10.0), latency_s=np.zeros((3, 3)), bandwidth_Bps=np.full((3, 3), np.inf),
        layer_names=("a",), device_names=("x", "y", "z"), gpu_names=("x", "y", "z"), node_names=("n",) * 3,
        weight_gb=np.ones(1), kv_bytes_per_token=np.ones(1), context=1_000_000, batch=B, in_flight=1,
        prefill_cost=np.array([[50e-3], [10e-3], [20e-3]]), prefill_cut_bytes=np.zeros(1), prompt_tokens=512,
    )


def _least_bottleneck_route(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on an instance too large to list every split whose label search runs out of work."""
    from partitioner.serving import labels, splits

    monkeypatch.setattr(splits, "MAX_SPLITS", 0)
    monkeypatch.setattr(labels, "MAX_LABELS", 0)


def test_the_least_bottleneck_route_rescues_with_the_least_ttft_and_round_trip_splits(monkeypatch):
    _least_bottleneck_route(monkeypatch)
    got = search(_two_gpus, [1, 2], order="free", limits=Limits(ttft_s=21e-3))  # the least-TTFT split: GPU 1
    assert got.best.solution.devices == (1,) and got.best.serving.ttft_s == pytest.approx(20e-3)
    assert got.status in ("OPTIMAL", "FEASIBLE") and got.proven == (got.status == "OPTIMAL")
    with pytest.raises(InfeasibleError, match=r"TTFT limit 19 ms: every plan takes at least 20 ms"):
        search(_two_gpus, [1, 2], order="free", limits=Limits(ttft_s=19e-3))  # the exact least TTFT
    with pytest.raises(InfeasibleError, match=r"TPOT limit 1.9 ms: every plan takes at least 2 ms"):
        search(_two_gpus, [1, 2], order="free", limits=Limits(tpot_s=1.9e-3))  # the least round trip, GPU 0


def test_a_limit_the_least_bottleneck_route_cannot_meet_is_not_proven_infeasible(monkeypatch):
    both = Limits(tpot_s=3e-3, ttft_s=25e-3)  # only GPU 2 (2 ms, 20 ms) meets both
    assert search(_one_layer, [1], order="free", limits=both).best.solution.devices == (2,)
    _least_bottleneck_route(monkeypatch)  # least τ: GPU 0 (TTFT 50 ms); least TTFT: GPU 1 (5 ms)
    with pytest.raises(SolverError, match=r"no plan found that meets the TPOT limit 3 ms and the TTFT limit 25 ms, "
                                          r"not proven infeasible"):
        search(_one_layer, [1], order="free", limits=both)
