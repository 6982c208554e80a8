"""`partition costs model.yaml cluster.yaml [--engine NAME] [--json]`: per-layer, per-device time and memory."""

from __future__ import annotations

from typing import Any

import click

__all__ = ["costs", "tables_to_json"]


def tables_to_json(tables: Any) -> dict[str, Any]:
    """CostTables as one JSON-able object (seconds, GB, bytes, bytes/s; null for an infinite rate)."""
    import math

    def finite(x: float) -> float | None:
        return None if math.isinf(x) else float(x)

    devices = [
        {"name": n, "gpu": g, "node": nd, "capacity_gb": float(c), "total_s": float(t)}
        for n, g, nd, c, t in zip(tables.device_names, tables.gpu_names, tables.node_names,
                                  tables.capacity_gb, tables.cost.sum(axis=1), strict=True)
    ]
    layers = [
        {"index": k, "name": tables.layer_names[k], "kind": tables.kinds[k],
         "params": float(tables.params[k]) if tables.params is not None else 0.0,
         "memory_gb": float(tables.memory_gb[k]), "cut_bytes": float(tables.cut_bytes[k]),
         "cost_s": {n: float(tables.cost[g, k]) for g, n in enumerate(tables.device_names)}}
        for k in range(tables.L)
    ]
    return {
        "model": tables.model_name, "devices": devices, "layers": layers,
        "totals": {"memory_gb": float(tables.memory_gb.sum()), "tied_gb": float(tables.tied_gb),
                   "cost_s": {d["name"]: d["total_s"] for d in devices}},
        "links": {"latency_s": tables.latency_s.tolist(),
                  "bandwidth_Bps": [[finite(x) for x in row] for row in tables.bandwidth_Bps]},
    }


def _layer_table(tables: Any) -> Any:
    from rich.table import Table

    table = Table(title=f"{tables.model_name}: time per micro-batch (ms), memory (GB), cut bytes")
    for col in ("#", "layer", "kind", "memory GB", "cut bytes"):
        table.add_column(col, justify="right" if col not in ("layer", "kind") else "left")
    for name in tables.device_names:
        table.add_column(name, justify="right")
    for k in range(tables.L):
        times = (f"{1e3 * tables.cost[g, k]:.4g}" for g in range(tables.G))
        table.add_row(str(k), tables.layer_names[k], tables.kinds[k], f"{tables.memory_gb[k]:.4g}",
                      f"{tables.cut_bytes[k]:.0f}", *times)
    totals = (f"{1e3 * t:.4g}" for t in tables.cost.sum(axis=1))
    table.add_row("", "total", "", f"{tables.memory_gb.sum():.4g}", "", *totals, end_section=True)
    return table


def _device_table(tables: Any) -> Any:
    from rich.table import Table

    table = Table(title="devices")
    for col in ("device", "gpu", "node", "usable GB", "all layers ms"):
        table.add_column(col)
    for g in range(tables.G):
        table.add_row(tables.device_names[g], tables.gpu_names[g], tables.node_names[g],
                      f"{tables.capacity_gb[g]:.4g}", f"{1e3 * tables.cost[g].sum():.4g}")
    return table


@click.command("costs")
@click.argument("model_file", metavar="MODEL.yaml", type=click.Path(dir_okay=False))
@click.argument("cluster_file", metavar="CLUSTER.yaml", type=click.Path(dir_okay=False))
@click.option("--engine", default=None, metavar="NAME",
              help="Engine whose overheads apply (partition catalog engines); default: the file's engine:, else generic.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")
def costs(model_file: str, cluster_file: str, engine: str | None, as_json: bool) -> None:
    """Per-layer, per-device time and memory, totals, and cut bytes of MODEL on CLUSTER."""
    from partitioner.costs import build_tables
    from partitioner.models import load_cluster, load_model

    tables = build_tables(load_model(model_file), load_cluster(cluster_file), engine=engine)
    if as_json:
        from partitioner.jsonio import dumps

        click.echo(dumps(tables_to_json(tables), indent=2))
        return
    from rich.console import Console

    console = Console(width=max(120, 40 + 11 * tables.G), soft_wrap=True)
    console.print(_layer_table(tables))
    console.print(_device_table(tables))
    tied = f"; tied embeddings {tables.tied_gb:.3g} GB counted on both ends" if tables.tied_gb else ""
    console.print(f"model needs {tables.memory_gb.sum():.4g} GB{tied}; cluster has "
                  f"{tables.capacity_gb.sum():.4g} GB usable")
