"""Deploy script: read plan.json (the JSON contract), check it, print or write the vLLM scripts.

    partition plan MODEL.yaml CLUSTER.yaml --engine vllm --out plan.json
    python examples/deploy_vllm.py plan.json              # print the launch listing
    python examples/deploy_vllm.py plan.json deploy/      # write one script per host, in run order

plan.json may also be a deployment (`partition plan --replicas auto --out d.json`): one launch
per replica, and router-weights.json beside the scripts.

It reads only the JSON document (`partition schema plan` describes it), refuses a plan marked
infeasible, one vLLM cannot launch as planned or one using a GPU vLLM does not support, and
launches nothing: copy each script to its host and run them in name order.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from partitioner.export import render
from partitioner.export.base import STRICT_EXIT_CODES


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    doc = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    for plan in doc.get("replicas", [doc]):  # a deployment: every replica is a plan
        if not plan.get("feasible", False):
            print(f"error: {argv[0]}: the plan is infeasible ({plan.get('reason') or 'memory limit broken'})", file=sys.stderr)
            return STRICT_EXIT_CODES["infeasible"]
    out = render(doc, "vllm")
    for warning in out.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    problems = out.problems()
    if problems:
        kind, message = problems[0]
        print(f"error: {kind.replace('_', ' ')}: {message}", file=sys.stderr)
        return STRICT_EXIT_CODES[kind]
    if len(argv) < 2:
        print(out.text, end="")
        return 0
    folder = Path(argv[1])
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in [*out.scripts, *out.files]:
        path = folder / name
        if path.exists() and not any(m in path.read_text(encoding="utf-8") for m in ("written by partition export", '"partitioner.router/1"')):
            print(f"error: {path}: exists and was not written by this script", file=sys.stderr)
            return 2
        path.write_text(text, encoding="utf-8")
        path.chmod(0o755 if name.endswith(".sh") else 0o644)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
