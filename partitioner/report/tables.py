"""The report's tables as plain cells, shared by the terminal, Markdown and HTML renderers.

A `Cell` holds the text shown and, for numbers, the dotted JSON path of the value it shows
(`plans.balanced.tau_max`, see `render_json`) so the HTML page can mark it with `data-key`.
"""

from __future__ import annotations

from dataclasses import dataclass

from partitioner.report.compare import PlanRow, Report

__all__ = ["Cell", "Table", "fmt_num", "fmt_pct", "report_tables"]


@dataclass(frozen=True)
class Cell:
    text: str
    key: str | None = None  # JSON path of the number shown
    value: float | None = None
    unit: str = ""  # "" (plain number) or "%" (value * 100 shown)


@dataclass(frozen=True)
class Table:
    name: str
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    note: str = ""


def fmt_num(x: float) -> str:
    return f"{x:.4g}"


def fmt_pct(x: float) -> str:
    return f"{100 * x:+.1f}%"


def _n(x: float, key: str) -> Cell:
    return Cell(fmt_num(x), key, float(x))


def _p(x: float, key: str) -> Cell:
    return Cell(fmt_pct(x), key, float(x), "%")


def _t(text: str) -> Cell:
    return Cell(text)


def _stages(row: PlanRow) -> str:
    m = row.metrics
    if m is None:
        return "-"
    return " > ".join(f"{dev}[{a}:{b})" for dev, (a, b) in zip(m.devices, m.layers))


def _summary(report: Report) -> Table:
    rows = []
    for r in report.rows:
        k = f"plans.{r.name}"
        status = "ok" if r.feasible else "INFEASIBLE"
        m = r.metrics
        if m is None:
            rows.append((_t(r.name), _t(r.label), _t(status), *[_t("-")] * 9, _t("-")))
            continue
        fbl = "-" if m.first_binding_link is None else str(m.first_binding_link)
        rows.append((
            _t(r.name), _t(r.label), _t(status), _t(str(len(m.tau))),
            _n(m.tau_max, f"{k}.tau_max"), _n(m.sigma_max, f"{k}.sigma_max"),
            _n(m.throughput, f"{k}.throughput"), _n(m.first_latency, f"{k}.first_latency"),
            _n(m.homogeneity_bias, f"{k}.homogeneity_bias"),
            _n(m.comm_underestimate, f"{k}.comm_underestimate"),
            _n(m.crossover_batches, f"{k}.crossover_batches"), _t(fbl), _t(_stages(r)),
        ))
    return Table(
        "plans", f"Plans ({report.regime}, optimised at M={report.plan_M}; times in s)",
        ("plan", "engine", "status", "S", "tau_max", "sigma_max", "throughput /s", "first latency",
         "GPipe over: sum(tau_max-tau)", "GPipe under: sum d", "M*", "first binding link", "stages"),
        tuple(rows),
        "GPipe error T_gpipe - T_async = sum(tau_max - tau_j) - sum d (Cor 3).",
    )


def _makespans(report: Report) -> Table:
    cols = ["plan"]
    for M in report.Ms:
        cols += [f"T_async({M})", f"T_block({M})", f"T_gpipe({M})", f"GPipe err({M})"]
    rows = []
    for r in report.rows:
        if r.metrics is None:
            continue
        cells = [_t(r.name)]
        for x in r.metrics.by_M:
            k = f"plans.{r.name}.by_M.{x.M}"
            cells += [_n(x.T_async, f"{k}.T_async"), _n(x.T_block, f"{k}.T_block"),
                      _n(x.T_gpipe, f"{k}.T_gpipe"), _p(x.gpipe_error, f"{k}.gpipe_error")]
        rows.append(tuple(cells))
    return Table("makespans", "Makespan T(M): Thm 2 (async), Thm 3 (blocking), GPipe (Cor 1)",
                 tuple(cols), tuple(rows), "GPipe err = (T_gpipe - T_async) / T_async.")


def _infeasible(report: Report) -> Table:
    rows = tuple((_t(r.name), _t(r.label), _t(r.reason or "-")) for r in report.rows if not r.feasible)
    return Table("infeasible", "Infeasible plans (shown, never repaired)", ("plan", "engine", "reason"), rows)


def _violations(report: Report) -> Table:
    rows = []
    for r in report.rows:
        for i, v in enumerate(r.metrics.violations if r.metrics else ()):
            k = f"plans.{r.name}.violations.{i}"
            rows.append((_t(r.name), _t(str(v.link)), _t(f"{v.source} -> {v.target}"),
                         _n(v.d, f"{k}.d"), _n(v.slack, f"{k}.slack"), _n(v.excess, f"{k}.excess")))
    return Table("violations", "Links with d_s > tau_max - tau_s (Cor 4): they slow the blocking regime",
                 ("plan", "link", "devices", "d_s", "slack", "excess"), tuple(rows))


def _memory(report: Report) -> Table:
    rows = []
    for r in report.rows:
        for i, mem in enumerate(r.metrics.memory if r.metrics else ()):
            k = f"plans.{r.name}.memory.{i}"
            flag = "" if mem.used_gb <= mem.capacity_gb * (1 + 1e-9) else "OVER"
            rows.append((_t(r.name), _t(mem.device), _n(mem.used_gb, f"{k}.used_gb"),
                         _n(mem.capacity_gb, f"{k}.capacity_gb"), _t(flag)))
    return Table("memory", "Memory per device (GB)", ("plan", "device", "used", "usable", ""), tuple(rows))


def _pareto(report: Report) -> Table:
    rows = tuple(
        (_t(str(p.M)), _n(p.throughput, f"pareto.{i}.throughput"),
         _n(p.first_latency, f"pareto.{i}.first_latency"), _n(p.tau_max, f"pareto.{i}.tau_max"),
         _t(" > ".join(f"{d}[{a}:{b})" for d, (a, b) in zip(p.devices, p.layers))))
        for i, p in enumerate(report.pareto)
    )
    return Table("pareto", "Pareto frontier: throughput vs first-micro-batch latency",
                 ("argmin T(M) at M", "throughput /s", "first latency", "tau_max", "stages"), rows,
                 "Supported points only: each minimises T(M) = latency + (M-1) period for some M.")


def _whatifs(report: Report) -> Table:
    cols = ["variation", "throughput /s", "change", "first latency", "change"]
    cols += [f"T({M}) change" for M in report.Ms] + ["devices"]
    rows = []
    for i, w in enumerate(report.whatifs):
        k = f"whatif.{i}"
        if not w.feasible or w.throughput is None or w.first_latency is None:
            rows.append((_t(w.name), _t("INFEASIBLE"), _t("-"), _t(w.reason), _t("-"),
                         *[_t("-")] * len(report.Ms), _t("-")))
            continue
        rows.append((
            _t(w.name), _n(w.throughput, f"{k}.throughput"), _p(w.d_throughput or 0.0, f"{k}.d_throughput"),
            _n(w.first_latency, f"{k}.first_latency"), _p(w.d_first_latency or 0.0, f"{k}.d_first_latency"),
            *[_p(ch, f"{k}.T.{M}.change") for M, _, ch in w.T], _t(", ".join(w.devices)),
        ))
    return Table("whatif", f"What-if against the base plan ({report.base})", tuple(cols), tuple(rows))


def report_tables(report: Report) -> tuple[Table, ...]:
    """Every table, in display order; empty tables are kept (renderers may skip them)."""
    return (_summary(report), _makespans(report), _infeasible(report), _violations(report),
            _memory(report), _pareto(report), _whatifs(report))
