"""`partition report`: compare optimal plans, engine baselines and GPipe; what-ifs; outputs.

`build_report(problem, ...) -> Report` collects the numbers (`compare`, `pareto`, `whatif`,
`headline`), solving each distinct problem once within one budget (`solving`); tokens/s come
from one helper (`serving.serving_numbers`). `render_text`, `render_md`, `render_json` and
`render_html` only render them.
"""

from __future__ import annotations

from partitioner.report.build import build_report, compare_plans
from partitioner.report.compare import (
    DEFAULT_MS,
    MakespanAt,
    ParetoPoint,
    PlanMetrics,
    PlanRow,
    Report,
    WhatIf,
)
from partitioner.report.html import render_html
from partitioner.report.pareto import PARETO_MS, frontier
from partitioner.report.render_json import render_json, report_dict
from partitioner.report.render_md import render_md
from partitioner.report.render_text import render_text
from partitioner.report.serving import Workload, serving_numbers
from partitioner.report.solving import Solves, report_budget
from partitioner.report.whatif import Variation, parse_variation, parse_variations

__all__ = [
    "DEFAULT_MS",
    "PARETO_MS",
    "MakespanAt",
    "ParetoPoint",
    "PlanMetrics",
    "PlanRow",
    "Report",
    "WhatIf",
    "Variation",
    "report_budget",
    "Solves",
    "Workload",
    "serving_numbers",
    "build_report",
    "compare_plans",
    "frontier",
    "parse_variation",
    "parse_variations",
    "render_html",
    "render_json",
    "render_md",
    "render_text",
    "report_dict",
]
