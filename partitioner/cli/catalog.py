"""`partition catalog gpus|models|links|engines|prices [--json]`: the shipped presets as a table or JSON."""

from __future__ import annotations

from typing import Any

import click

__all__ = ["catalog", "catalog_rows"]

_COLUMNS: dict[str, tuple[str, ...]] = {
    "gpus": ("id", "name", "family", "memory_type", "compute_class", "compute_capability", "memory_gb",
             "bandwidth_gb_s", "tensor_tflops", "fp32_tflops", "eta_compute", "eta_memory", "token_overhead_ms"),
    "models": ("id", "name", "layers", "hidden", "intermediate", "heads", "kv_heads", "vocab", "tied",
               "experts", "params_b", "kv_bytes_per_token_layer"),
    "links": ("id", "name", "latency_ms", "bandwidth_gb_s"),
    "engines": ("id", "name", "token_overhead_scale", "hop_overhead_ms", "eta_compute_scale", "eta_memory_scale",
                "fp16_accumulate"),
    "prices": ("id", "on_demand_usd_h", "spot_usd_h", "purchase_usd", "owned_usd_h", "date", "source"),
}


def _gpu_row(key: str, raw: dict[str, Any]) -> dict[str, Any]:
    from partitioner.models.cluster import GpuSpec

    gpu = GpuSpec.model_validate(raw)
    eta_c, eta_m, t_fixed, t_token = gpu.factors()  # 16-bit weights, generic engine
    row = gpu.model_dump()
    row.update(id=key, memory_type=gpu.mem_type, compute_class=gpu.compute_kind, eta_compute=eta_c,
               eta_memory=eta_m, overhead_ms=t_fixed * 1e3, token_overhead_ms=t_token * 1e3)
    return row


def _engine_row(key: str, raw: dict[str, Any]) -> dict[str, Any]:
    from partitioner.models.engines import resolve_engine

    row = resolve_engine(key).model_dump()
    scale = row["eta_compute_scale"]
    if isinstance(scale, dict):
        row["eta_compute_scale"] = ", ".join(f"{k} {v:g}" for k, v in scale.items())
    return row


def _model_row(key: str, raw: dict[str, Any]) -> dict[str, Any]:
    from partitioner.costs.roofline import Shape, kv_bytes_per_token, total_params
    from partitioner.models.llm import Architecture

    arch = Architecture.model_validate(raw["architecture"])
    s = Shape.of(arch)
    return {
        "id": key, "name": raw["name"], "layers": s.L, "hidden": s.h, "intermediate": s.i, "heads": s.H,
        "kv_heads": s.kv, "vocab": s.V, "tied": s.tie, "experts": f"{s.k}/{s.E}" if s.E > 1 else "",
        "params_b": round(total_params(s) / 1e9, 3), "kv_bytes_per_token_layer": kv_bytes_per_token(s, 2.0),
        "architecture": arch.model_dump(exclude_none=True), "source": raw.get("source", ""),
    }


def _price_row(key: str, raw: dict[str, Any]) -> dict[str, Any]:
    from partitioner.models.prices import PriceSpec

    return {"id": key, **PriceSpec.model_validate(raw).model_dump()}


def catalog_rows(kind: str) -> list[dict[str, Any]]:
    """One dict per preset of `kind`, with derived figures (params, default efficiencies)."""
    from partitioner.models import catalog as presets

    make = {"gpus": _gpu_row, "models": _model_row, "links": lambda k, raw: {"id": k, **raw}, "engines": _engine_row,
            "prices": _price_row}[kind]
    return [make(key, raw) for key, raw in presets.entries(kind).items()]


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


@click.command("catalog")
@click.argument("kind", type=click.Choice(["gpus", "models", "links", "engines", "prices"]))
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def catalog(kind: str, as_json: bool) -> None:
    """List the shipped GPU, link, model, engine or price presets (ids to use in cluster.yaml / model.yaml;
    prices in US dollars, each with its source and date)."""
    from partitioner.jsonio import dumps

    rows = catalog_rows(kind)
    if as_json:
        click.echo(dumps(rows, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    units = "US dollars; cluster.yaml prices: overrides" if kind == "prices" else "GB = 1e9 bytes"
    table = Table(title=f"partitioner {kind} catalogue ({units})")
    for col in _COLUMNS[kind]:
        table.add_column(col.replace("compute_capability", "cc"), no_wrap=col in ("id", "name"))
    for row in rows:
        table.add_row(*(_cell(row.get(col)) for col in _COLUMNS[kind]))
    Console(width=200, soft_wrap=True).print(table)
