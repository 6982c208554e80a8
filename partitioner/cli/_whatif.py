"""`partition plan ... --what-if add:GPU[,GPU...] --what-if remove:DEVICE`: the "which card next" table.

Each single change is planned with the serve objective (partitioner.fleets.marginal); the table
shows the new tokens/s, its change, the change in dollars per hour (presets/prices.yaml, on demand;
cluster.yaml `prices:` overrides) and the dollars per hour for each extra 1,000 tokens/s, best buy
first (the JSON gives it per token/s).
"""

from __future__ import annotations

from typing import Any

import click

__all__ = ["run_what_if", "what_if_text"]


def what_if_text(base: Any, rows: list[Any]) -> str:
    """The table of the module doc."""
    lines = [f"what if (serve objective, on-demand prices): as it is {base.tokens_per_s:,.1f} tokens/s",
             f"  {'change':<28} {'tokens/s':>12} {'Δ tokens/s':>12} {'Δ $/h':>9} {'$/h per +1k tokens/s':>21}"]
    for r in rows:
        price = r.usd_per_token_s
        cell = "-" if price is None else f"{price * 1e3:,.2f}"
        tps = f"{r.tokens_per_s:,.1f}" if r.feasible else "does not fit"
        lines.append(f"  {r.kind + ':' + r.what:<28} {tps:>12} {r.delta_tokens_per_s:>+12,.1f} "
                     f"{r.delta_usd_h + 0.0:>+9.2f} {cell:>21}")
    return "\n".join(lines)


def run_what_if(model: Any, cluster: Any, specs: tuple[str, ...], *, as_json: bool, engine: str | None,
                tp: str | None, tpot_ms: float | None, ttft_ms: float | None, max_batch: int | None,
                time_limit: float | None) -> None:
    from partitioner.fleets.marginal import parse_changes, what_if
    from partitioner.jsonio import dumps

    base, rows = what_if(model, cluster, parse_changes(specs), engine=engine, tp=tp, tpot_ms=tpot_ms,
                         ttft_ms=ttft_ms, max_batch=max_batch, time_limit_s=time_limit)
    if as_json:
        click.echo(dumps({"format": "partitioner.what-if/1", "tokens_per_s": base.tokens_per_s,
                          "changes": [r.to_dict() for r in rows]}, indent=2))
    else:
        click.echo(what_if_text(base, rows))
