"""`partition fleet MODEL.yaml --tokens-per-s X | --users N --tpot-ms T | --budget-per-hour $`: which GPUs to add.

The search is partitioner.fleets (branch and bound over count vectors, exact with respect to the
planner); this module parses the options, prints the answer in human units and writes the JSON
(SI units) and the chart page.
"""

from __future__ import annotations

from typing import Any

import click

from partitioner.cli._parse import PresetName
from partitioner.registry import TP_MODES

__all__ = ["fleet", "summary"]


def _money(x: float | None) -> str:
    return "-" if x is None else f"${x:,.2f}/h"


def _fleet_text(rows: list[dict[str, Any]] | None) -> str:
    return " + ".join(f"{r['count']}× {r['gpu']}" for r in rows or []) or "nothing (what you own)"


def _ms(s: float | None) -> str:
    return "-" if s is None else f"{s * 1e3:,.1f} ms"


def _goal(d: dict[str, Any]) -> str:
    t = d["target"]
    parts = []
    if t["tokens_per_s"] is not None:
        parts.append(f"{t['tokens_per_s']:,.0f} tokens/s")
    if t["users"] is not None:
        parts.append(f"{t['users']:,} users")
    limits = [f"TPOT <= {_ms(t['tpot_s'])}" if t["tpot_s"] else "", f"TTFT <= {_ms(t['ttft_s'])}" if t["ttft_s"] else ""]
    lim = " at " + " and ".join(x for x in limits if x) if any(limits) else ""
    budget = f" within {_money(t['budget_per_hour'])}" if t["budget_per_hour"] is not None else ""
    if d["mode"] == "cheapest":
        return f"the cheapest fleet serving {' and '.join(parts)}{lim}{budget}"
    return f"the most tokens/s{lim}{budget}"


def summary(d: dict[str, Any]) -> str:
    """The console answer for a fleet JSON object."""
    tier = d["tier"].replace("_", "-")
    own = d["own"]["gpus"]
    lines = [f"partition fleet: {_goal(d)} ({tier} prices)",
             f"own: {', '.join(own) if own else 'nothing'} ({_money(d['own']['cost_per_hour'])})"]
    pr = d["proof"]
    if d["found"]:
        s = d["serving"]
        lines.append(f"fleet: add {_fleet_text(d['fleet'])}   {_money(d['cost_per_hour'])}   "
                     f"{s['tokens_per_s']:,.1f} tokens/s   TPOT {_ms(s['tpot_s'])}   TTFT {_ms(s['ttft_s'])}   "
                     f"{s['sequences']:,} sequences   {s['replicas']} replica(s)")
    else:
        lines.append("fleet: none of the fleets meets the target" if pr["proven"] and not pr["stopped"]
                     else "fleet: none found before the search stopped")
    status = "optimal" if pr["proven"] else f"not proven ({pr['stopped'] or 'stopped'})"
    bound = ""
    if not pr["proven"]:
        if pr["cost_lower_bound"] is not None:
            bound = f"; no unplanned fleet meets it below {_money(pr['cost_lower_bound'])}"
        elif pr["tokens_per_s_upper_bound"] is not None:
            bound = f"; no unplanned fleet exceeds {pr['tokens_per_s_upper_bound']:,.1f} tokens/s"
    lines.append(f"proof: {status} over {pr['candidates']:,} fleets: planned {pr['planned']:,}, pruned "
                 f"{pr['pruned_by_bound']:,} by the tokens/s bound, {pr['pruned_by_memory']:,} by memory, "
                 f"{pr['pruned_by_budget']:,} by the budget{bound}")
    if d["runners_up"]:
        lines.append("runners-up:")
        for r in d["runners_up"]:
            s = r["serving"]
            lines.append(f"  {_money(r['cost_per_hour']):>12}  {s['tokens_per_s']:>10,.1f} tokens/s  "
                         f"TPOT {_ms(s['tpot_s']):>10}  add {_fleet_text(r['fleet'])}")
    if d["found"]:
        lines.extend(_layout(d["plan"]))
    return "\n".join(lines)


def _layout(plan: dict[str, Any]) -> list[str]:
    replicas = plan.get("replicas", [plan])
    out = []
    for i, p in enumerate(replicas):
        stages = ", ".join(f"{st['device']}[{st['start']}:{st['end']})" + (f" tp{st['tp']}" if st.get("tp", 1) > 1 else "")
                           for st in p["stages"])
        sv = p.get("serving") or {}
        out.append(f"  replica {i + 1}: {stages}   batch {sv.get('batch')} × {sv.get('in_flight')} in flight")
    return out


