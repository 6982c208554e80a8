"""Shared helpers of the engine baselines: layer kinds, empty stages, memory check, lower bound.

Every baseline replays an engine's rule to get a number of layers per device (devices in
listed order), then `finish` turns that into a `Solution`: devices that get no layers are
left out (or, for engines that keep empty ranks, the plan is reported infeasible), the plan
is scored exactly with `partitioner.problem.evaluate`, and a memory limit that is broken
makes it infeasible with the reason, never silently repaired.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from partitioner.errors import InputError
from partitioner.problem import Metrics, Problem, Solution, evaluate, objective_key

__all__ = [
    "BASELINE_STATUS",
    "decoder_positions",
    "cuts_from_decoder_counts",
    "finish",
    "memory_reasons",
    "lower_bound",
]

BASELINE_STATUS = "BASELINE"


def decoder_positions(problem: Problem) -> list[int]:
    """Indices (into the model's layer list) of the decoder layers, in order.

    Engines count decoder layers only; "embed" and "head" layers ride along with the first
    and last stage. A model without layer kinds is all decoders (`CostTables.kinds`).
    """
    return [i for i, k in enumerate(problem.tables.kinds) if k == "decoder"]


def cuts_from_decoder_counts(problem: Problem, counts: Sequence[int]) -> list[int]:
    """Boundaries over the full layer list for `counts` decoder layers per stage.

    Stage s >= 1 starts at its first decoder layer; layers before the first decoder (the
    embedding) join stage 0 and layers after the last decoder (the LM head) join the last
    stage. A stage with 0 decoder layers yields a repeated boundary (an empty stage).
    """
    dec = decoder_positions(problem)
    if sum(counts) != len(dec):
        raise InputError(f"decoder counts {list(counts)} do not sum to the {len(dec)} decoder layers")
    cuts = [0]
    seen = 0
    for c in counts[:-1]:
        seen += int(c)
        cuts.append(dec[seen] if seen < len(dec) else problem.L)
    cuts.append(problem.L)
    return cuts


def memory_reasons(problem: Problem, devices: Sequence[int], m: Metrics) -> list[str]:
    """One message per stage whose layers need more than its device's usable memory."""
    t = problem.tables
    out = []
    for s, g in enumerate(devices):
        need, cap = float(m.memory_gb[s]), float(m.capacity_gb[s])
        if need > cap * (1 + 1e-9) + 1e-12:
            out.append(
                f"stage {s} ({t.gpu_names[g]} {t.device_names[g]!r}) needs {need:.1f} GB > {cap:.1f} GB usable"
            )
    return out


def lower_bound(problem: Problem, *, fits: bool = True) -> float:
    """A valid lower bound on the first objective component of this baseline's plan.

    `partitioner.solvers.bounds.lower_bound`, with memory limits only when the plan honours
    them: a plan that breaks a memory limit can beat every plan that fits, so its bound is
    the memory-free one.
    """
    from partitioner.solvers import bounds

    return float(bounds.lower_bound(problem, memory=fits))


def finish(
    problem: Problem,
    solver: str,
    devices: Sequence[int],
    cuts: Sequence[int],
    *,
    keep_empty: bool = False,
    started: float | None = None,
) -> Solution:
    """Score an engine's split (possibly with empty stages) as a `Solution`.

    `devices[s]` holds layers [cuts[s], cuts[s+1]). Empty stages are dropped from the plan;
    with `keep_empty` (an engine that leaves empty ranks, e.g. DeepSpeed) that makes the
    plan infeasible with reason "stage k gets 0 layers", otherwise the reason notes which
    devices were left out and the plan stays feasible if it fits in memory.
    """
    start = time.perf_counter() if started is None else started
    notes: list[str] = []
    empty = [s for s in range(len(devices)) if cuts[s] == cuts[s + 1]]
    t = problem.tables
    if empty and keep_empty:
        notes += [f"stage {s} gets 0 layers (rank {s} on {t.device_names[devices[s]]!r} stays empty)" for s in empty]
    elif empty:
        names = ", ".join(repr(t.device_names[devices[s]]) for s in empty)
        notes.append(f"{names} {'gets' if len(empty) == 1 else 'get'} 0 layers and {'is' if len(empty) == 1 else 'are'} left out")
    kept = [s for s in range(len(devices)) if s not in empty]
    dev = tuple(int(devices[s]) for s in kept)
    cut = tuple([int(cuts[s]) for s in kept] + [int(cuts[-1])])
    metrics = evaluate(problem, dev, cut)
    broken = memory_reasons(problem, dev, metrics)
    feasible = not broken and not (empty and keep_empty)
    reasons = broken + notes if not feasible else notes
    return Solution(
        devices=dev,
        cuts=cut,
        solver=solver,
        optimal=False,
        objective=objective_key(problem, metrics),
        lower_bound=lower_bound(problem, fits=not broken),
        status=BASELINE_STATUS,
        feasible=feasible,
        reason="; ".join(reasons),
        wall_time_s=time.perf_counter() - start,
    )
