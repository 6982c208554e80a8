"""Replicas: the class-count branch and bound agrees with a brute force over every partition of
the nodes into disjoint pipelines (unused nodes allowed), seeded; the Deployment's weights,
totals and JSON; --replicas 1 is the single-pipeline plan."""

from __future__ import annotations

import json
import math
import random

import pytest

from partitioner.deploy.plan import parse_replicas, plan_deployment
from partitioner.errors import InfeasibleError, InputError
from partitioner.models.cluster import ClusterSpec
from partitioner.models.llm import ModelSpec


def _instance(seed: int, max_nodes: int = 7) -> tuple[ModelSpec, ClusterSpec]:
    rng = random.Random(seed)
    kinds = rng.sample(["a100-40gb", "l4", "t4"], rng.choice([2, 3]))
    L = rng.randint(4, 6)
    base = {"a100-40gb": 1.4e-3, "l4": 7.0e-3, "t4": 7.5e-3}
    layers = [{"name": "layer", "repeat": L, "cost": {k: base[k] * rng.uniform(0.6, 1.4) for k in base},
               "memory_gb": rng.uniform(4, 12), "out_bytes": 262144, "kv_bytes_per_token": 4096}]
    model = ModelSpec.model_validate({"name": "rand", "layers": layers,
                                      "workload": {"batch": 8, "in_flight": rng.choice([1, 2, 4]), "context": 1024}})
    devices = []
    for n in range(rng.randint(4, max_nodes)):
        devices.append({"name": f"g{n}", "gpu": rng.choice(kinds), "node": f"m{n}"})
    links = {"intra_node": "pcie4", "inter_node": {"latency_ms": 1.0, "bandwidth_gb_s": 0.125}}
    return model, ClusterSpec.model_validate({"devices": devices, "links": links, "tp": [1]})


def _set_partitions(items: list[int]):  # every partition of a subset of items (the rest unused)
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for part in _set_partitions(rest):
        yield part  # first unused
        yield [[first], *part]
        for i in range(len(part)):
            yield [*part[:i], [first, *part[i]], *part[i + 1:]]


def _brute(model: ModelSpec, cluster: ClusterSpec, replicas: int | None, parts_ok=lambda part: True) -> float:  # type: ignore[no-untyped-def]
    """Every partition of the devices (only those whose every part `parts_ok` admits), each part
    valued by the same per-replica planner."""
    from partitioner import solvers
    from partitioner.costs import build_tables
    from partitioner.deploy.plan import replica_planner
    from partitioner.problem import Problem

    planner = replica_planner(model, cluster, base=build_tables(model, cluster), make=lambda t: Problem(t, M=8),
                              solve=lambda p: solvers.solve(p, "auto"), tp="off", sizes=(1,), M=8)
    value: dict[frozenset[int], float] = {}

    def v(devs: list[int]) -> float:
        key = frozenset(devs)
        if key not in value:
            try:
                value[key] = planner(sorted(devs)).serving.tokens_per_s
            except InfeasibleError:
                value[key] = 0.0
        return value[key]

    return _best_partition(len(cluster.devices), replicas, v, parts_ok)


def _best_partition(n: int, replicas: int | None, v, parts_ok=lambda part: True) -> float:  # type: ignore[no-untyped-def]
    """The largest sum of v(part) over partitions of devices 0..n-1 (unused allowed) into
    `replicas` parts (any number if None), every part admitted by `parts_ok` and worth > 0."""
    best = 0.0 if replicas is None else -math.inf
    for part in _set_partitions(list(range(n))):
        if (replicas is not None and len(part) != replicas) or not all(parts_ok(p) for p in part):
            continue
        vals = [v(p) for p in part]
        if all(x > 0 for x in vals):
            best = max(best, sum(vals))
    return best


@pytest.mark.parametrize("seed", range(8))
def test_auto_replicas_agree_with_brute_force(seed: int) -> None:
    model, cluster = _instance(seed)
    want = _brute(model, cluster, None)
    if want <= 0:
        with pytest.raises(InfeasibleError):
            plan_deployment(model, cluster, replicas="auto", tp="off")
        return
    d = plan_deployment(model, cluster, replicas="auto", tp="off")
    assert d.upper_bound_tokens_per_s >= d.tokens_per_s * (1 - 1e-9)
    assert d.tokens_per_s == pytest.approx(want, rel=1e-9)
    used = [name for p in d.replicas for st in p.stages for name in (st.members or (st.device,))]
    assert len(used) == len(set(used))  # disjoint
    assert sorted(used + list(d.unused)) == sorted(dev.name for dev in cluster.devices)
    assert sum(d.weights) == pytest.approx(1.0)
    for p, w in zip(d.replicas, d.weights, strict=True):
        assert w == pytest.approx(p.serving.tokens_per_s / d.tokens_per_s)


