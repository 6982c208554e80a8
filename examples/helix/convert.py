"""Convert Helix's clusters and LLaMA-2-70B profiles to partitioner's cluster.yaml and model.yaml.

    python examples/helix/convert.py [--helix PATH/TO/shared/data/helix] [--out DIR] [--in-flight K]
    partition plan DIR/llama2-70b.yaml DIR/cluster24.yaml --replicas auto

Writes cluster24.yaml (4 A100-40GB, 8 L4, 12 T4, one GPU per machine), cluster42.yaml (42
machines of 7 types, 64 GPUs) and llama2-70b.yaml (Helix's measured decode times per decoder
layer, with its TP-group tables l4x2, t4x2, t4x4). The data stays in ../shared; see
helix_data.py for what each field is.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from helix_data import cluster_yaml, profile_yaml, shared_root

CLUSTERS = {
    "cluster24": "artifact_evaluation/single_cluster/config/cluster24.ini",
    "cluster42": "artifact_evaluation/high_heterogeneity/config/cluster42.ini",
}
HEADER = "# written by examples/helix/convert.py from Helix (Thesys-lab/Helix-ASPLOS25 @148b7330, Apache-2.0)\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--helix", type=Path, default=shared_root() / "data" / "helix")
    ap.add_argument("--out", type=Path, default=Path("helix-out"))
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--in-flight", type=int, default=4)
    ap.add_argument("--context", type=int, default=1024)
    args = ap.parse_args(argv)
    if not args.helix.is_dir():
        print(f"error: {args.helix}: Helix data not found (give --helix or set PARTITIONER_SHARED)", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    for name, rel in CLUSTERS.items():
        path = args.out / f"{name}.yaml"
        path.write_text(HEADER + yaml.safe_dump(cluster_yaml(args.helix / rel, name), sort_keys=False))
        print(f"wrote {path}")
    model = profile_yaml(args.helix / "simulator" / "model_manager" / "llama2_70b", batch=args.batch,
                         in_flight=args.in_flight, context=args.context)
    path = args.out / "llama2-70b.yaml"
    path.write_text(HEADER + yaml.safe_dump(model, sort_keys=False))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
