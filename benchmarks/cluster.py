"""Cluster-scale plans on Helix's clusters: one pipeline, the best replica plan, Helix's layouts.

    PARTITIONER_SHARED=/path/to/shared python benchmarks/cluster.py [--in-flight 4] [--time-limit 60]
        [--skip-synthetic] [--cluster cluster42] [--rows serve,helix]

For cluster24 (4 A100-40GB, 8 L4, 12 T4) and cluster42 (42 machines, 7 types, 64 GPUs) with
Helix's measured LLaMA-2-70B decode profile (examples/helix/helix_data.py), it prints the
closed-loop decode tokens/s (batch B per micro-batch, K micro-batches in flight per pipeline)
of one pipeline over TP groups, of the best replica plan (with solve time, proof or gap), and
of Helix's published layouts scored the same way (partitioner.deploy.layout): its per-type
"separate pipelines", and the disjoint chains of its Petals, Swarm and MILP layouts
(helix_data.chains). Then a synthetic cluster of 256 GPUs of 8 types on 64 nodes.
Targets: cluster24 < 10 s, cluster42 < 60 s, synthetic 256 GPUs < 60 s (one core).
`--cluster` runs one Helix cluster only; `--rows` some of the rows (one, replicas, serve, helix).
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples" / "helix"))

from helix_data import chains, cluster_yaml, layout, layout_for_cluster, profile_yaml, shared_root  # noqa: E402

from partitioner.deploy.layout import score_layout  # noqa: E402
from partitioner.deploy.plan import plan_deployment  # noqa: E402
from partitioner.models.cluster import ClusterSpec  # noqa: E402
from partitioner.models.llm import ModelSpec  # noqa: E402

AE = "artifact_evaluation"
ROWS = frozenset({"one", "replicas", "serve", "helix"})
LAYOUTS = {
    "cluster24": ("single_cluster/layout_llama70b", ["a100", "l4", "t4"]),
    "cluster42": ("high_heterogeneity/layout_llama70b", ["a100", "l4", "l4x2", "t4x2", "t4x4", "v100_t4"]),
}
INI = {"cluster24": "single_cluster/config/cluster24.ini", "cluster42": "high_heterogeneity/config/cluster42.ini"}


def _separate(helix: Path, name: str, cluster: dict) -> tuple[list, list[str]]:
    """Helix's per-type pipelines placed on this cluster's machines; those whose machines the
    cluster does not have (cluster42's v100_t4 file lists 8 V100s, the cluster has 6) are skipped."""
    base, kinds = LAYOUTS[name]
    taken: set[str] = set()
    replicas, skipped = [], []
    for kind in kinds:
        d = helix / AE / base / "separate"
        sol, sim = ((d / f"{kind}_solution_file.ini", d / f"{kind}_simulator_cluster.ini") if name == "cluster24"
                    else (d / kind / "solution_file.ini", d / kind / "simulator_cluster.ini"))
        nodes = layout(sol, sim)
        try:
            replicas += layout_for_cluster(nodes, [list(range(len(nodes)))], cluster, set(taken))
            layout_for_cluster(nodes, [list(range(len(nodes)))], cluster, taken)
        except ValueError as exc:
            skipped.append(f"{kind}: {exc}")
    return replicas, skipped


def _chains(helix: Path, name: str, which: str, cluster: dict) -> tuple[list, int]:
    d = helix / AE / LAYOUTS[name][0] / which
    sol = {"petals": "petals_sol.ini", "swarm": "swarm_sol.ini", "ilp": "ilp_sol.ini"}[which]
    nodes = layout(d / sol, d / "simulator_cluster.ini")
    pipes, unused = chains(nodes)
    return (layout_for_cluster(nodes, pipes, cluster) if pipes else []), len(unused)


def _best_bk(model: ModelSpec, cluster: ClusterSpec, replicas: list, batches: list[int]) -> float:
    """Each layout replica at its own best (B, K), as the serve objective chooses for a fixed split:
    per batch B its stages' τ, the round trip R and the sequences that fit (scored at K = 1), then
    the best K <= max_sequences / B of K·B / max(K·τ_max, R) (async closed loop)."""
    best = [0.0] * len(replicas)
    for B in batches:
        scored = score_layout(model.with_batch(B, 1), cluster, {"replicas": [{"stages": r} for r in replicas]})
        for i, p in enumerate(scored.replicas):
            s = p.serving
            if not p.feasible or (s.max_sequences is not None and s.max_sequences < B):
                continue
            w, R = max(st.tau for st in p.stages), s.round_trip_s
            k_max = (s.max_sequences // B) if s.max_sequences is not None else max(1, math.ceil(R / w))
            k = min(k_max, max(1, math.ceil(R / w)))
            best[i] = max(best[i], max(kk * B / max(kk * w, R) for kk in {k, max(1, k - 1)}))
    return sum(best)


def _row(label: str, tps: float | None, extra: str = "") -> None:
    value = f"{tps:10.1f}" if tps is not None else "         —"
    print(f"  {label:<34} {value} tok/s  {extra}")


def run_helix(helix: Path, in_flight: int, time_limit: float, names: tuple[str, ...] = ("cluster24", "cluster42"),
              rows: frozenset[str] = ROWS) -> None:
    from partitioner.planning.serve_limits import profile_batches

    model = ModelSpec.model_validate(profile_yaml(helix / "simulator" / "model_manager" / "llama2_70b",
                                                  batch=8, in_flight=in_flight, context=1024))
    batches = profile_batches(model) or [8]
    for name in names:
        cdict = cluster_yaml(helix / AE / INI[name], name)
        cluster = ClusterSpec.model_validate(cdict)
        print(f"\n{name}: {len(cluster.devices)} GPUs on {len({d.node for d in cluster.devices})} machines, "
              f"LLaMA-2-70B decode, B = 8, K = {in_flight} per pipeline")
        tp = "auto" if name == "cluster24" else "node"  # cluster42: whole machines as TP groups (Helix's units)
        if "one" in rows:
            _one(model, cluster, tp, time_limit)
        if "replicas" in rows:
            _replicas(model, cluster, tp, time_limit)
        if "serve" in rows:
            _serve(model, cluster, tp, time_limit)
        if "helix" in rows:
            _helix_rows(helix, name, cdict, model, cluster, batches)


def _one(model: ModelSpec, cluster: ClusterSpec, tp: str, time_limit: float) -> None:
    t0 = time.perf_counter()
    one = plan_deployment(model, cluster, replicas=1, tp=tp, objective="throughput", time_limit_s=time_limit)
    t1 = time.perf_counter() - t0
    _row(f"one pipeline (tp={tp})", one.serving.tokens_per_s,
         f"{one.S} stages, {t1:.2f} s, {'proven' if one.optimal else 'not proven'} for its τ objective")


def _replicas(model: ModelSpec, cluster: ClusterSpec, tp: str, time_limit: float) -> None:
    _deployment(model, cluster, tp, time_limit, serve=False)


def _serve(model: ModelSpec, cluster: ClusterSpec, tp: str, time_limit: float) -> None:
    _deployment(model, cluster, tp, time_limit, serve=True)


def _deployment(model: ModelSpec, cluster: ClusterSpec, tp: str, time_limit: float, *, serve: bool) -> None:
    """The replica plan at the workload's B, K (serve=False) or at each replica's own (serve=True)."""
    t0 = time.perf_counter()
    dep = plan_deployment(model, cluster, replicas="auto", tp=tp, time_limit_s=time_limit,
                          **({"objective": "serve"} if serve else {}))
    took = time.perf_counter() - t0
    proof = "proven" if dep.optimal else f"gap {dep.gap:.1%} (bound {dep.upper_bound_tokens_per_s:.1f})"
    label = "serve: own B, K" if serve else "best replica plan"
    _row(f"{label} ({len(dep.replicas)} replicas)", dep.tokens_per_s,
         f"{took:.2f} s, {dep.subproblems} replica solves, {proof}{', ' + dep.stopped if dep.stopped else ''}")
    for r, p in enumerate(dep.replicas):
        shape = " ".join(f"{st.gpu}[{st.start},{st.end})" for st in p.stages)
        bk = f"  B={p.serving.batch} K={p.serving.in_flight}" if serve else ""
        print(f"      replica {r}: {p.serving.tokens_per_s:7.1f} tok/s{bk}  {shape}")
    if dep.unused and not serve:
        print(f"      unused: {len(dep.unused)} GPUs")


def _helix_rows(helix: Path, name: str, cdict: dict, model: ModelSpec, cluster: ClusterSpec, batches: list[int]) -> None:
    sep, skipped = _separate(helix, name, cdict)
    layouts = [("Helix separate pipelines", sep, 0)]
    for why in skipped:
        print(f"      (separate pipeline skipped: {why})")
    for which in ("petals", "swarm", "ilp"):
        reps, left = _chains(helix, name, which, cdict)
        layouts.append((f"Helix {which} (disjoint chains)", reps, left))
    for label, reps, left in layouts:
        if not reps:
            _row(label, None, "no disjoint chain covers all 80 layers")
            continue
        scored = score_layout(model, cluster, {"replicas": [{"stages": r} for r in reps]})
        bad = [p.reason for p in scored.replicas if not p.feasible]
        own = _best_bk(model, cluster, reps, batches)
        _row(label, scored.tokens_per_s, f"{len(reps)} pipelines" + (f", {left} nodes off-chain" if left else "")
             + (f", memory broken: {bad[0]}" if bad else "") + f"; own B, K: {own:.1f} tok/s")


def run_synthetic(in_flight: int, time_limit: float) -> None:
    """256 GPUs of 8 types on 64 nodes of 4 (one type per node); a 80-layer profile; every node
    runs as one TP-4 group (--tp node, costs c/4 plus the all-reduces)."""
    rng = random.Random(0)
    types = ["a100-40gb", "a100-80gb", "l4", "t4", "l40s", "a10g", "rtx-4090", "rtx-3090"]
    speed = {g: rng.uniform(1.0, 6.0) for g in types}
    cost = {g: 1.4e-3 * speed[g] for g in types}
    model = ModelSpec.model_validate({"name": "synthetic-70b", "workload": {"batch": 8, "in_flight": in_flight},
                                      "layers": [{"name": "layer", "repeat": 80, "cost": cost, "memory_gb": 1.7113,
                                                  "kv_bytes_per_token": 4096, "out_bytes": 262144}]})
    devices = [{"name": f"n{n:02d}-{k}", "gpu": types[n % 8], "node": f"node-{n:02d}"} for n in range(64) for k in range(4)]
    cluster = ClusterSpec.model_validate({"devices": devices, "tp": [1, 2, 4], "links": {
        "intra_node": "pcie4", "inter_node": {"latency_ms": 1.0, "bandwidth_gb_s": 1.25}}})
    t0 = time.perf_counter()
    dep = plan_deployment(model, cluster, replicas="auto", tp="node", time_limit_s=time_limit)
    t = time.perf_counter() - t0
    proof = "proven" if dep.optimal else f"gap {dep.gap:.1%}"
    print(f"\nsynthetic: 256 GPUs, 8 types, 64 nodes (tp=node): {len(dep.replicas)} replicas, {dep.tokens_per_s:.1f} tok/s, "
          f"{t:.2f} s, {dep.subproblems} replica solves, {proof}{', ' + dep.stopped if dep.stopped else ''}")


def main() -> int:
    ap = argparse.ArgumentParser(description="Cluster-scale plans on Helix's clusters")
    ap.add_argument("--in-flight", type=int, default=4)
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--skip-synthetic", action="store_true")
    ap.add_argument("--cluster", choices=sorted(LAYOUTS), action="append",
                    help="run this Helix cluster only (repeatable; default both)")
    ap.add_argument("--rows", default=",".join(sorted(ROWS)), help="comma-separated rows: one, replicas, serve, helix")
    args = ap.parse_args()
    rows = frozenset(r.strip() for r in args.rows.split(",") if r.strip())
    if not rows <= ROWS:
        ap.error(f"--rows: unknown {sorted(rows - ROWS)} (valid: {', '.join(sorted(ROWS))})")
    helix = shared_root() / "data" / "helix"
    if helix.is_dir():
        run_helix(helix, args.in_flight, args.time_limit, tuple(args.cluster or LAYOUTS), rows)
    else:
        print(f"{helix} is absent: set PARTITIONER_SHARED to run the Helix rows", file=sys.stderr)
    if not args.skip_synthetic:
        run_synthetic(args.in_flight, args.time_limit)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
