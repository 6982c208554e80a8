"""The report as one deterministic JSON object (`partition report --json FILE`).

Keys mirror the `Report` dataclasses; plans are keyed by name and per-M numbers by str(M), so
a number's path reads like `plans.balanced.by_M.8.T_async` (the HTML page's `data-key`s).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from partitioner.report.sections import Sections

if TYPE_CHECKING:  # annotations only: compare's Report.to_dict imports this module
    from partitioner.report.compare import PlanRow, Report, WhatIf

__all__ = ["REPORT_FORMAT", "report_dict", "render_json", "lookup"]

REPORT_FORMAT = "partitioner.report/1"


def _metrics_dict(row: PlanRow) -> dict[str, Any]:
    m = row.metrics
    if m is None:
        return {}
    out = asdict(m)
    out["layers"] = [list(x) for x in m.layers]
    out["by_M"] = {
        str(x.M): {
            "T_async": x.T_async,
            "T_block": x.T_block,
            "T_gpipe": x.T_gpipe,
            "gpipe_error": x.gpipe_error,
            "gpipe_minus_async": x.T_gpipe - x.T_async,
        }
        for x in m.by_M
    }
    out["violations"] = [asdict(v) for v in m.violations]
    out["memory"] = [asdict(v) for v in m.memory]
    return out


def _row_dict(row: PlanRow) -> dict[str, Any]:
    head = {
        "kind": row.kind,
        "label": row.label,
        "feasible": row.feasible,
        "reason": row.reason,
        "solver": row.solver,
        "optimal": row.optimal,
        "lower_bound": row.lower_bound,
        "gap": row.gap,
    }
    return {**head, **_metrics_dict(row)}


def _whatif_dict(w: WhatIf) -> dict[str, Any]:
    out = asdict(w)
    out["T"] = {str(M): {"T": T, "change": ch if w.comparable else None} for M, T, ch in w.T}
    out["devices"] = list(w.devices)
    return out


def report_dict(report: Report, sections: Sections | None = None) -> dict[str, Any]:
    """JSON-ready dict; the same report gives the same dict (no timings). `sections`
    (partitioner.report.sections) checks the budget before each field after the report's
    identity: a field it cut holds its empty value (the schema still holds) and `cut` names it; the
    answers (plans, headline, decode, nofit) are cut by Ctrl-C only."""
    parts = sections or Sections()
    fields: tuple[tuple[str, Callable[[], Any], Any, bool], ...] = (  # name, build, empty, an answer
        ("plans", lambda: {row.name: _row_dict(row) for row in report.rows}, {}, True),
        ("pareto", lambda: [{**asdict(p), "layers": [list(x) for x in p.layers], "devices": list(p.devices)}
                            for p in report.pareto], [], False),
        ("whatif", lambda: [_whatif_dict(w) for w in report.whatifs], [], False),
        ("headline", lambda: _headline_dict(report), None, True),
        ("serve_frontier", lambda: list(report.serve_frontier), [], False),
        ("decode", lambda: _decode_dict(report), None, True),
        ("nofit", lambda: _nofit_dict(report), None, True),
    )
    out: dict[str, Any] = {
        "format": REPORT_FORMAT,
        "model": report.model,
        "cluster": report.cluster,
        "regime": report.regime,
        "plan_M": report.plan_M,
        "Ms": list(report.Ms),
        "base": report.base,
    }
    for key, build, empty, answer in fields:
        out[key] = parts.part(f"the JSON field {key}", build, empty, answer)
    out["replicas_note"] = report.replicas_note
    out["cut"] = [*report.cut, *([parts.note()] if parts.note() else [])]
    return {k: out[k] for k in _ORDER}


_ORDER = ("format", "model", "cluster", "regime", "plan_M", "Ms", "base", "plans", "pareto", "whatif", "headline",
          "serve_frontier", "decode", "nofit", "replicas_note", "cut")  # the keys as the JSON has always listed them


def _nofit_dict(report: Report) -> dict[str, Any] | None:
    nf = report.nofit
    if nf is None:
        return None
    return {"reason": nf.reason,
            "shortfall": [{**asdict(f), "short_gb": f.short_gb} for f in nf.shortfall],
            "additions": [{**asdict(a), "devices": list(a.devices)} for a in nf.additions],
            "tried": list(nf.tried)}


def _decode_dict(report: Report) -> dict[str, Any] | None:
    dec = report.decode
    if dec is None:
        return None
    return {"batch": dec.batch, "in_flight": dec.in_flight, "plans": {r.name: _row_dict(r) for r in dec.rows},
            "gains": dict(dec.gains)}


def _headline_dict(report: Report) -> dict[str, Any] | None:
    h = report.headline
    if h is None:
        return None
    out = asdict(h)
    for key in ("devices", "decoder_layers", "ends"):
        out[key] = list(out[key])
    out["gains"] = {g.name: asdict(g) for g in h.gains}
    out["link_fixes"] = [asdict(f) for f in h.link_fixes]
    if h.command is not None:
        out["command"] = {"target": h.command.target, "text": h.command.text, "notes": list(h.command.notes),
                          "warnings": list(h.command.warnings)}
    return out


def render_json(report: Report, sections: Sections | None = None) -> str:
    return json.dumps(report_dict(report, sections), indent=2) + "\n"


def lookup(data: Any, key: str) -> Any:
    """Follow a dotted path (`plans.balanced.by_M.8.T_async`; list items by index)."""
    for part in key.split("."):
        data = data[int(part)] if isinstance(data, list) else data[part]
    return data
