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

__all__ = ["LEAD", "Line", "headline_lines", "plain"]

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
             "not proven: the report's budget cut the batch search short" if serve.gap >= 0.999 else
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


LEAD = 3  # the lines before the engine command: the numbers, how the plan was found, its layout


def _short(x: float) -> str:
    return f"{x:,.0f}" if x >= 1000 else f"{x:.4g}"


def _best(h: Headline) -> tuple[Fragment, ...]:
    """"21 GPUs · 1,873 tokens/s (89.2/GPU, 14.9/user) · TPOT 67.3 ms · TTFT 1.2 s · ×2.16 vs vLLM's even split"."""
    per: list[Fragment] = [Cell(f"{_short(h.tokens_per_gpu)}/GPU", "headline.tokens_per_gpu", h.tokens_per_gpu,
                                h.tokens_unit)]
    if h.tokens_per_user is not None:
        per += [", ", Cell(f"{_short(h.tokens_per_user)}/user", "headline.tokens_per_user", h.tokens_per_user,
                           h.tokens_unit)]
    out: list[Fragment] = [f"{h.gpus} GPU{'' if h.gpus == 1 else 's'} · ", rate(h.tokens_per_s, "headline.tokens_per_s", h.tokens_unit),
                           " (", *per, ")"]
    if h.tpot_s is not None:
        out += [" · TPOT ", secs(h.tpot_s, "headline.tpot_s")]
    if h.ttft_s is not None:
        out += [" · TTFT ", secs(h.ttft_s, "headline.ttft_s")]
    even = next((g for g in h.gains if g.name == "even"), None)
    if h.vs_even is not None:
        out += [" · ", _ratio(h.vs_even, "headline.vs_even"), " vs vLLM's even split"]
    elif even is not None:
        out += [" · vLLM's even split does not fit"]
    return tuple(out)


def _how(h: Headline) -> tuple[Fragment, ...]:
    proof = ("proven optimal for its objective" if h.optimal else f"within {h.gap:.1%} of its bound" if 0 < h.gap < 0.999
             else "best found within the report's budget")
    out = f"{h.source} ({proof}): the most {h.tokens_unit} of the {h.compared} plans this report compares"
    if not h.within_limits:
        out += "; none meets the --tpot-ms/--ttft-ms limits, so the fastest is shown"
    return (out,)


def _nofit(report: Report) -> tuple[Line, ...]:
    """A model that does not fit: why, the total shortfall, the smallest addition that fits."""
    nf = report.nofit
    if nf is None:
        return ()
    short = sum(f.short_gb for f in nf.shortfall)
    lines = [Line("Does not fit", (nf.reason.split("; ")[0],),
                  ((f"{len([f for f in nf.shortfall if f.short_gb > 0])} of {len(nf.shortfall)} devices short by "
                    f"{short:.1f} GB in all in the memory-proportional split (table below)",),) if nf.shortfall else ())]
    if not nf.additions:
        lines.append(Line("Smallest addition", (f"none of the cluster's GPU types fits it with up to {nf.max_added} "
                                                "more",)))
        return tuple(lines)
    a = nf.additions[0]
    parts: list[Fragment] = [f"{a.flags}: {a.gpus} GPUs · ", rate(a.tokens_per_s, "nofit.additions.0.tokens_per_s",
                                                                  "tokens/s")]
    if a.tpot_s is not None:
        parts += [" · TPOT ", secs(a.tpot_s, "nofit.additions.0.tpot_s")]
    lines.append(Line("Smallest addition", tuple(parts),
                      ((f"add {'it' if a.count == 1 else 'them'} to cluster.yaml (devices: "
                        f"{{name: ..., gpu: {a.gpu}, node: {a.node}}}) for the whole report of that cluster",),)))
    return tuple(lines)


def headline_lines(report: Report) -> tuple[Line, ...]:
    """The headline block: `LEAD` lines, then the details (a model that does not fit: why and the
    smallest addition that fits)."""
    h = report.headline
    if h is None:
        return _nofit(report) + _cut(report)
    lay = (Line("Layout", (f"{len(h.replica_layouts)} pipelines, devices in pipeline order with their decoder layers",),
                tuple((f"replica {i}: {x}",) for i, x in enumerate(h.replica_layouts)))
           if h.replica_layouts else
           Line("Layout", (layout(h.devices, h.decoder_layers, h.ends, compact=True),),
                (("devices in pipeline order with their decoder layers",),)))
    lines = [Line("Best", _best(h)), Line("Plan", _how(h) + ((f"; no {report.replicas_note}",)
                                                              if report.replicas_note else ())), lay]
    thr: list[Fragment] = [rate(h.throughput, "headline.throughput", "micro-batches/s"), f" ({h.serving_source}); ",
                           "first micro-batch through every stage ", secs(h.first_latency, "headline.first_latency")]
    lines.append(Line("Pipeline", tuple(thr)))
    lines.append(Line("Against the engines", () if h.gains else ("no baseline compared",), _gains(h)))
    if report.decode is not None and h.plan != "serve":  # else the lines above are the serve plan's
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
    return tuple(lines) + _cut(report)


def _cut(report: Report) -> tuple[Line, ...]:
    """The parts the report's budget cut short (its best so far is shown for each), if any."""
    if not report.cut:
        return ()
    return (Line("Cut short", ("the report shows the best it had found for these parts:",),
                 tuple((c,) for c in report.cut)),)
