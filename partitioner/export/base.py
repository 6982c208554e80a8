"""`Export`: what an exporter returns, and the checks every target shares."""

from __future__ import annotations

from dataclasses import dataclass

from partitioner.export.view import PlanView

__all__ = ["Export", "plan_warnings", "ends_cannot_express"]


@dataclass(frozen=True)
class Export:
    """The text an engine takes (stdout), warnings, and what the target cannot express."""

    target: str
    text: str
    warnings: tuple[str, ...] = ()
    cannot_express: tuple[str, ...] = ()


def plan_warnings(view: PlanView) -> list[str]:
    """Warnings about the plan itself: marked infeasible, or no embedding/head layers."""
    out = []
    if not view.feasible:
        out.append(f"the plan is marked infeasible ({view.reason or 'memory limit broken'}); it may not load")
    missing = [n for n, has in (("embedding", view.has_embed), ("LM head", view.has_head)) if not has]
    if missing:
        out.append(
            f"the plan's layer list has no {' or '.join(missing)} layer (a measured profile?); "
            "the engine still adds the embedding to the first stage and the LM head to the last"
        )
    return out


def ends_cannot_express(view: PlanView, engine: str) -> list[str]:
    """Engines that always put the embedding on the first stage and the head on the last."""
    out = []
    for s, st in enumerate(view.stages):
        if st.embed and s != 0:
            out.append(f"{engine} always puts the embedding on the first stage, but the plan puts it on stage {s} ({st.device!r})")
        if st.head and s != view.S - 1:
            out.append(f"{engine} always puts the LM head on the last stage, but the plan puts it on stage {s} ({st.device!r})")
    return out
