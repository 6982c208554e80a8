"""The report's tables as plain cells, shared by the terminal, Markdown and HTML renderers.

A `Cell` holds the text shown (in human units: ms, µs, GB, tokens/s) and, for numbers, the
dotted JSON path of the raw SI value it shows (`plans.balanced.tau_max`, see `render_json`)
and the scale from that value to the number in the text (1e3 for ms), so the HTML page can mark
it with `data-key` / `data-scale` and a test can check every figure against the JSON.
"""

from __future__ import annotations

from dataclasses import dataclass

from partitioner.report.compare import PlanRow, Report
from partitioner.report.units import fmt_gb, fmt_rate, fmt_time, time_unit

__all__ = ["Cell", "Table", "fmt_num", "fmt_pct", "report_tables", "num", "secs", "pct", "gb", "rate", "text",
           "layout", "link_name"]


@dataclass(frozen=True)
class Cell:
    text: str
    key: str | None = None  # JSON path of the number shown
    value: float | None = None
    unit: str = ""  # unit of the number in `text`: "", "%", "ms", "µs", "s", "GB", "tokens/s", ...
    scale: float = 1.0  # number in `text` = value * scale
    cls: str = ""  # "bad" (INFEASIBLE, OVER) or "" (renderers style it)


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


def num(x: float, key: str) -> Cell:
    return Cell(fmt_num(x), key, float(x))


def pct(x: float, key: str) -> Cell:
    return Cell(fmt_pct(x), key, float(x), "%", 100.0)


def secs(x: float, key: str) -> Cell:
    unit, scale = time_unit(x)
    return Cell(fmt_time(x), key, float(x), unit, scale)


def gb(x: float, key: str, cls: str = "") -> Cell:
    return Cell(fmt_gb(x), key, float(x), "GB", 1.0, cls)


def rate(x: float, key: str, unit: str) -> Cell:
    return Cell(fmt_rate(x, unit), key, float(x), unit, 1.0)


def text(t: str, cls: str = "") -> Cell:
    return Cell(t, cls=cls)


def _prefix(name: str) -> str:
    return name.rsplit("-", 1)[0] if "-" in name else name


def layout(devices: tuple[str, ...], counts: tuple[int, ...], ends: tuple[str, ...] = (),
           compact: bool = False) -> str:
    """"a100-0 (12) → l4-0 (20 + head)": devices in pipeline order with their decoder layers.

    `compact` joins a run of 3+ neighbours with one name prefix and layer count, no embedding or
    head: "t4-0 … t4-7 (2 each)"."""
    parts: list[str] = []
    i = 0
    while i < len(devices):
        def plain_at(k: int) -> bool:
            return not (k < len(ends) and ends[k])

        j = i
        while (compact and j + 1 < len(devices) and plain_at(i) and plain_at(j + 1)
               and counts[j + 1] == counts[i] and _prefix(devices[j + 1]) == _prefix(devices[i])):
            j += 1
        if j - i >= 2:
            parts.append(f"{devices[i]} … {devices[j]} ({counts[i]} each)")
        else:
            for k in range(i, j + 1):
                extra = f" + {ends[k].replace('+', ' + ')}" if not plain_at(k) else ""
                parts.append(f"{devices[k]} ({counts[k] if k < len(counts) else 0}{extra})")
        i = j + 1
    return " → ".join(parts)


def link_name(row: PlanRow, link: int | None) -> str:
    m = row.metrics
    if m is None or link is None or link + 1 >= len(m.devices):
        return "-"
    return f"{m.devices[link]} → {m.devices[link + 1]}"


def _status(r: PlanRow) -> Cell:
    if r.feasible:
        return text("ok" if r.optimal or r.kind == "baseline" else f"best found, gap ≤ {100 * r.gap:.0f}%")
    return text("INFEASIBLE", "bad")


def _name(r: PlanRow) -> str:
    return r.name if r.kind == "optimal" else f"{r.name} ({r.label})"


