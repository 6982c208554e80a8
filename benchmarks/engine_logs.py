"""Predicted vs logged KV pool on the public start-up log corpus (tests/data/engine_logs.yaml).

    python benchmarks/engine_logs.py [--markdown]

For every row: the engine and version, the model, GPUs, TP x PP, the pool the engine logged and
the one partitioner.costs.kvpool predicts from the row's settings alone (tokens where the log
gives tokens or blocks, else GiB of the worker that sets the pool), the error, whether both agree
on the engine refusing to start, and the row's split: `fit` rows set the engine's measured memory
constants (printed beside the shipped ones), `test` rows are held out. Rows of vLLM before 0.6.4
sized the pool by a different rule (free memory before minus after the profile run) and are shown
apart: the model is an upper bound there.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from partitioner.calibrate.engine_logs import fit_constants, in_scope, load_rows, predict
from partitioner.models.engines import resolve_engine

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "engine_logs.yaml"
TOLERANCE = 0.20


def _fmt(value: float, unit: str) -> str:
    return f"{value:,.0f}" if unit == "tokens" else f"{value:.2f} GiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print the table as markdown (README)")
    args = parser.parse_args()
    rows = load_rows(CORPUS)
    shipped = resolve_engine("vllm").memory or {}
    fitted = fit_constants(rows)
    print("vLLM memory constants, fitted on the fit rows vs shipped (presets/engines.yaml):")
    for key, value in fitted.items():
        print(f"  {key:24s} fit {value:6.2f}   shipped {float(shipped.get(key, float('nan'))):6.2f}")
    head = ("row", "engine", "GPUs", "TPxPP", "logged", "predicted", "error", "refused (log/model)", "split")
    lines = []
    scored = {"fit": [0, 0], "test": [0, 0]}
    every = [0, 0]  # all rows whose log gives a pool, whatever the version
    for row in rows:
        p = predict(row)
        logged_refused = bool(row.logged.get("refused", 0))
        ok = abs(p.error) <= TOLERANCE if p.logged > 0 else p.refused == logged_refused
        if p.logged > 0:
            every[0] += ok
            every[1] += 1
        if in_scope(row):
            scored[row.split][0] += ok
            scored[row.split][1] += 1
        gpus = "+".join(dict.fromkeys(row.gpus))
        err = f"{p.error:+.1%}" if p.logged > 0 else "-"
        split = row.split if in_scope(row) else f"{row.split} (< {resolve_engine(row.engine).pool_rule_since})"
        lines.append((f"[{row.id}]({row.source})" if args.markdown else row.id, f"{row.engine} {row.version}", gpus,
                      f"{row.tp}x{row.pp}", _fmt(p.logged, p.unit), _fmt(p.predicted, p.unit), err,
                      f"{'yes' if logged_refused else 'no'}/{'yes' if p.refused else 'no'}", split))
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join("---" for _ in head) + "|")
        for line in lines:
            print("| " + " | ".join(line) + " |")
    else:
        widths = [max(len(str(x[i])) for x in [head, *lines]) for i in range(len(head))]
        for line in [head, *lines]:
            print("  ".join(str(x).ljust(w) for x, w in zip(line, widths, strict=True)))
    for split, (ok, n) in scored.items():
        print(f"{split} rows of the modelled rule within ±{TOLERANCE:.0%} (refusals: agree): {ok}/{n}")
    print(f"all {len(rows)} rows, those whose log gives a pool, within ±{TOLERANCE:.0%}: {every[0]}/{every[1]}")


if __name__ == "__main__":
    main()
