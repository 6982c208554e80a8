"""Turn Helix's measured per-layer times into a `layers:` profile that `partition plan` takes.

Helix (Thesys-lab/Helix-ASPLOS25 @148b7330, ASPLOS'25, Apache-2.0) ships, per model and GPU,
`simulator/model_manager/<model>/<gpu>/decode_bs2time.csv` (rows `batch,ms`: one decoder layer's
decode step for that many sequences) and `prompt_bs2time.csv` (rows `tokens,ms`: one layer's
prefill of that many prompt tokens); Helix interpolates linearly between rows, as the profile's
batch tables do. The `0,0` row is dropped (a cost must be > 0).

    python examples/helix/bs2time_to_profile.py --out llama2-70b-helix-batch.yaml
    partition plan llama2-70b-helix-batch.yaml examples/clusters/helix-a100-l4-t4.yaml --objective serve

Memory and KV come from the catalogue's shapes (`--preset`): bf16 weights of one decoder layer and
2·kv·d·2 bytes of KV per token per layer; out_bytes is the hidden state and residual (bf16) of
`--batch` tokens. Helix profiles only decoder layers, so embedding and LM head are left out.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("PARTITIONER_SHARED") or ROOT / ".." / "shared")  # the data sets beside the repo
HELIX = SHARED / "data" / "helix" / "simulator" / "model_manager"
GPUS = {"a100": "a100-40gb", "l4": "l4", "t4": "t4"}  # Helix directory -> catalogue GPU id
PRESETS = {"llama2_70b": "llama-2-70b"}


def read_table(path: Path) -> dict[int, float]:
    """`x,ms` rows -> {x: seconds}, without the 0 row; a located error for a bad row."""
    table: dict[int, float] = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            x, ms = line.split(",")
            key, value = int(x), float(ms)
        except ValueError:
            raise SystemExit(f"{path}:{n}: expected 'size,milliseconds' (got {line!r})") from None
        if key > 0:
            if table and key <= max(table):
                raise SystemExit(f"{path}:{n}: sizes must increase (got {key} after {max(table)})")
            table[key] = value / 1e3
    return table


def _flow(table: dict[int, float]) -> str:
    return "{" + ", ".join(f"{k}: {v:.6g}" for k, v in table.items()) + "}"


def convert(model_dir: Path, preset: str, gpus: dict[str, str] = GPUS, batch: int = 8, context: int = 1024) -> str:
    """The profile YAML text for the GPUs of `gpus` found under `model_dir`."""
    from partitioner.costs.roofline import Shape, kv_bytes_per_token, layer_params
    from partitioner.models import catalog
    from partitioner.models.llm import Architecture

    arch = Architecture.model_validate(catalog.require("models", preset)["architecture"])
    s = Shape.of(arch)
    decode = {gid: read_table(model_dir / d / "decode_bs2time.csv") for d, gid in gpus.items()
              if (model_dir / d / "decode_bs2time.csv").is_file()}
    prompt = {gid: read_table(model_dir / d / "prompt_bs2time.csv") for d, gid in gpus.items()
              if (model_dir / d / "prompt_bs2time.csv").is_file()}
    if not decode:
        raise SystemExit(f"{model_dir}: no {', '.join(gpus)} directory with a decode_bs2time.csv")
    lines = [
        f"# written by examples/helix/bs2time_to_profile.py from {model_dir.name} (Helix @148b7330, Apache-2.0)",
        f"name: {arch and catalog.require('models', preset)['name']} (Helix profile, batch tables)",
        "layers:",
        "  - name: layer",
        f"    repeat: {s.L}",
        "    cost:",
        *(f"      {gid}: {_flow(t)}" for gid, t in decode.items()),
    ]
    if set(prompt) == set(decode):
        lines += ["    prefill_cost:", *(f"      {gid}: {_flow(t)}" for gid, t in prompt.items())]
    lines += [
        f"    memory_gb: {2 * layer_params(s) / 1e9:.6g}        # bf16 weights of one decoder layer",
        f"    kv_bytes_per_token: {kv_bytes_per_token(s, 2.0):g}   # 2 kv d, bf16",
        f"    out_bytes: {2 * batch * s.h * 2}         # hidden state + residual of {batch} tokens, bf16",
        f"    params: {layer_params(s)}",
        f"workload: {{batch: {batch}, context: {context}, prompt_tokens: 512}}",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--helix", type=Path, default=HELIX, help="Helix simulator/model_manager directory")
    ap.add_argument("--model", default="llama2_70b", choices=sorted(PRESETS))
    ap.add_argument("--out", type=Path, default=None, help="write here (default: stdout)")
    args = ap.parse_args(argv)
    text = convert(args.helix / args.model, PRESETS[args.model])
    if args.out is None:
        sys.stdout.write(text)
    else:
        from partitioner.cli._output import safe_write

        safe_write(args.out, text, marker="written by examples/helix/bs2time_to_profile.py")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