@pytest.mark.parametrize("seed", [0, 3, 5])
def test_fixed_count_agrees_with_brute_force(seed: int) -> None:
    model, cluster = _instance(seed)
    for n in (2, 3):
        want = _brute(model, cluster, n)
        if not math.isfinite(want):
            with pytest.raises((InputError, InfeasibleError)):
                plan_deployment(model, cluster, replicas=n, tp="off")
            continue
        d = plan_deployment(model, cluster, replicas=n, tp="off")
        assert len(d.replicas) == n
        assert d.tokens_per_s == pytest.approx(want, rel=1e-9)


def test_one_replica_is_the_single_pipeline_plan() -> None:
    from partitioner.api import plan

    model, cluster = _instance(1)
    one = plan_deployment(model, cluster, replicas=1, tp="off")
    today = plan(model, cluster)
    assert [(s.device, s.start, s.end) for s in one.stages] == [(s.device, s.start, s.end) for s in today.stages]
    assert one.to_dict()["stages"] == today.to_dict()["stages"]


def test_identical_replicas_and_json() -> None:
    layers = [{"name": "layer", "repeat": 4, "cost": {"l4": 0.007}, "memory_gb": 10.0, "out_bytes": 262144}]
    model = ModelSpec.model_validate({"name": "m", "layers": layers, "workload": {"batch": 8}})
    cluster = ClusterSpec.model_validate({"devices": [{"name": f"l{i}", "gpu": "l4", "node": f"n{i}"} for i in range(5)],
                                          "links": {"inter_node": {"latency_ms": 1.0, "bandwidth_gb_s": 0.125}}})
    d = plan_deployment(model, cluster, replicas="auto", tp="off")
    # 40 GB on 23 GB cards: two cards per replica; five cards give two replicas and one unused
    assert len(d.replicas) == 2 and len(d.unused) == 1
    assert d.identical
    doc = json.loads(d.to_json())
    assert doc["identical_replicas"] and doc["data_parallel_size"] == 2
    assert doc["serving"]["tokens_per_s"] == pytest.approx(sum(r["serving"]["tokens_per_s"] for r in doc["replicas"]))
    assert [r["weight"] for r in doc["replicas"]] == pytest.approx([0.5, 0.5])
    assert doc["unused_devices"] == list(d.unused)


def test_parse_replicas_errors() -> None:
    assert parse_replicas("auto") is None and parse_replicas("3") == 3 and parse_replicas(2) == 2
    for bad in ("0", "-1", "x", "1.5"):
        with pytest.raises(InputError, match="--replicas"):
            parse_replicas(bad)


