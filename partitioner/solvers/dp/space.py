"""The plan space a DP step searches: fixed order (a device chain) or free order (a lattice).

`Space.tau()` is the tau step, `Space.stages(mode, tau_cap, sigma_cap)` the sigma ("max") and
sum ("sum") steps, and `Space.values(kind, lo, hi)` the candidate bottleneck values of the
makespan step (docs/algorithms.md §3d): every interval sum C_g(i, j) for tau, every
C_g(i, j) + d(g, h, j) and final C_g(i, L) for sigma, restricted to [lo, hi].
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from partitioner.solvers.dp.banded import lattice_stages, stage_bounds, window_states
from partitioner.solvers.dp.fixed import Plan, fixed_stages, fixed_tau
from partitioner.solvers.dp.lattice import Lattice
from partitioner.solvers.dp.reach import lattice_tau, tau_plan
from partitioner.solvers.dp.relaxed import MAX_STATES, Unaffordable, one_link, relaxed_bound, relaxed_stages
from partitioner.solvers.dp.relaxed_tau import relaxed_sigma
from partitioner.solvers.dp.tables import DPTables, cap

__all__ = ["Space", "SMALL_BAND"]

SMALL_BAND = 100_000  # window states under which the banded step runs even beyond `applies`
TINY_LATTICE = 64  # lattice points up to which the relaxed steps count every class from the start
WINDOW_WORK = 1_000_000  # lattice points x classes up to which those window states are counted


@dataclass(eq=False)
class Space:
    """`fine` (classes that respect links) drives the sigma/sum steps; `coarse` (cost row and
    capacity only) the tau step. Both are None in fixed order."""

    tables: DPTables
    fine: Lattice | None = None
    coarse: Lattice | None = None
    calls: int = 0
    check: Callable[[], None] | None = None  # raises to stop the search (time limit)
    on_plan: Callable[[str, Plan], None] | None = None  # sees every plan a step returns
    on_bound: Callable[[float], None] | None = None  # sees a lower bound a stopped search proved
    banded_ok: bool = True  # the full lattice step is affordable (else Unaffordable propagates)
    counted: dict[str, set[int]] = field(default_factory=dict)  # per mode: classes the relaxed steps count
    known_tau: Plan | None = None  # a tau*-attaining plan found elsewhere (`relaxed_tau`)
    _tau: float | None = None

    @property
    def free(self) -> bool:
        return self.fine is not None

    def tau(self) -> float:
        """Minimum tau_max (inf when no plan fits); computed once."""
        if self._tau is None:
            self._tau = self._tau_step() if self.known_tau is None else self.known_tau[0]
        return self._tau

    def _tau_step(self) -> float:
        if self.coarse is None:
            self.calls += 1
            return fixed_tau(self.tables)[0]
        value, probes = lattice_tau(self.tables, self.coarse)
        self.calls += probes
        return value

    def tau_plan(self) -> Plan:
        """A plan attaining the minimum tau_max (backtracked from the reachability DP in free
        order); (inf, (), ()) when nothing fits."""
        if self.known_tau is not None:
            return self._seen("tau", self.known_tau)
        if self.coarse is None:
            self.calls += 1
            plan = fixed_tau(self.tables)
            self._tau = plan[0]
            return self._seen("tau", plan)
        tau = self.tau()
        if not np.isfinite(tau):
            return float(np.inf), (), ()
        self.calls += 1
        return self._seen("tau", (tau, *tau_plan(self.tables, self.coarse, cap(tau))))

    def report_bound(self, value: float) -> None:
        if self.on_bound is not None:
            self.on_bound(value)

    def _seen(self, kind: str, plan: Plan) -> Plan:
        if self.on_plan is not None and plan[1]:
            self.on_plan(kind, plan)
        return plan

    def stages(
        self, mode: str, tau_cap: float, sigma_cap: float, bound: float = float(np.inf), loose: bool = False
    ) -> Plan:
        """The sigma ("max") or sum ("sum") step under the caps; in max mode plans above `bound`
        (an incumbent's value) may be skipped, which only prunes the free-order search. In free
        order the banded lattice step runs first at the period's tight caps, where its windows
        are thin and every class is scarce; with `loose` caps (the makespan search) the relaxed
        step runs first, where few classes are scarce and the windows are wide. Beyond `applies`
        (not banded_ok) the sigma step on one link is a bisected reach (`relaxed_sigma`), the
        banded step runs only on few window states, and Unaffordable says when neither fits."""
        self.calls += 1
        if self.check is not None:
            self.check()
        if self.fine is None:
            return self._seen("stages", fixed_stages(self.tables, mode, tau_cap, sigma_cap, check=self.check))
        T, lat = self.tables, self.fine

        def banded() -> Plan:
            return lattice_stages(T, lat, mode, tau_cap, sigma_cap, bound=bound, check=self.check)

        def few() -> bool:  # few window states (and few enough lattice points to count them)
            if not lat.listed or lat.coords.shape[0] * lat.T > WINDOW_WORK:
                return False
            return window_states(T, lat, *stage_bounds(T, lat, mode, tau_cap, sigma_cap, bound)) <= SMALL_BAND

        if self.banded_ok and not loose:
            return self._seen("stages", banded())
        d = one_link(T, lat.classes)
        if mode == "max" and d is not None:
            found = relaxed_sigma(T, [list(c) for c in lat.classes], tau_cap, d, check=self.check)
            if found[1]:
                return self._seen("stages", found)
        if not loose and not self.banded_ok and few():
            return self._seen("stages", banded())
        try:  # on several links a pass costs T times more: there only small relaxations are tried
            found = relaxed_stages(T, lat.classes, mode, tau_cap, sigma_cap, bound=bound,
                                   K=self._counted(mode), check=self.check,
                                   max_states=MAX_STATES if d is not None else MAX_STATES // 30)
        except Unaffordable:
            if not (self.banded_ok or (loose and few())):
                raise
            found = banded()
        return self._seen("stages", found)

    def stages_bound(self, mode: str, tau_cap: float, sigma_cap: float) -> tuple[float, Plan | None]:
        """A lower bound on `stages(mode, tau_cap, sigma_cap)` from one relaxed pass over the
        classes counted so far, with the step's optimal plan when that pass already finds it
        (None otherwise); exact in fixed order."""
        if self.fine is None:
            found = self.stages(mode, tau_cap, sigma_cap)
            return found[0], found
        self.calls += 1
        if self.check is not None:
            self.check()
        try:
            value, devices, cuts = relaxed_bound(self.tables, self.fine.classes, mode, tau_cap, sigma_cap,
                                                 K=self._counted(mode))
        except Unaffordable:
            return 0.0, None
        if not devices:
            return value, None
        return value, self._seen("stages", (value, devices, cuts))

    @property
    def tiny(self) -> bool:
        """A listed free-order lattice of at most TINY_LATTICE points, where a step's cost is the
        fixed cost of its array operations, whatever it counts."""
        lat = self.fine
        return lat is not None and lat.listed and lat.coords.shape[0] <= TINY_LATTICE

    def _counted(self, mode: str) -> set[int]:
        """The classes the relaxed steps count in `mode` (kept between steps, grown by them). On a
        tiny lattice a pass counting every class costs about what one counting none does, and it
        is exact at once: so there every class is counted from the start."""
        if mode not in self.counted:
            classes = self.fine.classes if self.fine is not None else ()
            self.counted[mode] = set(range(len(classes))) if self.tiny else set()
        return self.counted[mode]

    def _pairs(self) -> list[tuple[int, int]]:
        """(cost id, link id) of every stage-then-link pair a plan can contain."""
        T = self.tables
        if self.fine is None:
            pairs = {(int(T.cost_id[g]), int(T.link_id[g, h])) for g in range(T.G) for h in range(g + 1, T.G)}
        else:
            cls = self.fine.classes
            pairs = set()
            for a in cls:
                for b in cls:
                    if a is not b:
                        pairs.add((int(T.cost_id[a[0]]), int(T.link_id[a[0], b[0]])))
                    elif len(a) >= 2:
                        pairs.add((int(T.cost_id[a[0]]), int(T.link_id[a[0], a[1]])))
        return sorted(pairs)

    def _cost_ids(self) -> list[int]:
        T = self.tables
        gs = range(T.G) if self.fine is None else [c[0] for c in self.fine.classes]
        return sorted({int(T.cost_id[g]) for g in gs})

    def values(self, kind: str, lo: float, hi: float) -> np.ndarray:
        """Sorted distinct candidate values of the bottleneck quantity ("tau" or "sigma") in [lo, hi]."""
        T = self.tables
        parts: list[np.ndarray] = []

        def keep(x: np.ndarray) -> None:
            parts.append(x[(x >= lo) & (x <= hi)])

        for c in self._cost_ids():
            keep(T.C[c].ravel() if kind == "tau" else T.C[c][:, -1])
        if kind == "sigma":
            for c, lid in self._pairs():
                keep((T.C[c] + T.D[lid][None, :]).ravel())
        out = np.unique(np.concatenate(parts)) if parts else np.empty(0)
        return out[np.isfinite(out)]
