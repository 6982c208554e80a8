"""Free device order over equivalence classes: the count-vector lattice (docs/algorithms.md §3b, §3c).

Devices of one class are interchangeable, so a partial plan is summarised by its count vector
v <= m (how many devices of each class it uses); the level |v| is the stage index.
The tau step (reachability under a bound, bisected) is `reach.lattice_tau`; the sigma and
sum steps over (v, last class, start layer) are `banded.lattice_stages`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Lattice", "lattice_size"]


def lattice_size(classes: list[list[int]]) -> int:
    """prod_t (m_t + 1): the number of count vectors."""
    n = 1
    for members in classes:
        n *= len(members) + 1
    return n


@dataclass(frozen=True, eq=False)
class Lattice:
    """Count vectors in mixed radix: index(v) = sum_t v_t * stride_t; points grouped by level."""

    classes: tuple[tuple[int, ...], ...]
    m: np.ndarray
    stride: np.ndarray
    coords: np.ndarray
    levels: tuple[np.ndarray, ...]

    @staticmethod
    def build(classes: list[list[int]]) -> Lattice:
        m = np.array([len(c) for c in classes], dtype=np.int64)
        stride = np.ones(len(m), dtype=np.int64)
        for t in range(len(m) - 2, -1, -1):
            stride[t] = stride[t + 1] * (m[t + 1] + 1)
        coords = np.indices(tuple(int(x) + 1 for x in m)).reshape(len(m), -1).T
        level = coords.sum(axis=1)
        levels = tuple(np.flatnonzero(level == s) for s in range(int(m.sum()) + 1))
        return Lattice(tuple(tuple(c) for c in classes), m, stride, coords, levels)

    @staticmethod
    def virtual(classes: list[list[int]]) -> Lattice:
        """The classes without their count vectors (too many to list): only the relaxed steps,
        which count a few classes of their own choosing, can search it."""
        m = np.array([len(c) for c in classes], dtype=np.int64)
        return Lattice(tuple(tuple(c) for c in classes), m, np.zeros(len(m), dtype=np.int64),
                       np.zeros((0, len(m)), dtype=np.int64), ())

    @property
    def listed(self) -> bool:
        """False for a `virtual` lattice."""
        return self.coords.shape[0] > 0

    @property
    def T(self) -> int:
        return len(self.m)

    def devices(self, seq: list[int]) -> tuple[int, ...]:
        """Class sequence -> device sequence, each class's devices in listed order."""
        used = [0] * self.T
        out = []
        for t in seq:
            out.append(self.classes[t][used[t]])
            used[t] += 1
        return tuple(out)
