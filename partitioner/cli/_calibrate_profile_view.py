"""Tables and JSON of `partition calibrate profile` (rich, imported only when the command runs)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from partitioner.jsonio import dumps

__all__ = ["show_summary", "show_fit"]


def _console() -> Any:
    from rich.console import Console

    return Console(width=140, soft_wrap=True)


def _summary_rows(timings: Sequence[Any]) -> list[dict[str, Any]]:
    """Per (device, point): rows, layers covered and the summed seconds."""
    groups: dict[tuple[str, Any], list[Any]] = {}
    for t in timings:
        groups.setdefault((t.device, t.point), []).append(t)
    return [{"device": dev, "phase": p.phase, "batch": p.batch, "tokens": p.tokens, "rows": len(ts),
             "layers": sum(t.n_layers for t in ts), "seconds": sum(t.seconds for t in ts)}
            for (dev, p), ts in groups.items()]


def show_summary(file: str, timings: Sequence[Any], as_json: bool) -> None:
    """The file checked, without a model: what it holds per device and workload point."""
    rows = _summary_rows(timings)
    if as_json:
        click.echo(dumps({"timings": file, "rows": [t.to_dict() for t in timings], "summary": rows}))
        return
    from rich.table import Table

    from partitioner.cli._output import fmt_time

    table = Table(title=f"{file}: {len(timings)} timings")
    for col in ("device", "phase", "batch", "tokens", "rows", "layers", "total time"):
        table.add_column(col, justify="left" if col in ("device", "phase") else "right")
    for r in rows:
        table.add_row(r["device"], r["phase"], str(r["batch"]), str(r["tokens"]), str(r["rows"]), str(r["layers"]),
                      fmt_time(r["seconds"]))
    console = _console()
    console.print(table)
    console.print("give --model (a preset, architecture or hf_config model.yaml) to fit eta_compute, eta_memory "
                  "and the per-layer overhead of each GPU")


def _gpu_table(fit: Any) -> Any:
    from rich.table import Table

    table = Table(title="efficiency per GPU type: default -> fitted")
    for col in ("gpu", "devices", "rows", "eta_compute", "eta_memory", "overhead ms", "RMS err before", "RMS err after"):
        table.add_column(col, justify="left" if col in ("gpu", "devices") else "right")
    for g in fit.gpus:
        d, f = g.default, g.fitted
        table.add_row(g.gpu, ", ".join(g.devices), str(g.rows), _pair(d.eta_c, f.eta_c, g.status[0]),
                      _pair(d.eta_m, f.eta_m, g.status[1]), _pair(1e3 * d.t_fixed, 1e3 * f.t_fixed, g.status[2]),
                      f"{100 * g.rms_before:.1f}%", f"{100 * g.rms_after:.1f}%")
    return table


def _pair(before: float, after: float, status: str) -> str:
    mark = {"fitted": "", "bound": " (bound)", "unidentified": " (default)", "clamped": " (clamped)",
            "kept": " (default)"}[status]
    return f"{before:.3g} -> {after:.3g}{mark}"


def _row_table(fit: Any) -> Any:
    from rich.table import Table

    from partitioner.cli._output import fmt_time

    table = Table(title="predicted vs measured, per row")
    cols = ("device", "layer", "phase", "batch", "tokens", "measured", "default", "fitted", "err default", "err fitted",
            "bound by")
    for col in cols:
        table.add_column(col, justify="left" if col in ("device", "layer", "phase", "bound by") else "right")
    for r in fit.rows:
        t = r.timing
        table.add_row(t.device, t.layer, t.phase, str(t.batch), str(t.tokens), fmt_time(t.seconds),
                      fmt_time(r.predicted_default), fmt_time(r.predicted_fitted), f"{100 * r.error_default:+.1f}%",
                      f"{100 * r.error:+.1f}%", r.regime)
    return table


def show_fit(file: str, model: str, fit: Any, written: dict[str, Any], as_json: bool) -> None:
    """The per-GPU and per-row tables (or JSON), notes on unidentified factors, files written."""
    if as_json:
        click.echo(dumps({"timings": file, "model": model, **fit.to_dict(), "written": written}))
        return
    console = _console()
    console.print(_gpu_table(fit))
    for g in fit.gpus:
        for note in g.notes:
            console.print(f"note: {g.gpu}: {note}")
    console.print(_row_table(fit))
    if "cluster" in written:
        w = written["cluster"]
        console.print(f"wrote {w['path']}: fitted factors for {', '.join(w['devices']) or 'no device'}")
    if "profile" in written:
        w = written["profile"]
        console.print(f"wrote {w['path']}: layers: profile at {w['point']['phase']} batch {w['point']['batch']} "
                      f"tokens {w['point']['tokens']}; filled {len(w['filled'])} of {w['cells']} cells from the "
                      f"fitted cost model")
        if w["uncovered"]:
            console.print(f"note: the profile has no cost for the cluster device(s) {', '.join(w['uncovered'])}: "
                          f"partition plan needs each device's name or gpu id among the CSV's devices")