def _tokens(x: float, key: str, unit: str) -> Cell:
    """A tokens/s figure without its unit (the column header names it)."""
    return Cell(f"{x:,.0f}" if x >= 1000 else f"{x:.4g}", key, float(x), unit)


def _summary(report: Report) -> Table:
    rows = []
    unit = next((r.metrics.tokens_unit for r in report.rows if r.metrics is not None), "tokens/s")
    for r in report.rows:
        k = f"plans.{r.name}"
        m = r.metrics
        if m is None:
            rows.append((text(_name(r)), _status(r), *[text("-")] * 6))
            continue
        rows.append((
            text(_name(r)), _status(r), text(str(len(m.tau))),
            _tokens(m.tokens_per_s, f"{k}.tokens_per_s", unit),
            secs(m.tau_max, f"{k}.tau_max"), secs(m.sigma_max, f"{k}.sigma_max"),
            secs(m.first_latency, f"{k}.first_latency"), num(m.crossover_batches, f"{k}.crossover_batches"),
        ))
    return Table(
        "plans", f"Plans ({report.regime}, optimised at M = {report.plan_M})",
        ("plan", "status", "S", unit, "τ_max", "σ_max", "first latency", "M*"),
        tuple(rows),
        f"{unit}: sequences per micro-batch × micro-batches/s (1/period, Prop 1) unless a serving "
        "model gives it. First latency Στ + Σd (Thm 2 at M = 1); M* = 1 + (Στ + Σd)/τ_max.",
    )


def _layouts(report: Report) -> Table:
    rows = tuple((text(r.name), text(layout(r.metrics.devices, r.metrics.decoder_layers, r.metrics.ends)),
                  text(link_name(r, r.metrics.first_binding_link)))
                 for r in report.rows if r.metrics is not None)
    return Table("layouts", "Layouts: devices in pipeline order (decoder layers)",
                 ("plan", "stages", "first link to bind"), rows,
                 "First link to bind: the one leaving the slowest stage that has an outgoing link (Errors 1).")


def _makespans(report: Report) -> Table:
    reg = "async" if report.regime == "async" else "block"
    top = max(report.Ms)
    cols = ["plan", *[f"T({M})" for M in report.Ms], "GPipe over", "GPipe under", f"GPipe err({top})"]
    rows = []
    for r in report.rows:
        m = r.metrics
        if m is None:
            continue
        k = f"plans.{r.name}"
        cells = [text(r.name)]
        for x in m.by_M:
            cells.append(secs(x.T_async if reg == "async" else x.T_block, f"{k}.by_M.{x.M}.T_{reg}"))
        last = next(x for x in m.by_M if top == x.M)
        cells += [secs(m.homogeneity_bias, f"{k}.homogeneity_bias"), secs(m.comm_underestimate,
                  f"{k}.comm_underestimate"), pct(last.gpipe_error, f"{k}.by_M.{top}.gpipe_error")]
        rows.append(tuple(cells))
    return Table("makespans", f"Makespan T(M), {report.regime} (Thm {'2' if reg == 'async' else '3'}) and GPipe's "
                 "error (Cor 1, 3)", tuple(cols), tuple(rows),
                 "GPipe over = Σ(τ_max − τ_j), GPipe under = Σd: T_gpipe − T_async = over − under at every M; "
                 "GPipe err = (T_gpipe − T_async)/T_async. "
                 "The JSON report has T_async, T_block and T_gpipe at every M.")


def _infeasible(report: Report) -> Table:
    rows = tuple((text(r.name), text(r.label), text(r.reason or "-", "bad")) for r in report.rows if not r.feasible)
    return Table("infeasible", "Plans that do not fit (shown, never repaired)", ("plan", "engine", "reason"), rows)