@click.command("fleet")
@click.argument("model_file", metavar="MODEL.yaml", type=click.Path(dir_okay=False))
@click.option("--tokens-per-s", "tokens_per_s", type=float, default=None, help="Target output tokens/s (a floor).")
@click.option("--users", type=int, default=None, help="Target concurrent users (sequences in flight), with --tpot-ms.")
@click.option("--tpot-ms", "tpot_ms", type=float, default=None, help="Time-per-output-token limit (ms).")
@click.option("--ttft-ms", "ttft_ms", type=float, default=None, help="Time-to-first-token limit (ms).")
@click.option("--budget-per-hour", "budget", type=float, default=None,
              help="Most dollars per hour; alone: the most tokens/s within it.")
@click.option("--own", "own_file", type=click.Path(dir_okay=False), default=None, metavar="CLUSTER.yaml",
              help="What you own (its `prices:` override the catalogue).")
@click.option("--market", default="", metavar="GPU:MAX[,GPU:MAX...]", help="Cards you may add, e.g. l4:4,a100-80gb:2.")
@click.option("--box", "box", default="", metavar="GPU:K[,...]", help="Added cards of GPU come K to a machine (default 1).")
@click.option("--link", default="10gbe", show_default=True, type=PresetName("links"),
              help="Link between added machines and to yours.")
@click.option("--box-link", "box_link", default="pcie4", show_default=True, type=PresetName("links"),
              help="Link inside an added machine.")
@click.option("--spot", is_flag=True, help="Spot (interruptible) rental prices instead of on demand.")
@click.option("--engine", type=PresetName("engines"), default=None, help="Engine cost overheads (as in plan).")
@click.option("--tp", type=click.Choice(TP_MODES), default=None, help="Tensor-parallel groups (as in plan).")
@click.option("--max-batch", "max_batch", type=click.IntRange(min=1), default=None)
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Local processes (default: CPU count).")
@click.option("--ray", "ray_address", default=None, metavar="ADDRESS",
              help="Run the plans as Ray tasks on this cluster ('local': a local instance; or set RAY_ADDRESS).")
@click.option("--max-plans", "max_plans", type=click.IntRange(min=1), default=400, show_default=True,
              help="Work budget: fleets planned at most (the answer is the same on any machine).")
@click.option("--time-limit", "time_limit", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Wall-clock cap (s): the best fleet so far with its bound.")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON.")
@click.option("--out", default=None, type=click.Path(dir_okay=False), help="Also write the JSON here.")
@click.option("--html", "html_out", default=None, type=click.Path(dir_okay=False),
              help="Write a page with the $/h-against-tokens/s chart.")
def fleet(*, model_file: str, tokens_per_s: float | None, users: int | None, tpot_ms: float | None,
          ttft_ms: float | None, budget: float | None, own_file: str | None, market: str, box: str, link: str,
          box_link: str, spot: bool, engine: str | None, tp: str | None, max_batch: int | None,
          workers: int | None, ray_address: str | None, max_plans: int, time_limit: float | None,
          as_json: bool, out: str | None, html_out: str | None) -> None:
    """Which GPUs to add to what you own (--own) from what you may rent (--market) to serve MODEL at a target."""
    import sys

    from partitioner.cli._output import check_writable, safe_write
    from partitioner.fleets import fleet as run
    from partitioner.fleets.api import FLEET_FORMAT
    from partitioner.fleets.market import parse_counts
    from partitioner.jsonio import dumps

    inputs = tuple(x for x in (model_file, own_file) if x)
    for path, marker in ((out, FLEET_FORMAT), (html_out, "")):
        if path:
            check_writable(path, inputs=inputs, marker=marker)
    tty = sys.stderr.isatty() and not as_json

    def progress(done: int, total: int, best: float) -> None:
        if tty:
            click.echo(f"\r  fleet: {done:,} of {total:,} fleets planned, best {best:,.1f} tokens/s", err=True, nl=False)

    result = run(model_file, tokens_per_s=tokens_per_s, users=users, tpot_ms=tpot_ms, ttft_ms=ttft_ms,
                 budget_per_hour=budget, own=own_file, market=parse_counts(market, "--market") if market else {},
                 boxes=parse_counts(box, "--box") if box else None, link=link, box_link=box_link, spot=spot,
                 engine=engine, tp=tp, max_batch=max_batch, workers=workers, ray=ray_address,
                 max_evaluations=max_plans, time_limit_s=time_limit, progress=progress)
    if tty:
        click.echo("\r" + " " * 72 + "\r", err=True, nl=False)
    data = result.to_dict()
    text = dumps(data, indent=2) + "\n"
    if out:
        safe_write(out, text, inputs=inputs, marker=FLEET_FORMAT)
    if html_out:
        from partitioner.report.fleet_chart import fleet_html

        safe_write(html_out, fleet_html(data, summary(data)), inputs=inputs)
    click.echo(text if as_json else summary(data), nl=not as_json)
