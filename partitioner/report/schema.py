"""JSON Schema (draft 2020-12) of the report JSON (`partition report --json FILE`, `render_json`).

Built from the report's own dataclasses (`compare`, `headline`, `nofit`) with pydantic's
`TypeAdapter`, then reshaped exactly as `render_json.report_dict` reshapes them: plans keyed by
name, per-M numbers keyed by str(M), every number in SI units (seconds, GB, tokens/s). Each
top-level key carries a description, so `partition schema report` documents the format.
"""

from __future__ import annotations

from typing import Any

__all__ = ["report_json_schema"]

_SI = "Numbers are SI: times in seconds, memory in GB (1e9 bytes), rates per second."


def _schema(cls: Any) -> dict[str, Any]:
    from pydantic import TypeAdapter

    out = TypeAdapter(cls).json_schema()
    out.pop("title", None)
    return out


def _by_M(extra: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "description": "keyed by str(M)", "additionalProperties": extra}


def _plan() -> dict[str, Any]:
    """One plan row: its status, then (when it has stages) every `PlanMetrics` field."""
    from partitioner.report.compare import LinkViolation, PlanMetrics

    metrics = _schema(PlanMetrics)
    props = dict(metrics.get("properties", {}))
    props["layers"] = {"type": "array", "items": {"type": "array", "items": {"type": "integer"}, "minItems": 2,
                                                   "maxItems": 2}, "description": "half-open [start, end) per stage"}
    at = {"type": "object", "properties": {k: {"type": "number"} for k in
                                           ("T_async", "T_block", "T_gpipe", "gpipe_error", "gpipe_minus_async")}}
    props["by_M"] = _by_M(at)
    props["violations"] = {"type": "array", "items": _schema(LinkViolation)}
    head = {
        "kind": {"enum": ["optimal", "baseline"]},
        "label": {"type": "string"},
        "feasible": {"type": "boolean"},
        "reason": {"type": "string", "description": "why it does not fit (empty when it does)"},
        "solver": {"type": "string"},
        "optimal": {"type": "boolean"},
        "lower_bound": {"type": "number"},
        "gap": {"type": "number", "description": "(value - lower bound) / value; 0 when proven"},
    }
    return {"type": "object", "properties": {**head, **props}, "required": list(head),
            "$defs": metrics.get("$defs", {}), "description": "a plan; without stages only the status fields"}


def _hoist(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    defs.update(schema.pop("$defs", {}))
    return schema


def report_json_schema() -> dict[str, Any]:
    """The schema `partition schema report` prints."""
    from partitioner.report.compare import ParetoPoint, WhatIf
    from partitioner.report.headline import Headline
    from partitioner.report.nofit import NoFit
    from partitioner.report.render_json import REPORT_FORMAT

    defs: dict[str, Any] = {}
    plan = _hoist(_plan(), defs)
    defs["plan"] = plan
    whatif = _hoist(_schema(WhatIf), defs)
    whatif["properties"]["T"] = _by_M({"type": "object", "properties": {"T": {"type": "number"},
                                                                        "change": {"type": ["number", "null"]}}})
    headline = _hoist(_schema(Headline), defs)
    headline["properties"]["gains"] = {"type": "object", "description": "keyed by baseline name",
                                       "additionalProperties": headline["properties"]["gains"]["items"]}
    nofit = _hoist(_schema(NoFit), defs)
    plans = {"type": "object", "additionalProperties": {"$ref": "#/$defs/plan"}}
    props: dict[str, Any] = {
        "format": {"const": REPORT_FORMAT},
        "model": {"type": "string"},
        "cluster": {"type": "string"},
        "regime": {"enum": ["async", "blocking"]},
        "plan_M": {"type": "integer", "minimum": 1, "description": "the M the plans are optimised for"},
        "Ms": {"type": "array", "items": {"type": "integer"}, "description": "the M of every by_M table"},
        "base": {"type": "string", "description": "the objective the what-ifs are compared with"},
        "plans": {**plans, "description": "every objective's optimal plan and engine baseline, by name"},
        "pareto": {"type": "array", "items": _hoist(_schema(ParetoPoint), defs),
                   "description": "supported points of the tokens/s against first-latency frontier"},
        "whatif": {"type": "array", "items": whatif, "description": "each --without/--with/--link/... variation"},
        "headline": {"anyOf": [headline, {"type": "null"}],
                     "description": "the plan with the most tokens/s of every plan shown (null: nothing fits)"},
        "serve_frontier": {"type": "array", "items": {"type": "object"},
                           "description": "the serve search's tokens/s against TPOT points (plan.json frontier)"},
        "decode": {"anyOf": [{"type": "object", "properties": {
            "batch": {"type": "integer"}, "in_flight": {"type": "integer"}, "plans": plans,
            "gains": {"type": "object", "additionalProperties": {"type": ["number", "null"]}}}}, {"type": "null"}],
            "description": "the serve plan and the engines' splits at its batch and in-flight count"},
        "replicas_note": {"type": "string", "description": "why --replicas/--tp gave no plan (empty otherwise)"},
        "cut": {"type": "array", "items": {"type": "string"},
                "description": "the parts the report's budget (--work, --time-limit, Ctrl-C) cut short, each with "
                               "what cut it; the best found so far is shown for them"},
        "nofit": {"anyOf": [nofit, {"type": "null"}],
                  "description": "the model does not fit: shortfall per device, the smallest --with additions"},
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://partitioner.invalid/schema/report.json",
        "title": "partitioner report JSON",
        "description": f"`partition report --json FILE`. {_SI}",
        "type": "object",
        "properties": {**props, "sha256": {"type": "string", "description": "checksum a written file carries "
                                                                             "(partitioner.cli._output)"}},
        "required": list(props),
        "additionalProperties": False,
        "$defs": defs,
    }