def _violations(report: Report) -> Table:
    rows = []
    for r in report.rows:
        for i, v in enumerate(r.metrics.violations if r.metrics else ()):
            k = f"plans.{r.name}.violations.{i}"
            rows.append((text(r.name), text(f"{v.source} → {v.target}"), secs(v.d, f"{k}.d"),
                         secs(v.slack, f"{k}.slack"), secs(v.excess, f"{k}.excess")))
    return Table("violations", "Links with d_s > τ_max − τ_s (Cor 4): they set the blocking period",
                 ("plan", "link", "d_s", "slack", "excess"), tuple(rows),
                 "Slack = τ_max − τ_s. A link stops binding once d_s is under its slack; a link leaving the "
                 "bottleneck has none.")


def _memory(report: Report) -> Table:
    """One matrix: a row per device that any plan uses, a column per plan (GB used)."""
    plans = [r for r in report.rows if r.metrics is not None]
    devices: dict[str, float] = {}
    for r in plans:
        for mem in r.metrics.memory:  # type: ignore[union-attr]
            devices.setdefault(mem.device, mem.capacity_gb)
    rows = []
    for dev, cap in devices.items():
        cells = [text(dev), Cell(fmt_gb(cap))]
        for r in plans:
            idx = [i for i, mem in enumerate(r.metrics.memory) if mem.device == dev]  # type: ignore[union-attr]
            if not idx:
                cells.append(text("-"))
                continue
            mem = r.metrics.memory[idx[0]]  # type: ignore[union-attr]
            over = mem.used_gb > mem.capacity_gb * (1 + 1e-9)
            c = gb(mem.used_gb, f"plans.{r.name}.memory.{idx[0]}.used_gb", "bad" if over else "")
            cells.append(Cell(c.text + (" OVER" if over else ""), c.key, c.value, c.unit, c.scale, c.cls))
        rows.append(tuple(cells))
    return Table("memory", "Memory used per device (GB); OVER: more than the device's usable memory",
                 ("device", "usable", *[r.name for r in plans]), tuple(rows),
                 "-: the plan does not use the device.")


def _pareto(report: Report) -> Table:
    rows = tuple(
        (text(str(p.M) + ("" if p.optimal else " *")), rate(p.throughput, f"pareto.{i}.throughput", "micro-batches/s"),
         secs(p.first_latency, f"pareto.{i}.first_latency"), secs(p.tau_max, f"pareto.{i}.tau_max"),
         text(" → ".join(p.devices)))
        for i, p in enumerate(report.pareto)
    )
    note = "Supported points only: each minimises T(M) = latency + (M − 1) period for some M."
    if any(not p.optimal for p in report.pareto):
        note += " *: best plan found within the report's budget, not proven optimal."
    return Table("pareto", "Pareto frontier: throughput against first-micro-batch latency",
                 ("argmin T(M) at M", "throughput", "first latency", "τ_max", "devices"), rows, note)


def _decode(report: Report) -> Table:
    """The serve plan beside every baseline at one batch and in-flight count (report.decode)."""
    dec = report.decode
    if dec is None:
        return Table("decode", "Decode at the best batch and in-flight count", (), ())
    rows = []
    for r in dec.rows:
        k, m = f"decode.plans.{r.name}", r.metrics
        if m is None or not r.feasible:
            why = "over memory" if "GB usable" in r.reason or "KV cache" in r.reason else "no plan"
            rows.append((text(_name(r)), text("INFEASIBLE", "bad"), *[text("-")] * 3, text(why)))
            continue
        rows.append((text(_name(r)), _tokens(m.tokens_per_s, f"{k}.tokens_per_s", m.tokens_unit),
                     secs(m.tpot_s, f"{k}.tpot_s") if m.tpot_s is not None else text("-"),
                     secs(m.ttft_s, f"{k}.ttft_s") if m.ttft_s is not None else text("-"),
                     text("-" if m.max_sequences is None else f"{m.max_sequences:,}"),
                     text(m.binding.replace("_", " "))))
    return Table(
        "decode", f"Decode at batch {dec.batch} × {dec.in_flight} in flight (the serve objective's best; each "
        "engine's split at the same batch, in-flight count and memory)",
        ("plan", "tokens/s", "TPOT", "TTFT", "KV seqs", "bound by"), tuple(rows),
        "Closed loop (docs/theory.md §4): tokens/s = K·B / max(K·τ_max, Στ + Σd + d_ret), with the KV of K·B "
        "sequences beside every stage's weights. `partition plan --objective serve` prints the serve plan.",
    )


