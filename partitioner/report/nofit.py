"""A model that does not fit the cluster still gets a report: how much memory each device lacks,
and the smallest `--with` additions that make it fit, each planned and scored.

Shortfall per device: the memory-proportional split (llama.cpp's `--tensor-split` default,
`partitioner.solvers.baselines`) spreads the model as evenly over the devices' memory as a layer
split can, so what each device still lacks there is the least any split leaves it short by, up
to one layer. Additions: for each GPU type of the cluster (placed on the node of its first
device, `models.whatif.with_device`), the fewest extra GPUs with which the planner finds a plan
that fits, up to `MAX_ADDED`; each is shown with its tokens/s and TPOT (`serving.serving_numbers`),
fewest GPUs first, then least memory added. Once one addition is found, the other types are tried
only while the report's budget lasts (`more_time`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from partitioner.errors import PartitionerError
from partitioner.report.serving import Workload, serving_numbers

__all__ = ["MAX_ADDED", "Shortfall", "Addition", "NoFit", "shortfall", "additions", "no_fit"]

MAX_ADDED = 8  # extra GPUs of one type tried before that type is given up


@dataclass(frozen=True)
class Shortfall:
    """One device in the memory-proportional split: GB it needs there, GB it has."""

    device: str
    need_gb: float
    capacity_gb: float

    @property
    def short_gb(self) -> float:
        return max(0.0, self.need_gb - self.capacity_gb)


@dataclass(frozen=True)
class Addition:
    """`--with GPU@NODE` repeated `count` times, and the plan the cluster then gets."""

    gpu: str
    node: str
    count: int
    added_gb: float
    flags: str  # the command-line options, as a user types them
    gpus: int  # devices the plan uses
    tokens_per_s: float
    tpot_s: float | None
    devices: tuple[str, ...]


@dataclass(frozen=True)
class NoFit:
    reason: str  # the planner's message
    shortfall: tuple[Shortfall, ...]
    additions: tuple[Addition, ...]  # smallest first
    tried: tuple[str, ...] = ()  # GPU types for which `max_added` were not enough (or time ran out)
    max_added: int = MAX_ADDED


def shortfall(problem: Any) -> tuple[Shortfall, ...]:
    """Per device, what the memory-proportional split needs against what the device has."""
    from partitioner.api import solve_problem

    try:
        plan = solve_problem(problem, "memory")
    except PartitionerError:
        return ()
    return tuple(Shortfall(st.device, float(st.memory_gb), float(st.capacity_gb)) for st in plan.stages)


def _types(cluster: Any) -> list[tuple[str, str]]:
    """(gpu id, node of its first device) per GPU type, in cluster order."""
    seen: dict[str, tuple[str, str]] = {}
    for d in cluster.devices:
        seen.setdefault(d.gpu_id, (d.gpu_id, d.node))
    return list(seen.values())


Planner = Callable[[Any, Any], Any]  # (model, cluster) -> Plan; raises InfeasibleError


def additions(model: Any, cluster: Any, planner: Planner, workload: Workload,
              more_time: Callable[[], bool] = lambda: True) -> tuple[tuple[Addition, ...], tuple[str, ...]]:
    """The fewest GPUs of each type that make the model fit (module doc), and the types that did not."""
    from partitioner.errors import InfeasibleError
    from partitioner.models import whatif

    found: list[Addition] = []
    gave_up: list[str] = []
    for gpu, node in _types(cluster):
        grown = cluster
        for count in range(1, MAX_ADDED + 1):
            if found and not more_time():  # the first addition that fits is always searched for
                gave_up.append(gpu)
                break
            try:
                grown = whatif.with_device(grown, gpu, node)  # an inline GPU spec is no catalogue id: given up
                plan = planner(model, grown)
            except InfeasibleError:
                continue
            except (PartitionerError, KeyboardInterrupt):  # Ctrl-C: no new solve starts
                gave_up.append(gpu)
                break
            if not plan.feasible:
                continue
            sv = serving_numbers(plan, workload)
            added = [st for st in plan.stages if st.device.startswith(f"{gpu}@{node}")]
            cap = float(added[0].capacity_gb) if added else 0.0
            found.append(Addition(gpu, node, count, cap * count, " ".join([f"--with {gpu}@{node}"] * count),
                                  len(plan.stages), sv.tokens_per_s, sv.tpot_s,
                                  tuple(st.device for st in plan.stages)))
            break
        else:
            gave_up.append(gpu)
    found.sort(key=lambda a: (a.count, a.added_gb, -a.tokens_per_s))
    return tuple(found), tuple(gave_up)


def no_fit(reason: str, problem: Any, model: Any, cluster: Any, planner: Planner, workload: Workload,
           more_time: Callable[[], bool] = lambda: True) -> NoFit:
    """Everything the report shows for a model that does not fit (module doc)."""
    adds, gave_up = additions(model, cluster, planner, workload, more_time)
    return NoFit(reason, shortfall(problem), adds, gave_up)
