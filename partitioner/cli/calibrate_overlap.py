"""`partition calibrate overlap`: slope, overlap ratio rho and advice from measured makespans (docs/theory.md §3).

    partition calibrate overlap --tau 4,5 --d 2 --measure 2:16 --measure 10:56 [--json]
    partition calibrate overlap --tau 1,1,1,1 --d 10,10,10 --measure 8:76,100:628
    partition calibrate overlap --tau 4,5 --d 2 --measurements runs.csv   # columns M,makespan_s

Parsing and the measurements CSV are handled here (the edge); the fit is
`partitioner.calibrate.overlap.fit_overlap` (pure). Bad input raises InputError / ConfigError,
which the group's boundary turns into one line on stderr and exit code 2.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from partitioner.cli._parse import parse_floats, parse_pairs
from partitioner.errors import InputError

if TYPE_CHECKING:
    from partitioner.calibrate.overlap import OverlapFit

__all__ = ["overlap", "read_measurements"]

MEASUREMENT_COLUMNS = ("M", "makespan_s")


def read_measurements(path: str) -> list[tuple[int, float]]:
    """(M, makespan_s) rows of a measurements CSV; errors are located `file:line: column 'x': ...`."""
    from partitioner.calibrate.csvio import integer, number, read_csv

    table = read_csv(path, MEASUREMENT_COLUMNS, what="measurements CSV")
    return [
        (integer(table, row, "M", minimum=1), number(table, row, "makespan_s", positive=True))
        for row in table.rows
    ]


def _f(value: float | None, unit: str = "") -> str:
    return "-" if value is None else f"{value:.6g}{unit}"


def _clean(value: float, scale: float) -> float:
    """Float noise below 1e-9 of `scale` (e.g. a residual of an exact fit) becomes 0."""
    return 0.0 if abs(value) <= 1e-9 * abs(scale) else value


def _notes(fit: OverlapFit) -> list[str]:
    """Lines printed under the tables: why rho or p is undefined or only bounded."""
    notes = []
    if fit.rho is None:
        notes.append(f"rho: undefined — {fit.rho_reason}")
    if fit.p is None:
        bound = "" if fit.p_min is None else f" >= {fit.p_min:.6g}"
        notes.append(f"p:{bound or ' undefined'} — {fit.p_reason}")
    return notes


def _summary_rows(fit: OverlapFit) -> list[tuple[str, str, str]]:
    rho = _f(fit.rho) if fit.rho is not None else "undefined (see below)"
    if fit.rho is not None and not fit.slope_in_range:
        rho += "  (outside [0, 1]: see warning)"
    if fit.p is not None:
        p = f"{fit.p:.6g}"
    elif fit.p_min is not None:
        p = f">= {fit.p_min:.6g} (lower bound, see below)"
    else:
        p = "undefined (see below)"
    diff = _clean(fit.intercept_diff, fit.b)
    rel = fit.intercept_rel if diff else 0.0
    return [
        ("measurements", str(len(fit.points)), ""),
        ("tau_max / sigma_max", f"{_f(fit.tau_max, ' s')} / {_f(fit.sigma_max, ' s')}", "§2, Thm 3"),
        ("slope k", _f(fit.k, " s"), "least squares" if fit.r2 is not None else "exact (2 points)"),
        ("R^2", _f(fit.r2) if fit.r2 is not None else "- (exact)", ""),
        ("intercept b = fitted T(1)", _f(fit.b, " s"), ""),
        ("model T(1) = sum tau + sum d", _f(fit.first_latency, " s"), "Thm 2/3 at M = 1"),
        ("b - model", f"{diff:+.6g} s ({rel:+.2%})", "check on tau, d"),
        ("overlap ratio rho", rho, "§9"),
        ("per-transfer overlap p", p, "Errors 3"),
        ("recoverable by overlap", f"{fit.recoverable:+.2%}", "(1-rho)(sigma_max-tau_max)/tau_max"),
        ("recoverable by rebalancing", f"{fit.rebalance_headroom:+.2%}", "tau_max/mean tau - 1"),
    ]


def _render(fit: OverlapFit) -> None:
    import sys

    from rich.console import Console
    from rich.table import Table

    console = Console(width=None if sys.stdout.isatty() else 120)
    main = Table(title=f"Overlap fit: tau = {list(fit.tau)}, d = {list(fit.d)}")
    for name in ("quantity", "value", "source (docs/theory.md)"):
        main.add_column(name)
    for row in _summary_rows(fit):
        main.add_row(*row)
    console.print(main)
    points = Table(title="Measurements (Cor 5: T_async <= T <= T_block)")
    for name in ("M", "T", "T_async", "T_block", "fitted", "residual", "inside"):
        points.add_column(name, no_wrap=True, justify="right")
    for p in fit.points:
        points.add_row(str(p.M), _f(p.T), _f(p.T_async), _f(p.T_block), _f(p.fitted),
                       f"{_clean(p.residual, p.T):+.3g}", "yes" if p.inside else "NO")
    console.print(points)
    for text in _notes(fit):
        console.print(text, markup=False, highlight=False)
    for text in fit.warnings:
        console.print(f"warning: {text}", style="yellow", markup=False, highlight=False)
    console.print(f"advice: {fit.advice}", markup=False, highlight=False)


def _check_count(pairs: list[tuple[int, float]], measures: tuple[str, ...], csv_path: str | None) -> None:
    """Two or more measurements at two or more distinct M, else an error naming where they came from."""
    where = " and ".join(([("--measure")] if measures else []) + ([f"--measurements {csv_path}"] if csv_path else []))
    Ms = [m for m, _ in pairs]
    if len(Ms) < 2:
        raise InputError(f"{where}: need at least two measurements at two distinct M (got 1: M={Ms[0]})")
    if len(set(Ms)) < 2:
        raise InputError(f"{where}: need measurements at two distinct M (got {len(Ms)}, all at M={Ms[0]})")


@click.command("overlap")
@click.option("--tau", required=True, help="Stage times tau_j in seconds, comma-separated, e.g. 4,5.")
@click.option("--d", "d", default=None, help="Link latencies d_s (S-1 values, seconds); default zeros.")
@click.option("--measure", "measures", multiple=True, metavar="M:T[,M:T...]",
              help="Measured makespan T (s) at M micro-batches; repeatable, or a comma list.")
@click.option("--measurements", "csv_path", default=None, metavar="FILE.csv",
              help="CSV with columns M,makespan_s (added to --measure).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the tables.")
def overlap(tau: str, d: str | None, measures: tuple[str, ...], csv_path: str | None, as_json: bool) -> None:
    """Fit T(M) = b + (M-1) k to measured makespans: rho, per-transfer overlap, advice (docs/theory.md §3)."""
    from partitioner.calibrate.overlap import fit_overlap
    from partitioner.jsonio import dumps

    tau_v = parse_floats("--tau", tau)
    d_v = None if d is None else parse_floats("--d", d)
    pairs = [pair for text in measures for pair in parse_pairs("--measure", text)]
    if csv_path is not None:
        pairs += read_measurements(csv_path)
    if not pairs:
        raise InputError("no measurements: give --measure M:T (at least two, at two distinct M) or --measurements FILE.csv")
    _check_count(pairs, measures, csv_path)
    fit = fit_overlap(tau_v, d_v, [m for m, _ in pairs], [t for _, t in pairs])
    if as_json:
        click.echo(dumps(fit.to_dict(), indent=None))
    else:
        _render(fit)
