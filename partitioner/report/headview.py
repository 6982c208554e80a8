"""The headline as lines of text and numbers, shared by the terminal, Markdown and HTML renderers.

Each line is a label and a list of fragments: plain strings, or `Cell`s whose numbers carry
the JSON path of the raw value (`headline.tokens_per_s`), exactly as table cells do.
"""

from __future__ import annotations

from dataclasses import dataclass

from partitioner.report.compare import Report
from partitioner.report.decode import Decode
from partitioner.report.headline import Headline
from partitioner.report.tables import Cell, layout, rate, secs, text
from partitioner.report.units import fmt_ratio

__all__ = ["Line", "headline_lines", "plain"]

Fragment = str | Cell


@dataclass(frozen=True)
class Line:
    label: str
    parts: tuple[Fragment, ...]
    sub: tuple[tuple[Fragment, ...], ...] = ()  # indented items (one per baseline or link)


def plain(parts: tuple[Fragment, ...]) -> str:
    return "".join(p if isinstance(p, str) else p.text for p in parts)


def _ratio(x: float, key: str) -> Cell:
    return Cell(fmt_ratio(x), key, float(x), "×", 1.0)


def _gains(h: Headline) -> tuple[tuple[Fragment, ...], ...]:
    out: list[tuple[Fragment, ...]] = []
    for g in h.gains:
        k = f"headline.gains.{g.name}"
        who = f"{g.label} ({g.name}): "
        if not g.fits:
            out.append((who, text("does not fit", "bad"), f": {g.reason}"))
        elif g.throughput_ratio is not None and g.tokens_per_s is not None:
            parts: list[Fragment] = [who, _ratio(g.throughput_ratio, f"{k}.throughput_ratio"),
                                     " the throughput (", rate(g.tokens_per_s, f"{k}.tokens_per_s", h.tokens_unit), ")"]
            if g.T_ratio is not None:
                parts += [", ", _ratio(g.T_ratio, f"{k}.T_ratio"), " faster T(M)"]
            out.append(tuple(parts))
    return tuple(out)


def _decode(dec: Decode) -> Line:
    """The serve objective's plan and, at its batch and in-flight count, each engine's split."""
    serve = dec.row("serve")
    m = serve.metrics
    if m is None:
        return Line("Decode", ("the serve search found no plan",))
    proof = ("proven over the batch grid" if serve.optimal else
             "not proven: the time limit cut the batch search short" if serve.gap >= 0.999 else
             f"within {serve.gap:.1%} of its bound")
    parts: list[Fragment] = [f"`--objective serve` picks batch {dec.batch} × {dec.in_flight} in flight: ",
                             rate(m.tokens_per_s, "decode.plans.serve.tokens_per_s", m.tokens_unit)]
    if m.tpot_s is not None:
        parts += [", TPOT ", secs(m.tpot_s, "decode.plans.serve.tpot_s")]
    parts += [f" on {len(m.tau)} stages ({proof}); the engines' splits at the same batch and in-flight count:"]
    sub: list[tuple[Fragment, ...]] = []
    for name, ratio in dec.gains:
        r = dec.row(name)
        who = f"{r.label} ({name}): "
        if ratio is None or r.metrics is None:
            first, *more = (r.reason or "no plan").split("; ")
            sub.append((who, text("does not fit", "bad"), f": {first}" + (f" (and {len(more)} more)" if more else "")))
            continue
        sub.append((who, _ratio(ratio, f"decode.gains.{name}"), " the tokens/s (",
                    rate(r.metrics.tokens_per_s, f"decode.plans.{name}.tokens_per_s", r.metrics.tokens_unit), ")"))
    return Line("Decode", tuple(parts), tuple(sub))


def _fix(h: Headline, i: int) -> tuple[Fragment, ...]:
    f, k = h.link_fixes[i], f"headline.link_fixes.{i}"
    head: tuple[Fragment, ...] = (f"{f.source} → {f.target} costs ", secs(f.d, f"{k}.d"))
    if f.max_d <= 0:
        return (*head, "; it leaves the bottleneck stage, so no latency hides it: only asynchronous sends do")
    out: tuple[Fragment, ...] = (*head, "; bring it under ", secs(f.max_d, f"{k}.max_d"))
    if f.sigma_max_fixed < f.sigma_max * (1 - 1e-9):
        out += (" (blocking period ", secs(f.sigma_max, f"{k}.sigma_max"), " → ",
                secs(f.sigma_max_fixed, f"{k}.sigma_max_fixed"), ")")
    return out


SHOWN_FIXES = 4


def _fixes(h: Headline) -> tuple[tuple[Fragment, ...], tuple[tuple[Fragment, ...], ...]]:
    """(summary, items): the links whose fix alone lowers the blocking period first; when none
    does alone (several links bind), say so and list the largest excesses."""
    alone = [i for i, f in enumerate(h.link_fixes) if f.sigma_max_fixed < f.sigma_max * (1 - 1e-9)]
    n = len(h.link_fixes)
    if alone or n == 1:
        shown = (alone or [0])[:SHOWN_FIXES]
        rest = f" (and {n - len(shown)} more in the table below)" if n > len(shown) else ""
        return ((f"{n} link(s) bind{rest}:",) if n > 1 else ()), tuple(_fix(h, i) for i in shown)
    order = sorted(range(n), key=lambda i: h.link_fixes[i].max_d - h.link_fixes[i].d)[:SHOWN_FIXES]
    summary = (f"{n} links bind, so fixing one alone leaves the blocking period at ",
               secs(h.link_fixes[0].sigma_max, "headline.link_fixes.0.sigma_max"),
               f"; bring every one under its slack (largest excesses, of {n}):")
    return summary, tuple(_fix(h, i) for i in order)


def headline_lines(report: Report) -> tuple[Line, ...]:
    """The headline block (empty when the base plan has no stages)."""
    h = report.headline
    if h is None:
        return ()
    row = report.row(h.plan)
    proof = "proven optimal" if row.optimal else "best plan found within the time limit"
    lines = [Line("Run", (layout(h.devices, h.decoder_layers, h.ends, compact=True),),
                  ((f"the {h.plan} plan, {proof}; devices in pipeline order with their decoder layers",),))]
    thr: list[Fragment] = [rate(h.tokens_per_s, "headline.tokens_per_s", h.tokens_unit)]
    if h.tpot_s is not None:
        thr += [", TPOT ", secs(h.tpot_s, "headline.tpot_s")]
    if h.ttft_s is not None:
        thr += [", TTFT ", secs(h.ttft_s, "headline.ttft_s")]
    thr += [" (", rate(h.throughput, "headline.throughput", "micro-batches/s"), "; ", h.serving_source, "); ",
            "first micro-batch through every stage ", secs(h.first_latency, "headline.first_latency")]
    lines.append(Line("Throughput", tuple(thr)))
    lines.append(Line("Against the engines", () if h.gains else ("no baseline compared",), _gains(h)))
    if report.decode is not None:
        lines.append(_decode(report.decode))
    elif report.decode_note:
        lines.append(Line("Decode", (report.decode_note,)))
    lines.append(Line("Bottleneck", (f"stage {h.bottleneck_stage} on {h.bottleneck_device}, τ_max ",
                                     secs(h.tau_max, "headline.tau_max"))))
    if h.link_fixes:
        summary, items = _fixes(h)
        lines.append(Line("Links worth fixing", summary, items))
    else:
        lines.append(Line("Links worth fixing", ("none: no link has d_s > τ_max − τ_s, communication adds only a "
                                                  "constant (Cor 4)",)))
    return tuple(lines)
