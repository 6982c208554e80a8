"""Does `--time-limit T` answer within T + 1 s, and Ctrl-C within 1 s? The cases of the
reliability review: 64 mixed GPUs with Llama-3.1-70B (int4) and the Helix cluster24.

    python benchmarks/limits.py            # each case once: wall and CPU seconds, exit code, gap
    python benchmarks/limits.py --sigint   # instead: no limit, SIGINT once the run has used 2 s of CPU

Prints a table; on a loaded machine read the CPU column (the wall clock includes waiting for a
core). Targets: CPU <= T + 1 s; after SIGINT the process exits within 1 s of CPU (the CPU it used
after the signal: its total minus what /proc said at the signal). Each row ends with
[target met] or [target NOT MET]. The gap is the answer's own: 1 - lower bound / tau for a plan of
a lexicographic objective, the deployment's `gap` for a serve deployment ("-": none claimed).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EX = REPO / "examples"
GPUS = ["a100-80gb", "l4", "rtx-4090", "a10g", "t4", "rtx-3090", "l40s", "a100-40gb"]


def cluster64(where: Path) -> Path:
    lines = ["name: c64", "devices:"]
    for n in range(8):
        lines += [f"  - {{name: n{n}g{i}, gpu: {GPUS[(n + i // 4) % 8]}, node: node{n}}}" for i in range(8)]
    lines.append("links: {intra_node: pcie4, inter_node: 10gbe}")
    path = where / "c64.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def cases(where: Path) -> list[tuple[str, float, list[str]]]:
    c64, m70 = str(cluster64(where)), str(EX / "models/llama-3.1-70b-int4.yaml")
    helix = [str(EX / "models/llama2-70b-helix-profile.yaml"), str(EX / "clusters/helix-a100-l4-t4.yaml")]
    return [
        ("64 GPUs --tp auto", 1.0, ["plan", m70, c64, "--tp", "auto", "--json"]),
        ("64 GPUs --tp auto balanced", 1.0, ["plan", m70, c64, "--tp", "auto", "--objective", "balanced", "--json"]),
        ("64 GPUs --solver cpsat", 1.0, ["plan", m70, c64, "--solver", "cpsat", "--json"]),
        ("64 GPUs --replicas auto", 1.0, ["plan", m70, c64, "--replicas", "auto", "--json"]),
        ("helix serve --replicas auto", 1.0, ["plan", *helix, "--objective", "serve", "--replicas", "auto", "--json"]),
        ("helix report", 5.0, ["report", *helix, "--json", "-"]),
    ]


def _cpu_of(pid: int) -> float:
    """CPU seconds (user + system) a running process has used so far (Linux /proc; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _gap(out: bytes) -> str:
    """The answer's gap from its --json output ("-": none claimed, "?": no JSON)."""
    try:
        doc = json.loads(out)
    except ValueError:
        return "?"
    if doc.get("gap") is not None:
        return f"{100 * doc['gap']:.1f}%"
    value, lb = doc.get("objective_value"), doc.get("lower_bound")
    if doc.get("objective") != "serve" and value and lb is not None and value[0] > 0:
        return f"{100 * (1 - lb / value[0]):.1f}%"
    return "-"


def run(args: list[str], sigint_after: float | None) -> tuple[float, float, int, float | None, float | None, str]:
    """(wall s, CPU s, exit code, wall s from SIGINT to exit, CPU s after SIGINT, gap); SIGINT once
    the run has used `sigint_after` seconds of CPU."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    after_sigint = cpu_at_sigint = None
    with tempfile.TemporaryFile() as sink:  # not a pipe: a large answer must not block the run we poll
        p = subprocess.Popen([sys.executable, "-c", "from partitioner.cli import main; main()", *args],
                             stdout=sink, stderr=subprocess.DEVNULL)
        if sigint_after is not None:  # a CPU budget: the signal lands mid-search however loaded the machine
            while p.poll() is None and _cpu_of(p.pid) < sigint_after:
                time.sleep(0.05)
            if p.poll() is None:
                cpu_at_sigint = _cpu_of(p.pid)
                sent = time.monotonic()
                p.send_signal(signal.SIGINT)
                p.wait()
                after_sigint = time.monotonic() - sent
        p.wait()
        sink.seek(0)
        out = sink.read()
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    cpu_after = None if cpu_at_sigint is None else max(0.0, cpu - cpu_at_sigint)
    return wall, cpu, p.returncode, after_sigint, cpu_after, _gap(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sigint", action="store_true", help="no limit; SIGINT after 2 s of the run's CPU instead")
    opts = ap.parse_args()
    print(f"{'case':<30} {'T':>5} {'wall s':>8} {'CPU s':>7} {'exit':>5} {'gap':>7} {'SIGINT->exit s':>15} "
          f"{'CPU after':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, limit, args in cases(Path(tmp)):
            wall, cpu, code, after, cpu_after, gap = run(
                [*args, "--time-limit", str(limit)] if not opts.sigint else args, 2.0 if opts.sigint else None)
            # with --sigint: met when the CPU after the signal is at most 1 s (or it finished before it)
            met = (cpu_after is None or cpu_after <= 1.0) if opts.sigint else cpu <= limit + 1.0
            shown = "" if after is None else f"{after:.2f}"
            shown_cpu = "" if cpu_after is None else f"{cpu_after:.2f}"
            print(f"{name:<30} {limit if not opts.sigint else '-':>5} {wall:>8.2f} {cpu:>7.2f} {code:>5} {gap:>7} "
                  f"{shown:>15} {shown_cpu:>9} [target {'met' if met else 'NOT MET'}]", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
