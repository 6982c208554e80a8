"""The serving Pareto chart as a self-contained SVG: tokens/s per GPU against tokens/s per user.

Serving benchmarks draw throughput per GPU (the operator's cost) against interactivity, the
decode speed one user sees (tokens/s per user = 1 / TPOT), one curve per configuration: moving
right (faster for each user, smaller batches) costs throughput per GPU. Each point is one
(batch, in-flight, split) of the serve objective's frontier (`Plan.frontier` /
`serving_frontier` in the plan JSON). Pure: takes dicts, returns a string; matplotlib with
`svg.fonttype = 'none'` (text stays text) and a fixed hash salt, so equal input gives equal SVG.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

from partitioner.errors import InputError

__all__ = ["serving_chart_svg"]

_NEEDED = ("tokens_per_s_per_gpu", "tokens_per_s_per_user", "batch", "in_flight")


def _xy(name: str, points: Sequence[Mapping[str, Any]]) -> tuple[list[float], list[float], list[str]]:
    if not points:
        raise InputError(f"serving chart: series {name!r} has no points")
    for i, p in enumerate(points):
        missing = [k for k in _NEEDED if k not in p or p[k] is None]
        if missing:
            raise InputError(f"serving chart: series {name!r} point {i} lacks {', '.join(missing)}")
    pts = sorted(points, key=lambda p: float(p["tokens_per_s_per_user"]))
    return ([float(p["tokens_per_s_per_user"]) for p in pts], [float(p["tokens_per_s_per_gpu"]) for p in pts],
            [f"B={p['batch']},K={p['in_flight']}" for p in pts])


def serving_chart_svg(
    series: Mapping[str, Sequence[Mapping[str, Any]]], *, title: str = "Decode throughput against interactivity",
    label_points: bool = True, marks: Mapping[str, tuple[float, float]] | None = None, font_pt: float = 9,
    size_in: tuple[float, float] = (6.4, 4.2),
) -> str:
    """One curve per series name (e.g. {"serve": plan.frontier, "even (vLLM)": even.frontier}).

    x: tokens/s per user (1/TPOT); y: tokens/s per GPU. `marks` adds single points (name ->
    (per user, per GPU)): the first is starred (the chosen plan), the others are triangles (the
    engines' splits). Returns the SVG document as text.
    """
    if not series:
        raise InputError("serving chart: no series given")
    data = {name: _xy(name, pts) for name, pts in series.items()}
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "partitioner", "font.size": font_pt}):
        fig = Figure(figsize=size_in, layout="constrained")
        ax = fig.add_subplot()
        for name, (x, y, labels) in data.items():
            ax.plot(x, y, marker="o", markersize=4, linewidth=1.5, label=name, drawstyle="default")
            if label_points:
                for xi, yi, text in zip(x, y, labels, strict=True):
                    ax.annotate(text, (xi, yi), textcoords="offset points", xytext=(3, 3), fontsize=6, alpha=0.7)
        for i, (name, (xm, ym)) in enumerate((marks or {}).items()):
            ax.plot([xm], [ym], "*" if i == 0 else "^", ms=16 if i == 0 else 8, ls="none", label=name,
                    color="gold" if i == 0 else f"C{i % 10}", mec="k" if i == 0 else None, zorder=6 if i == 0 else 4)
        ax.set_xlabel("tokens/s per user (1 / TPOT)")
        ax.set_ylabel("tokens/s per GPU")
        if title:
            ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        handles, names = ax.get_legend_handles_labels()  # below the axes: frontiers fill the plot area
        fig.legend(handles, names, loc="outside lower left", ncol=1, frameon=False)
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": "partitioner"})
    return buf.getvalue()
