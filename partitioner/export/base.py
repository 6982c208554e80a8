"""`Export`: what an exporter returns, and the checks every target shares."""

from __future__ import annotations

import re
from dataclasses import dataclass

from partitioner.errors import PartitionerError
from partitioner.export.shell import Step, scripts
from partitioner.export.view import PlanView
from partitioner.models.capability import compute_capability

__all__ = [
    "Export", "plan_warnings", "ends_cannot_express", "unsupported_gpus", "compute_capability",
    "STRICT_EXIT_CODES", "StrictRefusal", "uniform_tp", "no_tp",
]

# `partition export --strict` / `partition plan --export --strict`: exit code per problem kind
STRICT_EXIT_CODES: dict[str, int] = {"infeasible": 3, "cannot_express": 5, "unsupported_gpu": 6}


class StrictRefusal(PartitionerError):
    """`--strict` refused an export: infeasible (3), not expressible (5), unsupported GPU (6)."""

    def __init__(self, kind: str, message: str) -> None:
        self.kind = kind
        self.exit_code = STRICT_EXIT_CODES[kind]
        super().__init__(message)


@dataclass(frozen=True)
class Export:
    """The text an engine takes (stdout), warnings, what the target cannot express, and the
    launch steps (per host, in run order) behind `scripts`."""

    target: str
    text: str
    warnings: tuple[str, ...] = ()
    cannot_express: tuple[str, ...] = ()
    unsupported: tuple[str, ...] = ()  # stages on GPUs below the engine's minimum compute capability
    steps: tuple[Step, ...] = ()
    infeasible: bool = False
    files: tuple[tuple[str, str], ...] = ()  # (file name, text) written beside the scripts (router weights)

    @property
    def scripts(self) -> tuple[tuple[str, str], ...]:
        """(file name, bash script) per host in run order; empty for snippet-only targets."""
        return scripts(self.steps)

    def problems(self) -> list[tuple[str, str]]:
        """(kind, message) of everything --strict refuses, most serious first."""
        out = [("infeasible", "the plan is marked infeasible")] if self.infeasible else []
        out += [("unsupported_gpu", m) for m in self.unsupported]
        out += [("cannot_express", m) for m in self.cannot_express]
        return out

    def check_strict(self) -> None:
        """Raise `StrictRefusal` (its exit code names the most serious kind) if anything is refused."""
        problems = self.problems()
        if problems:
            kind = problems[0][0]
            what = {"infeasible": "the plan is infeasible", "unsupported_gpu": f"{self.target} does not support a GPU of this plan",
                    "cannot_express": f"{self.target} cannot express this plan"}[kind]
            raise StrictRefusal(kind, f"{what}: " + "; ".join(m for k, m in problems if k == kind))


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


def unsupported_gpus(view: PlanView, engine: str, minimum: tuple[int, int] | None, source: str) -> tuple[list[str], list[str]]:
    """(unsupported, warnings): stages whose GPU is below `minimum`, and GPUs whose capability is unknown."""
    if minimum is None:
        return [], []
    bad, unknown = [], []
    for s, st in enumerate(view.stages):
        for name in st.gpu.split("+"):  # a mixed TP group names its GPU types joined by "+"
            # a measured group profile ("l4x2") is a group of the catalogue's GPU ("l4")
            gpu = name.rsplit("x", 1)[0] if st.tp > 1 and re.fullmatch(r".+x\d+", name) else name
            cc = compute_capability(gpu)
            if cc is None:
                unknown.append(f"{gpu!r}")
            elif cc < minimum:
                bad.append(
                    f"stage {s} ({st.device!r}) is a {gpu} (compute capability {cc[0]}.{cc[1]}); "
                    f"{engine} needs {minimum[0]}.{minimum[1]} or higher ({source})"
                )
    warn = [f"compute capability unknown for {', '.join(sorted(set(unknown)))}; not checked against {engine}'s minimum"] if unknown else []
    return bad, warn


def uniform_tp(view: PlanView, engine: str, engine_id: str, source: str) -> tuple[int, list[str]]:
    """(TP degree, what cannot be expressed) for an engine taking one tensor-parallel size for
    every pipeline stage (`source`: where the engine says so). With several degrees the
    first stage's is printed and the plan is marked not expressible."""
    degrees = view.tp_degrees
    if len(degrees) == 1:
        return degrees[0], []
    per = "/".join(str(st.tp) for st in view.stages)
    return view.stages[0].tp, [
        f"{engine} takes one tensor-parallel size for every pipeline stage ({source}), but the plan's stages "
        f"have TP degrees {per}; re-plan with `partition plan --engine {engine_id}`"
    ]


def no_tp(view: PlanView, engine: str, why: str) -> list[str]:
    """A snippet target that gives each stage one device: TP groups cannot be expressed."""
    if view.tp_degrees == [1]:
        return []
    per = "/".join(str(st.tp) for st in view.stages)
    return [f"{engine} {why}, but the plan's stages have TP degrees {per}"]
