"""Terminal view of a `Plan` (rich tables): stages, closed forms, weak links, gain, proof."""

from __future__ import annotations

from typing import Any

from partitioner.cli._output import fmt_rate, fmt_time
from partitioner.result import Plan

__all__ = ["render_plan", "stage_table", "summary_lines", "serving_lines", "frontier_table", "serve_bound"]


def _layer_range(st: Any, plan: Plan) -> str:
    """Decoder layers numbered as engines count them (0-based, embedding and head named apart):
    vLLM `get_pp_indices` and VLLM_PP_LAYER_PARTITION count decoder layers only."""
    before = sum(p.decoder_layers for p in plan.stages[: st.index])
    parts = ["embed"] if st.embed else []
    if st.decoder_layers == 1:
        parts.append(f"decoder {before}")
    elif st.decoder_layers:
        parts.append(f"decoders {before}–{before + st.decoder_layers - 1}")
    if st.head:
        parts.append("lm_head")
    return " + ".join(parts) or f"{st.first_layer}..{st.last_layer}"


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
            _layer_range(st, plan),
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
        *serving_lines(plan),
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


def serving_lines(plan: Plan) -> list[str]:
    """Decode tokens/s first (closed loop, partitioner.serving), then TPOT, TTFT and KV capacity."""
    s = plan.serving
    if s is None:
        return []
    cap = "not modelled (no KV sizes)" if s.max_sequences is None else f"{s.max_sequences} sequences"
    if s.capacity_stage is not None and s.max_sequences is not None:
        cap += f" (set by stage {s.capacity_stage}, {plan.stages[s.capacity_stage].device})"
    ttft = "—" if s.ttft_s is None else fmt_time(s.ttft_s)
    if s.ttft_chunked_s is not None and s.prefill_chunks > 1:
        ttft += f" ({fmt_time(s.ttft_chunked_s)} in {s.prefill_chunks} chunks)"
    lines = [
        f"{'output' if s.mix else 'decode'} {s.tokens_per_s:,.4g} tokens/s ({s.tokens_per_s_per_gpu:,.4g}/GPU, "
        f"{s.tokens_per_s_per_user:.4g}/user)   TPOT {fmt_time(s.tpot_s)}   TTFT {ttft}",
        f"batch {s.batch} × {s.in_flight} in flight = {s.sequences} sequences at context {s.context}; "
        f"KV capacity {cap}; bound: {s.binding.replace('_', ' ')} "
        f"(round trip {fmt_time(s.round_trip_s)}, crossover K* = {s.crossover_in_flight:.3g})",
        *_pool_lines(plan),
    ]
    if s.mix is not None:  # chunked prefill of the workload's request mix (analysis.chunked)
        m = s.mix
        lines.append(f"request mix: {m.total_tokens_per_s:,.4g} tokens/s with prompts, {m.requests_per_s:.4g} requests/s, "
                     f"{m.prefill_tokens_per_step:.4g} prompt tokens a step of {s.token_budget}; "
                     f"bound: {m.binding.replace('_', ' ')}")
    return lines + [f"warning: {w}" for w in s.warnings]


def _pool_lines(plan: Plan) -> list[str]:
    """The engine's KV pool in tokens and each stage's memory per GPU (engine pool only)."""
    s = plan.serving
    if s is None or s.kv_tokens is None:
        return []
    out = [f"KV pool {s.kv_tokens:,} tokens (the engine's start-up rule; the least over stages)"
           + (f"; {s.kv_note}" if s.kv_note else "")]
    gib = float(1 << 30)
    for k, m in enumerate(s.stage_memory):
        tok = "no KV" if m.kv_tokens is None else f"{m.kv_tokens:,} tokens"
        rest = (f"non-KV (calibrated) {m.activation / gib:.2f}" if m.calibrated else
                f"activation {m.activation / gib:.2f}, non-torch {m.non_torch / gib:.2f}, sampler {m.sampler / gib:.2f}")
        out.append(f"  stage {k} ({plan.stages[k].device}): {tok}; GiB per GPU: weights {m.weights / gib:.2f}, "
                   f"KV {m.kv / gib:.2f}, {rest}, free {m.free / gib:.2f}")
    return out


def frontier_table(plan: Plan) -> Any:
    """The serve objective's Pareto frontier of tokens/s against TPOT."""
    from rich.table import Table

    table = Table(title="Pareto frontier: decode tokens/s against TPOT (serve)", title_justify="left")
    for col in ("batch", "in flight", "tokens/s", "per GPU", "per user", "TPOT", "TTFT", "max seqs", "devices"):
        table.add_column(col, justify="left" if col == "devices" else "right")
    for p in plan.frontier:
        table.add_row(
            str(p["batch"]), str(p["in_flight"]), f"{p['tokens_per_s']:,.4g}", f"{p['tokens_per_s_per_gpu']:,.4g}",
            f"{p['tokens_per_s_per_user']:.4g}", fmt_time(p["tpot_s"]),
            "—" if p["ttft_s"] is None else fmt_time(p["ttft_s"]),
            "—" if p["max_sequences"] is None else str(p["max_sequences"]), ",".join(p["devices"]),
        )
    return table


def _gain_line(plan: Plan, even: Plan | str | None) -> str:
    if plan.objective == "serve" and isinstance(even, Plan) and even.serving and plan.serving:
        e, s = even.serving, plan.serving
        return (
            f"gain over even (vLLM) at its best batch {e.batch} × {e.in_flight}: tokens/s ×"
            f"{s.tokens_per_s / e.tokens_per_s:.3g} ({e.tokens_per_s:,.4g} → {s.tokens_per_s:,.4g}), "
            f"KV capacity {e.max_sequences} → {s.max_sequences} sequences"
        )
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


def serve_bound(tokens_per_s: float, upper_tokens_per_s: float) -> str:
    """A serve answer's tokens/s beside the search's upper bound, both in tokens/s: the one form
    of the serve proof for a pipeline (Plan.lower_bound = 1 / bound) and a deployment
    (Deployment.upper_bound_tokens_per_s)."""
    gap = max(0.0, 1.0 - tokens_per_s / upper_tokens_per_s) if upper_tokens_per_s > 0 else 0.0
    return f"{tokens_per_s:,.4g} tokens/s, within {gap:.1%} of the upper bound {upper_tokens_per_s:,.4g} tokens/s"


def _proof_line(plan: Plan) -> str:
    if plan.objective == "serve":
        head = f"solver {plan.solver} per (batch, in flight), serve search over the batch grid: "
        if plan.optimal:
            return head + "proven optimal"
        if plan.lower_bound <= 0:
            return head + f"status {plan.status}: the grid was not searched to the end, no bound"
        tps = plan.serving.tokens_per_s if plan.serving is not None else 1.0 / plan.objective_value[0]
        return head + serve_bound(tps, 1.0 / plan.lower_bound)
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

    console = Console(highlight=False, width=_width())
    console.print(stage_table(plan))
    if not plan.feasible:
        console.print(f"[bold red]infeasible:[/] {plan.reason}")
    for line in summary_lines(plan, even):
        console.print(line)
    if plan.frontier:
        console.print(frontier_table(plan))


def _width() -> int:
    from partitioner.cli._output import terminal_width

    return terminal_width()
