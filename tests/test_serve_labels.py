"""The label DP (partitioner.serving.labels) against scoring every split (splits.py).

Two seeded property tests. (1) Direct: on random instances of 2-5 devices (some of one kind,
so the free-order classes and the fixed-order runs are exercised) and 3-9 layers, with caps
drawn around the instances' own values, the least P = max(K·w_max, R) at every K the search
visits (KV of K·B sequences fits, P <= TPOT cap, TTFT <= cap) over the label set equals the
least over every split, and each label's plan is a split with exactly its vector. (2) Through the serve search: the
instances of tests/test_serve_oracle.py searched with `max_splits=0` (every batch above the
threshold, so the label DP answers it) give the same best plan, proof, status and frontier as
with every split listed, and the same error where nothing meets the limits.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from oracle import serve_instance, serve_points
from test_serve_oracle import MODES, _limits, _one_layer

from partitioner.errors import InfeasibleError, PartitionerError, SolverError
from partitioner.problem import RTOL, CostTables
from partitioner.serving import labels
from partitioner.serving.points import in_flight_points
from partitioner.serving.search import Limits, search
from partitioner.serving.splits import splits_of


def _instance(seed: int) -> tuple[CostTables, str, str]:
    """Tables at one batch, the order and the regime: kinds of devices share cost, prefill
    and capacity rows; links uniform within a kind half of the time."""
    r = np.random.default_rng(seed)
    G, L = int(r.integers(2, 6)), int(r.integers(3, 10))
    kinds = np.sort(r.integers(0, int(r.integers(1, G + 1)), G))
    B = int(r.integers(1, 4))
    cost = (r.uniform(0.5, 2.0, (G, L)) * 1e-3)[kinds] * B
    prefill = r.uniform(2.0, 20.0, (G, L))[kinds] * 1e-3
    weight = r.uniform(0.5, 1.5, L)
    kvpt = r.uniform(0.05, 0.2, L) * 1e6
    cap = (weight.sum() * r.uniform(0.3, 1.1, G) + r.uniform(0.0, 2.0, G))[kinds]
    if r.random() < 0.5:
        lat = np.full((G, G), float(r.uniform(0.0, 1e-3)))
        bw = np.full((G, G), float(r.choice([1e9, np.inf])))
    else:
        lat = r.uniform(0.0, 2e-3, (G, G))
        bw = r.choice([1e9, 1e10, np.inf], (G, G))
    np.fill_diagonal(lat, 0.0)
    np.fill_diagonal(bw, np.inf)
    t = CostTables(
        cost=cost, memory_gb=weight + kvpt * 1000 * B / 1e9, cut_bytes=r.uniform(0.0, 2e6, L) * B,
        capacity_gb=cap, latency_s=lat, bandwidth_Bps=bw, layer_names=tuple(f"l{i}" for i in range(L)),
        device_names=tuple(f"g{g}" for g in range(G)), gpu_names=tuple(f"k{k}" for k in kinds),
        node_names=("n",) * G, tied_gb=float(r.choice([0.0, 0.3 * weight[0]])), weight_gb=weight,
        kv_bytes_per_token=kvpt, context=1000, batch=B, in_flight=1, prefill_cost=prefill,
        prefill_cut_bytes=r.uniform(0.0, 2e7, L), prompt_tokens=512, return_bytes=float(r.uniform(0.0, 1e5)) * B,
    )
    return t, str(r.choice(["free", "fixed"])), str(r.choice(["async", "blocking"]))


def _least(w: np.ndarray, trip: np.ndarray, ttft: np.ndarray, N: np.ndarray, B: int, K: int, cap: float,
           ttft_cap: float) -> float:
    period = np.maximum(K * w, trip)
    live = (N >= K * B) & (period <= cap) & (ttft <= ttft_cap)
    return float(period[live].min()) if live.any() else math.inf


@pytest.mark.parametrize("chunk", range(3))
def test_the_labels_answer_every_in_flight_count_as_every_split_does(chunk: int) -> None:
    for seed in range(chunk * 60, (chunk + 1) * 60):
        t, order, regime = _instance(seed)
        B = t.batch
        every = splits_of(t, regime, order)
        fits = every.N >= B
        if not fits.any():
            assert labels.label_splits(t, regime, order, n_min=B, most=64).w.size == 0  # type: ignore[union-attr]
            continue
        r = np.random.default_rng(seed + 7)
        p1 = np.maximum(every.w, every.trip)[fits]
        cap = math.inf if seed % 3 == 0 else float(np.quantile(p1, r.uniform(0.0, 0.6))) * 2.0
        ttft_cap = math.inf if seed % 4 == 1 else float(np.quantile(every.ttft[fits], r.uniform(0.0, 0.6)))
        got = labels.label_splits(t, regime, order, n_min=B, w_cap=cap, r_cap=cap, ttft_cap=ttft_cap, most=64,
                                  keys=labels.KEYS if math.isfinite(ttft_cap) else ("w", "R", "N"), work=10**8)
        assert got is not None
        for K, _ in in_flight_points(every, B, cap, every.ttft <= ttft_cap, 64):  # the K the search visits
            want = _least(every.w, every.trip, every.ttft, every.N, B, K, cap, ttft_cap)
            have = _least(got.w, got.trip, got.ttft, got.N, B, K, cap, ttft_cap)
            assert have == pytest.approx(want, rel=1e-12), (seed, K, order, regime)
        for i in range(got.w.size):  # each label is a real split with exactly its vector
            devices, cuts = got.plan(i)
            same = np.flatnonzero((every.w == got.w[i]) & (every.trip == got.trip[i]) & (every.ttft == got.ttft[i]))
            j = next(int(k) for k in same if every.plan(int(k)) == (devices, cuts))
            assert B <= got.N[i] <= every.N[j]


def _outcome(tables: dict[int, CostTables], regime: str, order: str, lim: Limits, max_splits: int) -> object:
    try:
        res = search(tables.__getitem__, [1, 2, 3], regime=regime, order=order, solver="auto", limits=lim,
                     max_splits=max_splits)
    except PartitionerError as exc:
        return type(exc).__name__
    return (res.best.serving.tokens_per_s, res.proven, res.status,
            [(p.serving.tokens_per_s, p.serving.tpot_s) for p in res.frontier])


@pytest.mark.parametrize("chunk", range(3))
def test_the_serve_search_above_the_threshold_equals_every_split(chunk: int) -> None:
    """Seeds 0-119 of the oracle's instances, every mode: labels (max_splits=0) against listing."""
    for seed in range(chunk * 40, (chunk + 1) * 40):
        tables, order = serve_instance(seed)
        mode = MODES[seed % len(MODES)]
        regime = "blocking" if mode == "blocking" else "async"
        lim = _limits(mode, seed, serve_points(tables, regime, order))
        listed = _outcome(tables, regime, order, lim, 10**9)
        found = _outcome(tables, regime, order, lim, 0)
        if isinstance(listed, str) or isinstance(found, str):
            assert found == listed, seed
            continue
        assert isinstance(found, tuple) and isinstance(listed, tuple)
        assert found[0] == pytest.approx(listed[0], rel=1e-9) and found[1:3] == listed[1:3] == (True, "OPTIMAL")
        assert len(found[3]) == len(listed[3]), seed
        assert np.allclose(np.array(found[3]), np.array(listed[3]), rtol=1e-9, atol=0.0), seed