def test_cli_replicas_json_and_errors(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from click.testing import CliRunner

    from partitioner.cli import main

    model = tmp_path / "m.yaml"
    model.write_text("name: m\nlayers:\n  - {name: layer, repeat: 4, cost: {l4: 0.007, l4x2: 0.0037}, memory_gb: 10.0, out_bytes: 262144}\n")
    cluster = tmp_path / "c.yaml"
    cluster.write_text("devices:\n" + "".join(f"  - {{name: l{i}, gpu: l4, node: n{i // 2}}}\n" for i in range(6))
                       + "links: {inter_node: {latency_ms: 1.0, bandwidth_gb_s: 0.125}}\ntp: [1, 2]\n")
    runner = CliRunner()
    res = runner.invoke(main, ["plan", str(model), str(cluster), "--replicas", "auto", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["format"] == "partitioner.deployment/1"
    assert doc["serving"]["replicas"] == len(doc["replicas"]) >= 2
    assert all("weight" in r and r["serving"] for r in doc["replicas"])
    stages = [st for r in doc["replicas"] for st in r["stages"]]
    assert any(st.get("tp") == 2 and len(st["devices"]) == 2 for st in stages)  # measured l4x2 wins
    one = runner.invoke(main, ["plan", str(model), str(cluster), "--json"])  # tp: in cluster.yaml: groups
    assert one.exit_code == 0 and json.loads(one.output)["format"] == "partitioner.plan/1"
    bad = runner.invoke(main, ["plan", str(model), str(cluster), "--replicas", "zero"])
    assert bad.exit_code == 2 and "--replicas" in bad.output and "Traceback" not in bad.output


@pytest.mark.parametrize("seed", range(8))
def test_replica_split_for_serving_against_brute_force(seed: int) -> None:
    """The per-replica split: its period P is never below the least P over every split (brute
    force), and equals it whenever the planner says proven."""
    import itertools

    from partitioner import solvers
    from partitioner.costs import build_tables
    from partitioner.deploy.plan import replica_planner
    from partitioner.problem import Problem, evaluate
    from partitioner.serving import serving_of

    model, cluster = _instance(seed, max_nodes=5)
    base = build_tables(model, cluster)
    problem = Problem(base, M=8)
    planner = replica_planner(model, cluster, base=base, make=lambda t: Problem(t, M=8),
                              solve=lambda p: solvers.solve(p, "auto"), tp="off", sizes=(1,), M=8)
    best = math.inf
    for S in range(1, min(base.G, base.L) + 1):
        for inner in itertools.combinations(range(1, base.L), S - 1):
            cuts = (0, *inner, base.L)
            for devs in itertools.permutations(range(base.G), S):
                m = evaluate(problem, devs, cuts)
                if m.fits:
                    best = min(best, serving_of(base, devs, cuts, m, "async").tpot_s)
    if not math.isfinite(best):
        return
    plan = planner(list(range(base.G)))
    assert plan.serving.tpot_s >= best * (1 - 1e-9)
    if plan.optimal:
        assert plan.serving.tpot_s == pytest.approx(best, rel=1e-9)


def test_greedy_mode_beyond_the_state_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Too many node kinds for the recursion and for column generation (more than MAX_MASK_KINDS):
    a greedy deployment, disjoint, not proven, under the fluid bound, and never better than the
    exact recursion."""
    import partitioner.deploy.replicas as rep

    model, cluster = _instance(5)
    exact = plan_deployment(model, cluster, replicas="auto", tp="off")
    monkeypatch.setattr(rep, "MAX_STATES", 1)
    monkeypatch.setattr(rep, "MAX_MASK_KINDS", 0)
    d = plan_deployment(model, cluster, replicas="auto", tp="off")
    assert not d.optimal and d.stopped == "greedy"
    assert d.tokens_per_s <= exact.tokens_per_s * (1 + 1e-9)
    assert d.upper_bound_tokens_per_s >= exact.tokens_per_s * (1 - 1e-9)
    used = [st.device for p in d.replicas for st in p.stages]
    assert len(used) == len(set(used))


def test_cli_export_with_replicas_exports_each_replica(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from click.testing import CliRunner

    from partitioner.cli import main

    model = tmp_path / "m.yaml"
    model.write_text("name: m\nlayers:\n  - {name: layer, repeat: 4, cost: {l4: 0.007}, memory_gb: 10.0}\n")
    cluster = tmp_path / "c.yaml"
    cluster.write_text("devices:\n" + "".join(f"  - {{name: l{i}, gpu: l4, node: n{i}}}\n" for i in range(4)))
    res = CliRunner().invoke(main, ["plan", str(model), str(cluster), "--replicas", "2", "--export", "vllm"])
    assert res.exit_code == 0 and "=== replica 1" in res.output  # one launch per replica (tests/test_export_replicas.py)


def test_ctrl_c_and_time_limit_return_the_best_so_far(monkeypatch: pytest.MonkeyPatch) -> None:
    """A KeyboardInterrupt in a replica solve, or the time limit, stops the search with the best
    deployment of the replicas solved so far, marked not proven, with its bound."""
    import partitioner.deploy.plan as plan_mod

    model, cluster = _instance(5)
    exact = plan_deployment(model, cluster, replicas="auto", tp="off")
    real = plan_mod.replica_planner
    calls = {"n": 0}

    def interrupting(*args, **kwargs):  # type: ignore[no-untyped-def]
        inner = real(*args, **kwargs)

        def planner(devices):  # type: ignore[no-untyped-def]
            calls["n"] += 1
            if calls["n"] == 4:  # one Ctrl-C during the fourth replica solve
                raise KeyboardInterrupt
            return inner(devices)

        return planner

    monkeypatch.setattr(plan_mod, "replica_planner", interrupting)
    d = plan_deployment(model, cluster, replicas="auto", tp="off")
    assert d.stopped == "interrupted" and not d.optimal
    assert 0 < d.tokens_per_s <= exact.tokens_per_s * (1 + 1e-9) <= d.upper_bound_tokens_per_s * (1 + 1e-9)
    assert any("search stopped" in n for n in d.notes)
    monkeypatch.setattr(plan_mod, "replica_planner", real)
    # a limit spent before any replica solve proves nothing: one pipeline, not proven (was InfeasibleError)
    one = plan_deployment(model, cluster, replicas="auto", tp="off", time_limit_s=1e-9)
    assert len(one.replicas) == 1 and not one.optimal and one.stopped == "time_limit"
    assert any("before any replica was solved" in n for n in one.notes)


def test_tp_notes_say_what_engines_cannot_express() -> None:
    from partitioner.deploy.deployment import tp_notes

    layers = [{"name": "layer", "repeat": 4, "cost": {"l4": 0.007, "a100-40gb": 0.0014}, "memory_gb": 9.0}]
    model = ModelSpec.model_validate({"name": "m", "layers": layers})
    cluster = ClusterSpec.model_validate({"devices": [{"name": "l0", "gpu": "l4", "node": "n0"},
                                                      {"name": "a0", "gpu": "a100-40gb", "node": "n0"},
                                                      {"name": "l1", "gpu": "l4", "node": "n1"}], "tp": [1, 2]})
    from partitioner.deploy.layout import score_layout

    d = score_layout(model, cluster, [[{"devices": ["l0", "a0"], "layers": [0, 3]}, {"devices": ["l1"], "layers": [3, 4]}]])
    notes = tp_notes(d.replicas[0])
    assert any("not expressible by vllm, sglang, trtllm" in n for n in notes)
    assert any("mixes GPU types" in n and "slowest" in n for n in notes)
    assert d.replicas[0].to_dict()["stages"][0]["note"].startswith("mixed GPU types")
    uniform = plan_deployment(model, cluster, tp="uniform")
    assert len({st.tp for st in uniform.stages}) == 1 and not any("not expressible" in n for n in uniform.notes)
