"""Terminal view of a `Plan` (rich tables): stages, closed forms, weak links, gain, proof."""

from __future__ import annotations

from typing import Any

from partitioner.cli._output import fmt_rate, fmt_time
from partitioner.result import Plan

__all__ = ["render_plan", "stage_table", "summary_lines"]


def _layer_range(st: Any) -> str:
    names = st.first_layer if st.start + 1 == st.end else f"{st.first_layer}..{st.last_layer}"
    return f"[{st.start},{st.end}) {names}"


def stage_table(plan: Plan) -> Any:
    """One row per stage: device, GPU, layers, tau_s, d_s, sigma_s, memory used / usable."""
    from rich.table import Table

    table = Table(title=f"{plan.model or 'model'}: {plan.S} stage(s), {plan.num_layers} layers", title_justify="left")
    for col in ("#", "device", "gpu", "node", "layers", "τ_s", "d_s", "σ_s", "memory GB"):
        table.add_column(col, justify="right" if col in ("#", "τ_s", "d_s", "σ_s", "memory GB") else "left")
    for st in plan.stages:
        last = st.index == plan.S - 1
        bottleneck = "[bold]" if abs(st.tau - plan.tau_max) <= 1e-12 * max(1.0, plan.tau_max) else ""
        table.add_row(
            str(st.index),
            st.device,
            st.gpu,
            st.node,
            _layer_range(st),
            f"{bottleneck}{fmt_time(st.tau)}",
            "—" if last else fmt_time(st.d),
            fmt_time(st.sigma),
            f"{st.memory_gb:.2f} / {st.capacity_gb:.2f}",
        )
    return table


def summary_lines(plan: Plan, even: Plan | str | None) -> list[str]:
    """The closed forms (Thm 2, Thm 3, Cor 1/3), Cor 4's weak links, the gain and the proof status."""
    a = plan.analysis()
    lines = [
        f"τ_max {fmt_time(plan.tau_max)}   σ_max {fmt_time(plan.sigma_max)}   regime {plan.regime}, M = {plan.M}",
        f"T_async {fmt_time(plan.T_async)} (Thm 2)   T_block {fmt_time(plan.T_block)} (Thm 3)",
        f"throughput {fmt_rate(plan.throughput)} micro-batches (1/{'τ' if plan.regime == 'async' else 'σ'}_max)"
        f"   first micro-batch {fmt_time(plan.first_latency)}   crossover M* = {a.crossover_batches:.3g}",
        f"GPipe estimate {fmt_time(plan.T_gpipe)}: error {a.gpipe_error:+.1%} vs T_async "
        f"(overestimate Σ(τ_max−τ_j) {fmt_time(a.homogeneity_bias)}, underestimate Σd "
        f"{fmt_time(sum(plan.d.tolist()))})",
    ]
    weak = plan.violating_links()
    if weak:
        lines.append("links that still violate d_s > τ_max − τ_s (they set the blocking slope):")
        for w in weak:
            head = f"  {w['from']} → {w['to']}: d = {fmt_time(w['d'])} > slack {fmt_time(w['slack'])}; "
            if w["slack"] > 0:
                lines.append(head + f"fixed by a link with d ≤ {fmt_time(w['max_latency_to_fix'])}")
            else:
                lines.append(head + "the bottleneck's own send: only asynchronous sends hide it")
    else:
        lines.append("no link violates d_s > τ_max − τ_s: communication adds only a constant (Cor 4)")
    lines.append(_gain_line(plan, even))
    lines.append(_proof_line(plan))
    return lines


def _gain_line(plan: Plan, even: Plan | str | None) -> str:
    if even is None:
        return "gain over even (vLLM): this is the even split"
    if isinstance(even, str):
        return f"gain over even (vLLM): the even split cannot be built ({even})"
    if not even.feasible:
        return f"gain over even (vLLM): the even split does not fit ({even.reason})"
    return (
        f"gain over even (vLLM): throughput ×{plan.throughput / even.throughput:.3g}, "
        f"T(M) {fmt_time(even.T)} → {fmt_time(plan.T)} (×{even.T / plan.T:.3g} faster)"
    )


def _proof_line(plan: Plan) -> str:
    if plan.optimal:
        return f"solver {plan.solver}: proven optimal ({plan.objective}, {plan.regime})"
    gap = 0.0
    top = plan.objective_value[0] if plan.objective_value else 0.0
    if top > 0:
        gap = max(0.0, (top - plan.lower_bound) / top)
    status = "baseline, not optimised" if plan.status == "BASELINE" else f"status {plan.status}"
    return f"solver {plan.solver}: {status}; lower bound {plan.lower_bound:.6g}, gap {gap:.1%}"


def render_plan(plan: Plan, even: Plan | str | None) -> None:
    """Print the plan to the terminal."""
    from rich.console import Console

    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=140)
    console.print(stage_table(plan))
    if not plan.feasible:
        console.print(f"[bold red]infeasible:[/] {plan.reason}")
    for line in summary_lines(plan, even):
        console.print(line)
