"""The fleet chart: dollars per hour against tokens/s for every fleet `partition fleet` planned.

Each planned fleet is a point (cost per hour, output tokens/s); the Pareto front (no other fleet
both cheaper and faster) is drawn as a step line, the chosen fleet is ringed and the runners-up
labelled. Pure: takes the fleet JSON (partitioner.fleets.FleetResult.to_dict), returns an SVG
document with a <title> and an aria-label; matplotlib with text kept as text and a fixed hash
salt, so equal input gives equal SVG.
"""

from __future__ import annotations

import io
from typing import Any

__all__ = ["fleet_chart_svg", "pareto_front", "fleet_html"]


def pareto_front(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The (cost, tokens/s) points no other point beats on both (cheaper or equal, and faster)."""
    front: list[tuple[float, float]] = []
    for c, t in sorted(points, key=lambda p: (p[0], -p[1])):
        if not front or t > front[-1][1]:
            front.append((c, t))
    return front


def _label(fleet: list[dict[str, Any]]) -> str:
    return " + ".join(f"{f['count']}× {f['gpu']}" for f in fleet) or "as owned"


def fleet_chart_svg(data: dict[str, Any]) -> str:
    """The chart of the module doc for a fleet JSON object."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    pts = [(float(p["cost_per_hour"]), float(p["tokens_per_s"])) for p in data["planned"] if p["feasible"]]
    title = "Fleets planned: dollars per hour against output tokens/s"
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "partitioner", "font.size": 10}):
        fig = Figure(figsize=(6.4, 4.2))
        ax = fig.add_subplot()
        if pts:
            ax.scatter([t for _, t in pts], [c for c, _ in pts], s=14, color="#999999", label="planned fleets", zorder=2)
            front = pareto_front(pts)
            ax.step([t for _, t in front], [c for c, _ in front], where="post", color="#1f77b4", linewidth=1.5,
                    label="Pareto front", zorder=3)
        need = (data.get("target") or {}).get("tokens_per_s")
        if need:
            ax.axvline(float(need), color="#d62728", linestyle="--", linewidth=1, label="target", zorder=1)
        if data.get("found"):
            t, c = float(data["serving"]["tokens_per_s"]), float(data["cost_per_hour"])
            ax.scatter([t], [c], s=120, facecolors="none", edgecolors="#d62728", linewidths=2, label="chosen", zorder=4)
            ax.annotate(_label(data["fleet"]), (t, c), textcoords="offset points", xytext=(6, -12), fontsize=9)
        ax.set_xlabel("output tokens/s")
        ax.set_ylabel("$ per hour")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        ax.legend(loc="upper left", frameon=False, fontsize=9)
        fig.tight_layout()
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": "partitioner"})
    text = buf.getvalue()
    return text.replace("<svg ", f'<svg role="img" aria-label="{title}" ', 1).replace(
        "<defs>", f"<title>{title}</title>\n <defs>", 1)


def fleet_html(data: dict[str, Any], summary: str) -> str:
    """A self-contained page: the summary (already escaped text lines) and the chart."""
    import html

    from partitioner.report.charts import inline_svg

    lines = "".join(f"<p>{html.escape(line)}</p>" for line in summary.splitlines() if line.strip())
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            "<title>partitioner fleet</title><style>body{font-family:sans-serif;max-width:60rem;margin:1rem auto;"
            "padding:0 1rem}p{margin:.2rem 0;white-space:pre-wrap;font-family:monospace}svg{width:100%;height:auto}"
            "</style></head><body><h1>Fleet</h1>" + lines + inline_svg(fleet_chart_svg(data)) + "</body></html>\n")
