"""Does `--time-limit T` answer within T + 1 s, and Ctrl-C within 1 s? The cases of the
reliability review: 64 mixed GPUs with Llama-3.1-70B (int4) and the Helix cluster24.

    python benchmarks/limits.py            # each case once: wall and CPU seconds, exit code
    python benchmarks/limits.py --sigint   # also: SIGINT 3 s into each run, seconds to exit

Prints a table; on a loaded machine read the CPU column (the wall clock includes waiting for a
core). Targets: CPU <= T + 1 s; after SIGINT the process exits within 1 s of CPU.
"""

from __future__ import annotations

import argparse
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
        ("64 GPUs --tp auto", 1.0, ["plan", m70, c64, "--tp", "auto"]),
        ("64 GPUs --solver cpsat", 1.0, ["plan", m70, c64, "--solver", "cpsat"]),
        ("64 GPUs --replicas auto", 1.0, ["plan", m70, c64, "--replicas", "auto"]),
        ("helix serve --replicas auto", 1.0, ["plan", *helix, "--objective", "serve", "--replicas", "auto"]),
        ("helix report", 5.0, ["report", *helix]),
    ]


def run(args: list[str], sigint_after: float | None) -> tuple[float, float, int, float | None]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    p = subprocess.Popen([sys.executable, "-c", "from partitioner.cli import main; main()", *args],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after_sigint = None
    if sigint_after is not None:
        try:
            p.wait(timeout=sigint_after)
        except subprocess.TimeoutExpired:
            sent = time.monotonic()
            p.send_signal(signal.SIGINT)
            p.wait()
            after_sigint = time.monotonic() - sent
    p.wait()
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), p.returncode, after_sigint


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sigint", action="store_true", help="send SIGINT 3 s into each run instead")
    opts = ap.parse_args()
    print(f"{'case':<30} {'T':>5} {'wall s':>8} {'CPU s':>7} {'exit':>5} {'SIGINT->exit s':>15}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, limit, args in cases(Path(tmp)):
            wall, cpu, code, after = run([*args, "--time-limit", str(limit)] if not opts.sigint else args,
                                         3.0 if opts.sigint else None)
            shown = "" if after is None else f"{after:.2f}"
            print(f"{name:<30} {limit if not opts.sigint else '-':>5} {wall:>8.2f} {cpu:>7.2f} {code:>5} {shown:>15}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
