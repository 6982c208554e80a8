"""Predicted vs logged KV pool on the public start-up log corpus (tests/data/engine_logs.yaml).

    python benchmarks/engine_logs.py [--markdown]

For every row: the engine and version, the rule that version sized its pool by (vLLM's
presets/engines.yaml `pool_rules`), the GPUs, TP x PP, the pool the engine logged and the one
partitioner.costs.kvpool predicts from the row's settings alone (tokens where the log gives tokens
or blocks, else GiB of the worker that sets the pool), the error, whether both agree on the engine
refusing to start, and the row's split: `fit` rows set the engine's measured memory constants
(printed beside the shipped ones), `test` rows are held out. The summary counts rows within ±20 %
(a refusal without a logged pool counts when both refuse) over all rows, the fit rows and the
held-out rows.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from partitioner.calibrate.engine_logs import Prediction, fit_constants, load_rows, predict
from partitioner.models.engines import pool_rule, resolve_engine

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "engine_logs.yaml"
TOLERANCE = 0.20


def _fmt(value: float, unit: str) -> str:
    return f"{value:,.0f}" if unit == "tokens" else f"{value:.2f} GiB"


def _ok(p: Prediction) -> bool:
    if p.logged > 0:
        return abs(p.error) <= TOLERANCE
    return p.refused == bool(p.row.logged.get("refused", 0))


def summary(preds: list[Prediction]) -> dict[str, tuple[int, int]]:
    """(within ±20 %, rows whose log gives a pool) over all rows, the fit rows and the held-out rows."""
    out = {}
    for name, keep in (("all", lambda p: True), ("fit", lambda p: p.row.split == "fit"),
                       ("test", lambda p: p.row.split == "test")):
        chosen = [p for p in preds if keep(p) and p.logged > 0]
        out[name] = (sum(_ok(p) for p in chosen), len(chosen))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print the table as markdown (README)")
    args = parser.parse_args()
    rows = load_rows(CORPUS)
    shipped = resolve_engine("vllm").memory or {}
    print("vLLM memory constants, fitted on the fit rows vs shipped (presets/engines.yaml):")
    for key, value in fit_constants(rows).items():
        print(f"  {key:24s} fit {value:6.2f}   shipped {float(shipped.get(key, float('nan'))):6.2f}")
    head = ("row", "engine", "rule", "GPUs", "TPxPP", "logged", "predicted", "error", "refused (log/model)", "split")
    preds = [predict(row) for row in rows]
    lines = []
    for p in preds:
        row = p.row
        rule = pool_rule(resolve_engine(row.engine), row.version)[1].get("peak", "") if row.engine == "vllm" else "profile"
        err = f"{p.error:+.1%}" if p.logged > 0 else "-"
        lines.append((f"[{row.id}]({row.source})" if args.markdown else row.id, f"{row.engine} {row.version}", rule,
                      "+".join(dict.fromkeys(row.gpus)), f"{row.tp}x{row.pp}", _fmt(p.logged, p.unit),
                      _fmt(p.predicted, p.unit), err,
                      f"{'yes' if row.logged.get('refused') else 'no'}/{'yes' if p.refused else 'no'}", row.split))
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join("---" for _ in head) + "|")
        for line in lines:
            print("| " + " | ".join(line) + " |")
    else:
        widths = [max(len(str(x[i])) for x in [head, *lines]) for i in range(len(head))]
        for line in [head, *lines]:
            print("  ".join(str(x).ljust(w) for x, w in zip(line, widths, strict=True)))
    for name, (ok, n) in summary(preds).items():
        label = {"all": f"all {len(rows)} rows", "fit": "fit rows", "test": "held-out (test) rows"}[name]
        print(f"{label}, those whose log gives a pool, within ±{TOLERANCE:.0%}: {ok}/{n} ({ok / max(n, 1):.0%})")


if __name__ == "__main__":
    main()
