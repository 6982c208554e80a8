"""`partition analyze`: every closed-form quantity of a stage chain, as a table or JSON (docs/theory.md).

    partition analyze --tau 0.5,1,1,5 --d 4.6,0.1,0.1 --M 8 [--rho 0.8] [--json]
    partition analyze --tau 0.5,1,1,5 --d 4.6,0.1,0.1 --measured 4:27.3,16:88.5

Numbers are parsed here and validated by `partitioner.analysis`; bad input raises InputError,
which the group's boundary turns into one line on stderr and exit code 2.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from partitioner.cli._parse import parse_float, parse_floats, parse_int, parse_pairs
from partitioner.errors import InputError

if TYPE_CHECKING:
    from partitioner.analysis import Analysis

__all__ = ["analyze"]

# (field, label, source in docs/theory.md); rendered in this order
_ROWS: tuple[tuple[str, str, str], ...] = (
    ("S", "stages S", "§2"),
    ("M", "micro-batches M", "§2"),
    ("tau_max", "tau_max", "§2"),
    ("sigma_max", "sigma_max", "Thm 3"),
    ("T_free", "T_free (d = 0)", "Thm 1"),
    ("T_async", "T_async", "Thm 2"),
    ("T_block", "T_block", "Thm 3"),
    ("T_gpipe", "T_gpipe = (S+M-1) tau_max", "Cor 1"),
    ("gpipe_error", "GPipe error (T_gpipe - T_async)/T_async", "Table 1"),
    ("homogeneity_bias", "homogeneity bias sum(tau_max - tau)", "Cor 1"),
    ("full_bias", "full bias, minus sum d", "Cor 3"),
    ("phase_transition", "phase transition sigma_max > tau_max", "Cor 4"),
    ("overlap_gap", "overlap gap T_block - T_async", "Cor 5"),
    ("rho", "overlap ratio rho", "§9"),
    ("effective_slope", "effective slope", "Cor 5, §9"),
    ("T_real", "T_real = T_block - rho * gap", "§9"),
    ("asymptotic_throughput_async", "throughput, async (1/tau_max)", "Prop 1"),
    ("asymptotic_throughput_blocking", "throughput, blocking (1/sigma_max)", "Prop 1"),
    ("crossover_batches", "crossover M*", "§3 crossover"),
    ("first_latency", "first micro-batch latency", "Thm 2, M = 1"),
    ("bubble_fraction", "bubble fraction (async)", "1 - M sum tau/(S T)"),
)


def _measured(text: str) -> tuple[list[int], list[float]]:
    """`M1:T1,M2:T2,...` -> ([M1, M2, ...], [T1, T2, ...])."""
    pairs = parse_pairs("--measured", text)
    return [m for m, _ in pairs], [t for _, t in pairs]


def _fit_rho(measured: str, tau: list[float], d: list[float] | None) -> float:
    from partitioner.analysis import rho_from_measurements

    Ms, Ts = _measured(measured)
    rho = rho_from_measurements(Ms, Ts, tau, d)
    if not 0.0 <= rho <= 1.0:
        raise InputError(
            f"--measured gives rho = {rho:.6g}, outside [0, 1]: the measurements are not between "
            f"T_async and T_block (Cor 5) for this tau and d (got {measured!r})"
        )
    return rho


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _render(result: Analysis, rho_note: str) -> None:
    import sys

    from rich.console import Console
    from rich.table import Table

    console = Console(width=None if sys.stdout.isatty() else 120)
    main = Table(title=f"Pipeline analysis: tau = {list(result.tau)}, d = {list(result.d)}")
    for name in ("quantity", "value", "source (docs/theory.md)"):
        main.add_column(name, no_wrap=True)
    for field, label, source in _ROWS:
        value = getattr(result, field)
        text = _fmt(value)
        if field == "gpipe_error":
            text += f" ({value:+.1%})"
        if field == "rho":
            text += rho_note
        main.add_row(label, text, source)
    console.print(main)
    if result.S == 1:
        console.print("No links (S = 1).")
        return
    links = Table(title="Links: slack tau_max - tau_s; binds if d_s > slack (Cor 4)")
    for name in ("link", "d_s", "tau_s", "slack", "sigma_s", "binds", "first to bind (Errors 1)"):
        links.add_column(name, no_wrap=True)
    for s, d_s in enumerate(result.d):
        links.add_row(
            f"{s} -> {s + 1}",
            _fmt(d_s),
            _fmt(result.tau[s]),
            _fmt(result.slack[s]),
            _fmt(result.sigma[s]),
            "BINDS" if s in result.binding_links else "no",
            "<- first" if s == result.first_binding_link else "",
        )
    console.print(links)


@click.command("analyze")
@click.option("--tau", required=True, help="Stage times tau_j in seconds, comma-separated, e.g. 0.5,1,1,5.")
@click.option("--d", "d", default=None, help="Link latencies d_s (S-1 values, seconds); default zeros.")
@click.option("--M", "M", default="1", show_default=True, help="Number of micro-batches (integer >= 1).")
@click.option("--rho", default=None, help="Overlap ratio in [0, 1] for T_real and the slope [default: 1].")
@click.option("--measured", default=None, help="Measured makespans M1:T1,M2:T2,... : fit rho from them (§9).")
@click.option("--in-flight", "in_flight", default=None,
              help="Closed-loop decode: K micro-batches circulating (adds decode_* keys).")
@click.option("--d-ret", "d_ret", default=None, help="Closed-loop decode: return latency last -> first stage (s).")
@click.option("--batch", "batch", default=None, help="Closed-loop decode: sequences per micro-batch B.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the table.")
def analyze(
    *, tau: str, d: str | None, M: str, rho: str | None, measured: str | None,
    in_flight: str | None, d_ret: str | None, batch: str | None, as_json: bool,
) -> None:
    """Closed-form makespans, biases, slack and overlap of a pipeline (docs/theory.md Thms 1-3)."""
    from partitioner.analysis import analyze as run_analysis
    from partitioner.jsonio import dumps

    tau_v = parse_floats("--tau", tau)
    d_v = None if d is None else parse_floats("--d", d)
    if rho is not None and measured is not None:
        raise InputError(f"give --rho or --measured, not both (got --rho {rho!r}, --measured {measured!r})")
    run_analysis(tau_v, d_v)  # validate tau and d before fitting rho
    rho_v, note = 1.0, ""
    if rho is not None:
        rho_v = parse_float("--rho", rho)
    if measured is not None:
        rho_v, note = _fit_rho(measured, tau_v, d_v), " (fitted from --measured)"
    result = run_analysis(tau_v, d_v, parse_int("--M", M), rho_v)
    decode = _decode(tau_v, d_v, in_flight, d_ret, batch)
    if as_json:
        payload = result.to_dict()
        if measured is not None:
            payload["measured"] = [list(p) for p in zip(*_measured(measured), strict=True)]
        payload.update(decode)
        click.echo(dumps(payload, indent=None))
    else:
        _render(result, note)
        if decode:
            _render_decode(decode)


def _decode(tau: list[float], d: list[float] | None, K: str | None, d_ret: str | None,
            B: str | None) -> dict[str, Any]:
    """Closed-loop decode (analysis.closed_loop): P = max(K·tau_max, Στ + Σd + d_ret) per round."""
    if K is None and d_ret is None and B is None:
        return {}
    from partitioner.analysis.closed_loop import decode_bound, decode_crossover, decode_period

    k = 1 if K is None else parse_int("--in-flight", K)
    r = 0.0 if d_ret is None else parse_float("--d-ret", d_ret)
    b = None if B is None else parse_int("--batch", B)
    if b is not None and b < 1:
        raise InputError(f"--batch must be an integer >= 1 (got {B!r})")
    if k < 1:
        raise InputError(f"--in-flight must be an integer >= 1 (got {K!r})")
    if r < 0:
        raise InputError(f"--d-ret must be a number of seconds >= 0 (got {d_ret!r})")
    P = decode_period(tau, d, k, r)
    per_round = k * (b or 1)
    return {
        "decode_in_flight": k,
        "decode_d_ret": r,
        "decode_period": P,
        "decode_tokens_per_round": per_round,
        "decode_throughput": per_round / P if P > 0 else None,
        "decode_bound": decode_bound(tau, d, k, r),
        "decode_crossover_in_flight": decode_crossover(tau, d, r),
    }


def _render_decode(decode: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="Closed-loop decode: P = max(K tau_max, sum tau + sum d + d_ret) (max-plus cycle mean)")
    for name in ("quantity", "value"):
        table.add_column(name, no_wrap=True)
    for key, value in decode.items():
        table.add_row(key, _fmt(value))
    Console().print(table)
