"""Replicas under the serve objective: each replica chooses its own batch B and in-flight count K.
Seeded brute force over every partition of the nodes (unused allowed), each part valued by the
single-pipeline serve search, agrees with plan_deployment's total tokens/s; the replica search's
bound holds; --replicas 1 with serve is the single-pipeline serve plan."""

from __future__ import annotations

import math
import random

import pytest
from test_replicas_exact import _best_partition

import partitioner.deploy.replicas as rep
from partitioner.api import serve_plan
from partitioner.deploy.plan import plan_deployment
from partitioner.errors import InfeasibleError, InputError
from partitioner.models.cluster import ClusterSpec
from partitioner.models.llm import ModelSpec


def _instance(seed: int) -> tuple[ModelSpec, ClusterSpec]:
    """2-3 GPU kinds, 4-6 one-GPU nodes, a profile with batch tables (so B matters) and a KV cache
    that binds (so K matters)."""
    rng = random.Random(seed)
    kinds = rng.sample(["a100-40gb", "l4", "t4"], rng.choice([2, 3]))
    base = {"a100-40gb": 1.4e-3, "l4": 7.0e-3, "t4": 7.5e-3}
    cost = {k: {1: base[k] * f, 4: base[k] * f * rng.uniform(1.2, 2.0), 8: base[k] * f * rng.uniform(2.2, 3.5)}
            for k in base for f in [rng.uniform(0.6, 1.4)]}
    layers = [{"name": "layer", "repeat": rng.randint(3, 5), "cost": cost, "memory_gb": rng.uniform(4, 10),
               "out_bytes": 262144, "kv_bytes_per_token": rng.choice([65536, 262144])}]
    model = ModelSpec.model_validate({"name": "rand", "layers": layers,
                                      "workload": {"batch": 4, "in_flight": 1, "context": 2048}})
    devices = [{"name": f"g{n}", "gpu": rng.choice(kinds), "node": f"m{n}"} for n in range(rng.randint(4, 6))]
    links = {"intra_node": "pcie4", "inter_node": {"latency_ms": rng.choice([0.2, 1.0]), "bandwidth_gb_s": 0.125}}
    return model, ClusterSpec.model_validate({"devices": devices, "links": links, "tp": [1]})


def _brute(model: ModelSpec, cluster: ClusterSpec, replicas: int | None, **limits: float) -> float:
    """Every partition of the nodes; each part's value is the serve search on its own devices."""
    value: dict[frozenset[int], float] = {}

    def v(part: list[int]) -> float:
        key = frozenset(part)
        if key not in value:
            sub = cluster.model_copy(update={"devices": [cluster.devices[g] for g in sorted(part)]})
            try:
                value[key] = serve_plan(model, sub, **limits).serving.tokens_per_s  # type: ignore[arg-type]
            except InfeasibleError:
                value[key] = 0.0
        return value[key]

    return _best_partition(len(cluster.devices), replicas, v)


@pytest.mark.parametrize("seed", range(6))
def test_serve_replicas_agree_with_brute_force(seed: int) -> None:
    model, cluster = _instance(seed)
    want = _brute(model, cluster, None)
    d = plan_deployment(model, cluster, replicas="auto", tp="off", objective="serve")
    assert d.tokens_per_s == pytest.approx(want, rel=1e-9)
    assert d.upper_bound_tokens_per_s >= want * (1 - 1e-9)
    for p in d.replicas:  # each replica reports the (B, K) it chose
        assert p.objective == "serve" and p.serving.batch in (1, 2, 3, 4, 5, 6, 7, 8) and p.serving.in_flight >= 1
        assert p.serving.max_sequences is None or p.serving.max_sequences >= p.serving.sequences


@pytest.mark.parametrize("seed", range(3))
def test_serve_replicas_with_a_tpot_limit_and_a_fixed_count(seed: int) -> None:
    model, cluster = _instance(seed)
    free = plan_deployment(model, cluster, replicas=2, tp="off", objective="serve")
    tpot = 0.8 * max(p.serving.tpot_s for p in free.replicas) * 1e3
    want = _brute(model, cluster, 2, tpot_ms=tpot)
    if want == -math.inf:
        with pytest.raises((InfeasibleError, InputError)):
            plan_deployment(model, cluster, replicas=2, tp="off", objective="serve", tpot_ms=tpot)
        return
    d = plan_deployment(model, cluster, replicas=2, tp="off", objective="serve", tpot_ms=tpot)
    assert d.tokens_per_s == pytest.approx(want, rel=1e-9)
    assert all(p.serving.tpot_s <= tpot / 1e3 * (1 + 1e-9) for p in d.replicas)


@pytest.mark.parametrize("seed", range(4))
def test_serve_columns_bound_the_exact_optimum(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Column generation under the serve objective (forced): never better than the exact
    recursion, its bound never below it."""
    model, cluster = _instance(seed)
    exact = plan_deployment(model, cluster, replicas="auto", tp="off", objective="serve")
    monkeypatch.setattr(rep, "MAX_STATES", 1)
    d = plan_deployment(model, cluster, replicas="auto", tp="off", objective="serve")
    assert d.tokens_per_s <= exact.tokens_per_s * (1 + 1e-9)
    assert d.upper_bound_tokens_per_s >= exact.tokens_per_s * (1 - 1e-9)


def test_one_serve_replica_is_the_serve_plan() -> None:
    model, cluster = _instance(1)
    one = plan_deployment(model, cluster, replicas=1, tp="off", objective="serve")
    ref = serve_plan(model, cluster)
    assert one.serving.tokens_per_s == pytest.approx(ref.serving.tokens_per_s, rel=1e-12)
    assert (one.serving.batch, one.serving.in_flight) == (ref.serving.batch, ref.serving.in_flight)


def test_cli_serve_replicas(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    import yaml
    from click.testing import CliRunner

    from partitioner.cli import main

    model, cluster = _instance(2)
    mfile, cfile = tmp_path / "m.yaml", tmp_path / "c.yaml"
    mfile.write_text(yaml.safe_dump(model.model_dump(mode="json", exclude_defaults=True)))
    cfile.write_text(yaml.safe_dump(cluster.model_dump(mode="json", exclude_defaults=True)))
    want = plan_deployment(model, cluster, replicas="auto", tp="off", objective="serve", max_batch=4)
    res = CliRunner().invoke(main, ["plan", str(mfile), str(cfile), "--replicas", "auto", "--objective", "serve",
                                    "--max-batch", "4", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["serving"]["tokens_per_s"] == pytest.approx(want.tokens_per_s, rel=1e-9)
    assert all(r["serving"]["batch"] <= 4 for r in doc["replicas"])
    bad = CliRunner().invoke(main, ["plan", str(mfile), str(cfile), "--replicas", "2", "--tpot-ms", "5"])
    assert bad.exit_code != 0 and "--tpot-ms needs --objective serve" in bad.output
