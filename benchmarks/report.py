"""Wall-clock time of `partition report` on every bundled example (prints a table; not a test).

    .venv/bin/python benchmarks/report.py [--work STEPS] [--time-limit S] [--html] [--naive]

Each row is one fresh `partition report MODEL CLUSTER --json ...` process (imports included),
with the default work budget unless `--work` is given (and no wall-clock cap unless
`--time-limit` is); clusters with `order: fixed` are also
run with `--order free`. Columns: solver runs behind the report (the memo: each distinct problem
once, the Pareto sweep by bisection) beside the runs the report made before (3 objectives + one
per Pareto M, each solved from scratch), the plans left unproven by the budget and their worst
gap, and the parts the budget cut short (the report's `cut`). The work budget makes the report
the same on a loaded machine, which then takes longer: the target is on CPU seconds. `--naive` also times that old way, one `auto` solve per plan with CP-SAT's 10 s default
(minutes on the 10- and 24-device clusters).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 5.0

# run inside the child: count the solver runs behind the report, then run the CLI
CHILD = """
import sys
import partitioner.report.solving as s
calls = [0]
inner = s.solve_within
def counted(*a, **k):
    calls[0] += 1
    return inner(*a, **k)
s.solve_within = counted
from partitioner.cli import main
try:
    main(sys.argv[1:], standalone_mode=False)
finally:
    print("SOLVES", calls[0], file=sys.stderr)
"""


def run(model: Path, cluster: Path, extra: list[str]) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        args = [sys.executable, "-c", CHILD, "report", str(model), str(cluster), "--json", str(out), *extra]
        start, before = time.perf_counter(), _child_cpu()
        proc = subprocess.run(args, capture_output=True, text=True, timeout=900)
        wall, cpu = time.perf_counter() - start, _child_cpu() - before
        solves = next((int(line.split()[1]) for line in proc.stderr.splitlines() if line.startswith("SOLVES")), -1)
        if not out.exists():
            last = [x.replace(str(ROOT) + "/", "") for x in proc.stderr.splitlines() if x.strip() and not x.startswith("SOLVES")]
            return {"wall": wall, "cpu": cpu, "solves": solves,
                    "error": (last[-1] if last else f"exit {proc.returncode}")[:60]}
        data = json.loads(out.read_text())
    rows = [p for p in data["plans"].values() if p.get("kind") == "optimal"]
    gaps = [float(p["gap"]) for p in rows]
    unproven = sum(not p["optimal"] for p in rows) + sum(not p["optimal"] for p in data["pareto"])
    naive = 3 + 13 + 4  # objectives, the Pareto Ms 1..4096, the baselines (as before, nothing shared)
    return {"wall": wall, "cpu": cpu, "solves": solves, "naive": naive, "unproven": unproven, "gap": max(gaps, default=0.0),
            "cut": len(data.get("cut", [])),
            "G": len({d for p in data["plans"].values() for d in p.get("devices", [])}), "error": ""}


def _child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def naive_time(model: Path, cluster: Path, order: str | None) -> float:
    """The report's solves as before: every plan solved from scratch by `auto`."""
    import dataclasses

    from partitioner.api import build_problem, solve_problem
    from partitioner.errors import PartitionerError
    from partitioner.report.pareto import PARETO_MS
    from partitioner.solvers import BASELINES

    start = time.perf_counter()
    try:
        p = build_problem(model, cluster, M=8, order=order)
        for obj in ("balanced", "throughput", "makespan"):
            solve_problem(dataclasses.replace(p, objective=obj))
        for name in BASELINES:
            with contextlib.suppress(PartitionerError):
                solve_problem(p, name)
        for M in PARETO_MS:
            solve_problem(dataclasses.replace(p, M=M, objective="makespan"))
    except PartitionerError:
        pass
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=int, default=None, help="the report's work budget in steps (default: its own)")
    ap.add_argument("--time-limit", type=float, default=None)
    ap.add_argument("--html", action="store_true", help="also render the HTML page (charts)")
    ap.add_argument("--naive", action="store_true", help="also time the old one-solve-per-plan way")
    a = ap.parse_args()
    models = sorted((ROOT / "examples" / "models").glob("*.yaml"))
    clusters = sorted((ROOT / "examples" / "clusters").glob("*.yaml"))
    print(f"partition report on every bundled example (target <= {TARGET_S:g} s of CPU per command); "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (wall > cpu: waiting for a core)")
    head = f"{'model':28s} {'cluster':22s} {'order':5s} {'wall s':>7s} {'cpu s':>6s} {'solves':>6s} {'before':>6s} " \
           f"{'unproven':>8s} {'gap':>6s} {'cut':>3s}  {'naive s' if a.naive else ''}"
    print(head)
    print("-" * len(head))
    worst = worst_cpu = 0.0
    for cluster in clusters:
        fixed = "order: fixed" in cluster.read_text()
        for order in ([None, "free"] if fixed else [None]):
            for model in models:
                extra = [] if order is None else ["--order", order]
                if a.time_limit is not None:
                    extra += ["--time-limit", str(a.time_limit)]
                if a.work is not None:
                    extra += ["--work", str(a.work)]
                if a.html:
                    extra += ["--html", str(Path(tempfile.gettempdir()) / "partitioner-bench-report.html")]
                r = run(model, cluster, extra)
                worst = max(worst, float(r["wall"]))  # type: ignore[arg-type]
                worst_cpu = max(worst_cpu, float(r["cpu"]))  # type: ignore[arg-type]
                shown = order or ("fixed" if fixed else "free")
                line = (f"{model.stem[:28]:28s} {cluster.stem[:22]:22s} {shown:5s} {r['wall']:7.2f} {r['cpu']:6.2f} "
                        f"{r['solves']:6d} ")
                if r["error"]:
                    line += f"{'-':>6s} {'-':>8s} {'-':>6s}  {r['error']}"
                else:
                    line += f"{r['naive']:6d} {r['unproven']:8d} {100 * float(r['gap']):5.1f}% {r['cut']:3d}"  # type: ignore[arg-type]
                    if a.naive:
                        line += f"  {naive_time(model, cluster, order):7.1f}"
                print(line, flush=True)
    print(f"slowest: {worst:.2f} s wall, {worst_cpu:.2f} s cpu "
          f"({'within' if worst_cpu <= TARGET_S else 'OVER'} the {TARGET_S:g} s CPU target; the report's budget counts "
          "work, so a loaded machine takes longer and answers the same)")


if __name__ == "__main__":
    main()
