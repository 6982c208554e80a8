"""A deploy script: plan a model on a mixed cluster and print the vLLM launch it would use.

It launches nothing. Run from the repository root:

    python examples/deploy_vllm.py [MODEL.yaml] [CLUSTER.yaml]
"""

from __future__ import annotations

import sys

import partitioner
from partitioner.export import render

model = sys.argv[1] if len(sys.argv) > 1 else "examples/models/qwen2.5-14b.yaml"
cluster = sys.argv[2] if len(sys.argv) > 2 else "examples/clusters/seed.yaml"

try:
    plan = partitioner.plan(model, cluster, M=8, regime="async", objective="balanced")
except partitioner.PartitionerError as exc:
    sys.exit(f"cannot plan: {exc}")

print(f"# {plan.S} stages, bottleneck {plan.tau_max * 1e3:.2f} ms, "
      f"{plan.throughput:.1f} micro-batches/s, {'optimal' if plan.optimal else 'not proven optimal'}")
for stage in plan.stages:
    print(f"#   rank {stage.index}: {stage.device} ({stage.gpu}, {stage.node}) layers [{stage.start}, {stage.end})")
exported = render(plan, "vllm")
print(exported.text.rstrip("\n"))
for warning in (*exported.cannot_express, *exported.warnings):
    print(f"# warning: {warning}")
