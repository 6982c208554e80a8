"""KV capacity, the serving object of every plan and the serve objective's (B, K) search.

No number here comes from the roofline defaults: expectations are recomputed from memory.py's
functions, from hand-built tables, or from the closed forms.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from partitioner.analysis.closed_loop import decode_period
from partitioner.cli import main
from partitioner.costs import build_tables, memory
from partitioner.costs.roofline import Shape, Work
from partitioner.errors import InfeasibleError, InputError
from partitioner.models import load_cluster, load_model
from partitioner.problem import CostTables, Problem, evaluate
from partitioner.serving.capacity import capacity
from partitioner.serving.score import return_latency
from partitioner.serving.search import Limits, batch_grid, search, with_in_flight
from partitioner.solvers import BASELINES

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples"
SEED = EX / "clusters" / "seed.yaml"


# -- KV capacity: exactly the largest count that fits, recomputed from memory.py ---------------
def _random_cuts(rng: np.random.Generator, L: int, G: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    S = int(rng.integers(1, min(G, L) + 1))
    inner = sorted(rng.choice(np.arange(1, L), S - 1, replace=False).tolist()) if S > 1 else []
    devices = tuple(int(g) for g in rng.permutation(G)[:S])
    return devices, (0, *inner, L)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), preset=st.sampled_from(["llama-3.1-8b", "qwen2.5-14b", "llama-3.2-3b"]),
       batch=st.integers(1, 16), context=st.sampled_from([1024, 4096, 16384]), kv=st.sampled_from(["bf16", "fp8"]))
def test_max_sequences_is_exactly_the_largest_count_that_fits(seed, preset, batch, context, kv):
    from partitioner.models.llm import ModelSpec, Workload

    model = ModelSpec(preset=preset, workload=Workload(batch=batch, context=context, kv_cache=kv, prompt_tokens=512))
    cluster = load_cluster(SEED)
    t = build_tables(model, cluster)
    rng = np.random.default_rng(seed)
    devices, cuts = _random_cuts(rng, t.L, t.G)
    cap = capacity(t, devices, cuts)
    # recompute independently: weights + workspace from memory.py, KV of n sequences from kv_cache_gb
    s, w = Shape.of(model.arch), Work.of(model.workload)
    one = replace(w, B=1, in_flight=1)

    def stage_gb(i: int, j: int, n: int) -> float:
        kinds = t.kinds[i:j]
        dec = sum(1 for k in kinds if k == "decoder")
        gb = dec * (memory.decoder_memory_gb(s, w) - memory.kv_cache_gb(s, w)) + n * dec * memory.kv_cache_gb(s, one)
        gb += memory.embed_memory_gb(s, w) if "embed" in kinds else 0.0
        gb += memory.head_memory_gb(s, w) if "head" in kinds else 0.0
        return gb - (memory.tied_gb(s, w) if i == 0 and j == t.L else 0.0)

    def fits(n: int) -> bool:
        return all(stage_gb(cuts[k], cuts[k + 1], n) <= t.capacity_gb[g] * (1 + 1e-9) + 1e-12
                   for k, g in enumerate(devices))

    N = cap.max_sequences
    assert N is not None
    if N > 0:
        assert fits(N)
    assert not fits(N + 1)
    k = cap.stage
    g = devices[k]
    assert stage_gb(cuts[k], cuts[k + 1], N + 1) > t.capacity_gb[g] * (1 + 1e-9)  # the named stage sets it


def test_memory_is_weights_plus_kv_of_every_sequence_in_flight():
    t = build_tables(load_model(EX / "models" / "llama-3.1-8b.yaml"), load_cluster(SEED))
    kv = t.kv_bytes_per_token * t.context * t.batch * t.in_flight / 1e9
    assert np.allclose(t.memory_gb, t.weight_gb + kv, rtol=1e-12)
    assert t.kv_bytes_per_token[0] == 0 and t.kv_bytes_per_token[-1] == 0 and t.kv_bytes_per_token[1] > 0
    t4 = with_in_flight(t, 4)
    assert np.allclose(t4.memory_gb - t4.weight_gb, kv * 4 / t.in_flight)


# -- hand-built tables: the search against brute force over (B, K, split) ---------------------
def _hand_tables(rng: np.random.Generator, G: int, L: int) -> tuple[dict[int, CostTables], int]:
    a = rng.uniform(0.5, 2.0, (G, L)) * 1e-3  # intercept (weights read), s
    b = rng.uniform(0.01, 0.1, (G, L)) * 1e-3  # per sequence (KV read), s
    weight = rng.uniform(0.5, 2.0, L)
    kvpt = rng.uniform(0.5, 2.0, L) * 1e3
    cap = rng.uniform(0.6, 1.2, G) * weight.sum() / max(1, G - 1)
    lat = rng.uniform(0.0, 2e-3, (G, G))
    np.fill_diagonal(lat, 0.0)
    Bmax = 5

    def at(B: int) -> CostTables:
        return CostTables(
            cost=a + b * B, memory_gb=weight.copy(), cut_bytes=np.zeros(L), capacity_gb=cap, latency_s=lat,
            bandwidth_Bps=np.full((G, G), np.inf), layer_names=tuple(f"l{i}" for i in range(L)),
            device_names=tuple(f"g{g}" for g in range(G)), gpu_names=("x",) * G, node_names=("n",) * G,
            weight_gb=weight.copy(), kv_bytes_per_token=kvpt, context=1000, batch=B, in_flight=1,
        )

    return {B: at(B) for B in range(1, Bmax + 1)}, Bmax


def _plans(G: int, L: int):
    for S in range(1, min(G, L) + 1):
        for inner in itertools.combinations(range(1, L), S - 1):
            for devices in itertools.permutations(range(G), S):
                yield devices, (0, *inner, L)


def _brute_best(tables: dict[int, CostTables], regime: str, keep=lambda t, devices: True) -> float:
    """max K·B/P over every B, K <= 10 and every split that fits (and `keep` admits): the serve
    objective by enumeration."""
    best = 0.0
    for B, base in tables.items():
        for K in range(1, 11):
            t = with_in_flight(base, K)
            problem = Problem(t, M=K, regime=regime, objective="throughput", order="free")  # type: ignore[arg-type]
            for devices, cuts in _plans(t.G, t.L):
                if not keep(t, devices):
                    continue
                m = evaluate(problem, devices, cuts)
                if m.fits:
                    P = decode_period(m.tau, m.d, K, return_latency(t, devices), regime=regime)
                    best = max(best, K * B / P)
    return best


@settings(max_examples=8, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), regime=st.sampled_from(["async", "blocking"]))
def test_serve_never_below_a_baseline_and_within_its_bound_of_brute_force(seed, regime):
    rng = np.random.default_rng(seed)
    tables, Bmax = _hand_tables(rng, G=3, L=5)
    try:
        res = search(tables.__getitem__, list(range(1, Bmax + 1)), regime=regime, order="free", solver="auto")
    except InfeasibleError:
        with pytest.raises(InfeasibleError):
            search(tables.__getitem__, [1], regime=regime, order="free", solver="brute")
        return
    got = res.best.serving.tokens_per_s
    for name in BASELINES:
        try:
            base = search(tables.__getitem__, list(range(1, Bmax + 1)), regime=regime, order="free", solver=name)
        except InfeasibleError:
            continue
        assert got >= base.best.serving.tokens_per_s * (1 - 1e-9)
    exact = _brute_best(tables, regime)
    assert got <= exact * (1 + 1e-9)  # the search's plan is real
    assert res.upper_bound >= exact * (1 - 1e-9)  # and its bound is a bound
    if res.proven:
        assert got == pytest.approx(exact, rel=1e-9)


def test_hand_case_round_trip_then_bottleneck():
    """Two identical stages of 1 ms (+ 1 ms per sequence), return 0: P = max(K·tau, 2·tau)."""
    G, L = 2, 2

    def at(B: int) -> CostTables:
        return CostTables(
            cost=np.full((G, L), 1e-3 * B), memory_gb=np.ones(L), cut_bytes=np.zeros(L),
            capacity_gb=np.array([1.0 + 6e-3, 1.0 + 6e-3]), latency_s=np.zeros((G, G)),
            bandwidth_Bps=np.full((G, G), np.inf), layer_names=("a", "b"), device_names=("x", "y"),
            gpu_names=("g", "g"), node_names=("n", "n"), weight_gb=np.ones(L), kv_bytes_per_token=np.full(L, 1.0),
            context=1_000_000, batch=B, in_flight=1,
        )

    # each stage holds 1 layer: 1 GB of weights + n sequences × 1e-3 GB: capacity 6 sequences
    res = search(at, [1, 2, 3], order="fixed", solver="auto")
    s = res.best.serving
    # tokens/s = K·B / max(K·B·1e-3, 2·B·1e-3) = min(1/1e-3, K/(2e-3)): 1000/s once K >= 2,
    # and it cannot grow with B (the time is linear in B): the first point that reaches 1000/s
    assert s.tokens_per_s == pytest.approx(1000.0)
    assert s.in_flight >= 2 and s.sequences <= 6 and res.proven
    assert s.max_sequences == 6
    k1 = [p for p in res.frontier if p.serving.in_flight == 1]
    assert all(p.serving.decode_bound == "round_trip" for p in k1)
    with pytest.raises(InfeasibleError, match=r"TPOT limit 1 ms: the fastest is 2 ms \(batch 1, in_flight 1\), 1 ms over"):
        search(at, [1, 2, 3], order="fixed", limits=Limits(tpot_s=1e-3))
    limited = search(at, [1, 2, 3], order="fixed", limits=Limits(tpot_s=2e-3)).best.serving
    assert limited.tpot_s <= 2e-3 * (1 + 1e-12) and limited.tokens_per_s == pytest.approx(1000.0)


def test_batch_grid():
    assert batch_grid(5) == [1, 2, 3, 4, 5]
    g = batch_grid(300)
    assert g[:64] == list(range(1, 65)) and g[64:] == [128, 256, 300]


# -- plans, CLI and API ------------------------------------------------------------------------
def run(*args: str):
    r = CliRunner().invoke(main, [str(a) for a in args])
    return r.exit_code, r.stdout, r.stderr


def test_every_plan_has_the_serving_object_of_the_contract():
    code, out, err = run("plan", EX / "models" / "llama-3.1-8b.yaml", SEED, "--json")
    assert code == 0, err
    s = json.loads(out)["serving"]
    for key in ("batch", "in_flight", "max_sequences", "context", "tokens_per_s", "tpot_s", "ttft_s", "binding"):
        assert key in s
    assert s["binding"] in ("bottleneck", "round_trip", "kv_capacity", "tpot_limit", "ttft_limit")
    plan = json.loads(out)
    tau = [st["tau"] for st in plan["stages"]]
    d = [st["d"] for st in plan["stages"][:-1]]
    P = decode_period(tau, d, s["in_flight"], s["d_ret_s"])
    assert s["tpot_s"] == pytest.approx(P) and s["tokens_per_s"] == pytest.approx(s["batch"] * s["in_flight"] / P)
    assert s["ttft_s"] > 0 and s["ttft_chunked_s"] <= s["ttft_s"]


def test_serve_objective_cli_json_and_table():
    model = EX / "models" / "llama-3.1-8b.yaml"
    code, out, err = run("plan", model, SEED, "--objective", "serve", "--json")
    assert code == 0, err
    assert run("plan", model, SEED, "--objective", "serve", "--json")[1] == out  # deterministic
    plan = json.loads(out)
    s = plan["serving"]
    assert plan["objective"] == "serve" and s["max_sequences"] >= s["batch"] * s["in_flight"]
    assert (plan["status"] == "OPTIMAL") == plan["optimal"] and plan["optimal"]  # every split scored: proven
    front = plan["serving_frontier"]
    assert front and all(a["tpot_s"] < b["tpot_s"] and a["tokens_per_s"] < b["tokens_per_s"]
                         for a, b in itertools.pairwise(front))
    assert max(p["tokens_per_s"] for p in front) == pytest.approx(s["tokens_per_s"])
    code, even, _ = run("plan", model, SEED, "--objective", "serve", "--solver", "even", "--json")
    assert code == 0 and json.loads(even)["serving"]["tokens_per_s"] <= s["tokens_per_s"] * (1 + 1e-9)
    code, table, _ = run("plan", model, SEED, "--objective", "serve")
    assert code == 0 and table.index("tokens/s") < table.index("micro-batches")
    assert "Pareto frontier" in table and "gain over even (vLLM) at its best batch" in table


@pytest.mark.parametrize("args, match", [
    (("--objective", "serve", "--tpot-ms", "0"), r"--tpot-ms must be a number of milliseconds > 0 \(got 0\)"),
    (("--objective", "serve", "--tpot-ms", "-3"), r"--tpot-ms must be a number of milliseconds > 0 \(got -3\)"),
    (("--objective", "serve", "--ttft-ms", "nan"), r"--ttft-ms must be a number of milliseconds > 0 \(got nan\)"),
    (("--objective", "balanced", "--tpot-ms", "50"), r"--tpot-ms needs --objective serve \(got --objective balanced\)"),
    (("--objective", "serve", "--tpot-ms", "0.001"), r"no \(batch, in_flight\) meets the TPOT limit 0.001 ms"),
])
def test_serve_errors_are_one_line(args, match):
    code, _, err = run("plan", EX / "models" / "llama-3.1-8b.yaml", SEED, *args)
    assert code in (2, 3) and len(err.strip().splitlines()) == 1
    assert re.search(match, err), err


def test_api_serve_limits_are_checked():
    import partitioner

    with pytest.raises(InputError, match=r"tpot_ms must be a finite number > 0 \(got -1\)"):
        partitioner.plan(EX / "models" / "llama-3.1-8b.yaml", SEED, objective="serve", tpot_ms=-1)
    with pytest.raises(InputError, match=r"max_batch must be an integer >= 1 \(got 0\)"):
        partitioner.plan(EX / "models" / "llama-3.1-8b.yaml", SEED, objective="serve", max_batch=0)
    p = partitioner.plan(EX / "models" / "llama-3.1-8b.yaml", SEED, objective="serve", max_batch=4, ttft_ms=5000)
    assert p.serving.batch <= 4 and p.serving.ttft_s <= 5.0
    assert math.isfinite(p.serving.tokens_per_s)


def test_a_problem_given_serve_solves_throughput():
    from partitioner.problem import OBJECTIVES, Problem

    assert "serve" in OBJECTIVES
    t = build_tables(load_model(EX / "models" / "llama-3.1-8b.yaml"), load_cluster(SEED))
    assert Problem(t, objective="serve").objective == "throughput"  # what a solver sees


def test_an_infeasible_plan_names_the_kv_cache_when_it_does_not_fit():
    code, out, _ = run("plan", EX / "models" / "llama-3.1-8b.yaml", SEED, "--solver", "even", "--json")
    plan = json.loads(out)
    s = plan["serving"]
    assert code == 0 and not plan["feasible"] and s["max_sequences"] < s["batch"] * s["in_flight"]
    assert re.search(rf"KV cache: stage {s['capacity_stage']} \(\S+\) holds {s['max_sequences']} sequences at "
                     rf"context {s['context']}, the workload needs {s['in_flight']} × {s['batch']}", plan["reason"])


def test_a_time_limit_returns_the_best_so_far_without_a_bound():
    rng = np.random.default_rng(3)
    tables, Bmax = _hand_tables(rng, G=3, L=5)
    calls = []

    def slow(B: int) -> CostTables:
        calls.append(B)
        import time

        time.sleep(0.05)
        return tables[B]

    res = search(slow, list(range(1, Bmax + 1)), order="free", time_limit_s=0.01)
    assert calls == [1] and math.isinf(res.upper_bound) and not res.proven and res.notes


def test_blocking_serve_plan_scores_with_the_closed_loop_sigma():
    import partitioner

    p = partitioner.plan(EX / "models" / "qwen2.5-14b.yaml", SEED, objective="serve", regime="blocking")
    s = p.serving
    assert p.regime == "blocking"
    assert s.tpot_s == pytest.approx(decode_period(p.tau, p.d, s.in_flight, s.d_ret_s, regime="blocking"))
    assert s.tpot_s >= s.in_flight * p.sigma_max * (1 - 1e-12)