def _whatifs(report: Report) -> Table:
    cols = ["variation", "tokens/s", "change", "first latency", "change"]
    cols += [f"T({M}) change" for M in report.Ms] + ["devices"]
    rows = []
    for i, w in enumerate(report.whatifs):
        k = f"whatif.{i}"
        if not w.feasible or w.throughput is None or w.first_latency is None:
            rows.append((text(w.name), text("INFEASIBLE", "bad"), text("-"), text(w.reason, "bad"), text("-"),
                         *[text("-")] * len(report.Ms), text("-")))
            continue
        thr = rate(w.tokens_per_s or 0.0, f"{k}.tokens_per_s", w.tokens_unit)
        if not w.comparable:  # another phase: its own plan, not a change of the decode plan
            rows.append((text(w.name), thr, text("other phase"), secs(w.first_latency, f"{k}.first_latency"),
                         text("other phase"), *[text("n/a")] * len(report.Ms), text(", ".join(w.devices))))
            continue
        rows.append((
            text(w.name), thr, pct(w.d_throughput or 0.0, f"{k}.d_throughput"),
            secs(w.first_latency, f"{k}.first_latency"), pct(w.d_first_latency or 0.0, f"{k}.d_first_latency"),
            *[pct(ch, f"{k}.T.{M}.change") for M, _, ch in w.T], text(", ".join(w.devices)),
        ))
    return Table("whatif", f"What-if against the base plan ({report.base})", tuple(cols), tuple(rows),
                 "A phase change is other work per micro-batch: shown as its own plan, not as a change.")


def _shortfall(report: Report) -> Table:
    rows = []
    for i, f in enumerate(report.nofit.shortfall if report.nofit else ()):
        k = f"nofit.shortfall.{i}"
        rows.append((text(f.device), gb(f.need_gb, f"{k}.need_gb"), gb(f.capacity_gb, f"{k}.capacity_gb"),
                     gb(f.short_gb, f"{k}.short_gb", "bad" if f.short_gb > 0 else "")))
    return Table("shortfall", "Does not fit: memory per device in the memory-proportional split (llama.cpp's)",
                 ("device", "needs", "has", "short by"), tuple(rows),
                 "The split that spreads the model most evenly over the devices' memory; no layer split leaves a "
                 "device less short, up to one layer.")


def _additions(report: Report) -> Table:
    rows = []
    nf = report.nofit
    for i, a in enumerate(nf.additions if nf else ()):
        k = f"nofit.additions.{i}"
        rows.append((text(f"{a.count} × {a.gpu} on {a.node}"), text(str(a.gpus)), _tokens(a.tokens_per_s, f"{k}.tokens_per_s", "tokens/s"),
                     secs(a.tpot_s, f"{k}.tpot_s") if a.tpot_s is not None else text("-"),
                     gb(a.added_gb, f"{k}.added_gb")))
    note = ("Each planned with the report's objective (`--with GPU@NODE` once per GPU, as `partition report` "
            "what-ifs); with the GPUs added to cluster.yaml, the report shows that cluster's plans in full.")
    if nf is not None and nf.tried:
        note += f" Not fitting with up to {nf.max_added} more: {', '.join(nf.tried)}."
    return Table("additions", "The smallest additions that make it fit (fewest GPUs first)",
                 ("add", "GPUs used", "tokens/s", "TPOT", "memory added"), tuple(rows), note)


def report_tables(report: Report) -> tuple[Table, ...]:
    """Every table, in display order; empty tables are kept (renderers may skip them)."""
    if report.nofit is not None:
        return (_shortfall(report), _additions(report), _summary(report), _infeasible(report))
    return (_summary(report), _decode(report), _layouts(report), _makespans(report), _infeasible(report),
            _violations(report), _memory(report), _pareto(report), _whatifs(report))