def test_past_its_work_the_label_search_says_not_proven_with_a_finite_bound(monkeypatch):
    both = Limits(tpot_s=3e-3, ttft_s=25e-3)  # only GPU 2 (2 ms, 20 ms) meets both
    got = search(_one_layer, [1, 2], order="free", limits=both, max_splits=0)  # the label DP: exact
    assert got.best.solution.devices == (2,) and got.status == "OPTIMAL" and got.proven
    with pytest.raises(InfeasibleError, match="TTFT limit 9 ms: the quickest prompt takes 10 ms"):
        search(_one_layer, [1, 2], order="free", limits=Limits(ttft_s=9e-3), max_splits=0)
    monkeypatch.setattr(labels, "MAX_LABELS", 0)  # no work: the least-w_max route on every batch
    with pytest.raises(SolverError, match="not proven infeasible"):
        search(_one_layer, [1, 2], order="free", limits=both, max_splits=0)
    free = search(_one_layer, [1, 2], order="free", limits=Limits(tpot_s=3e-3), max_splits=0)
    assert free.status in ("OPTIMAL", "FEASIBLE") and free.proven == (free.status == "OPTIMAL")
    assert 0 < free.lower_bound <= 1 / free.best.serving.tokens_per_s * (1 + RTOL)


def test_the_work_is_counted_not_timed():
    """The same instance gives the same labels and the same count of work, and a cap just below
    that count gives up (None) where the cap at it answers."""
    t, order, regime = _instance(3)
    one = labels.label_splits(t, regime, order, n_min=t.batch, most=64, work=10**8)
    assert one is not None
    two = labels.label_splits(t, regime, order, n_min=t.batch, most=64, work=one.work)
    assert two is not None and two.work == one.work and np.array_equal(two.w, one.w)
    assert labels.label_splits(t, regime, order, n_min=t.batch, most=64, work=one.work - 1) is None


def test_replica_searches_take_the_label_search_only_when_asked():
    both = Limits(tpot_s=3e-3, ttft_s=25e-3)
    with pytest.raises(SolverError, match="not proven infeasible"):  # prune: the least-w_max route
        search(_one_layer, [1, 2], order="free", limits=both, max_splits=0, prune=True)
    got = search(_one_layer, [1, 2], order="free", limits=both, max_splits=0, prune=True, labels=True)
    assert got.best.solution.devices == (2,) and got.status == "OPTIMAL"
