"""The default serving answer under a time limit that has run out: its own layouts are still all
planned, but the failure block (one machine lost) is left out with a note rather than printed with
losses valued 0 because their pipelines were never planned. No wall clock: the limit is spent
before the block starts however loaded the machine, and the unit test sets a past deadline."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from partitioner.api import load_inputs
from partitioner.planning.answer import default_answer
from partitioner.planning.serving import Values

TRIO = """name: trio
devices:
  - {name: a, gpu: a100-80gb, node: n1}
  - {name: b, gpu: a100-80gb, node: n2}
  - {name: c, gpu: l40s, node: n3}
links:
  inter_node: 10gbe
"""


class _Kinds:
    def devices(self, x: tuple[int, ...]) -> list[int]:
        return list(range(sum(x)))


def test_past_the_deadline_only_the_first_vector_is_planned() -> None:
    planned: list[list[int]] = []

    def planner(devices: list[int]) -> Any:
        planned.append(devices)
        return SimpleNamespace(serving=SimpleNamespace(tokens_per_s=100.0 * len(devices)))

    values = Values(_Kinds(), planner, lambda d: True, str, deadline=time.monotonic() - 1.0)  # type: ignore[arg-type]
    assert values((2,)) == 200.0  # nothing planned yet: the first vector always is
    assert values((1,)) == 0.0 and values.skipped == 1  # past the deadline: not planned, not remembered
    assert values((2,)) == 200.0 and planned == [[0, 1]]  # memoised vectors still answer
    values.deadline = None
    assert values((1,)) == 100.0 and planned[-1] == [0]


def test_an_answer_out_of_time_has_no_failure_block_but_says_why(tmp_path: Path) -> None:
    cluster = tmp_path / "trio.yaml"
    cluster.write_text(TRIO)
    m, c = load_inputs("examples/models/llama-3.1-8b.yaml", cluster)
    free = default_answer(m, c)
    out = default_answer(m, c, time_limit_s=1e-9)
    # losing an A100 machine needs the pipelines of (1 A100, 1 L40S), never planned for the answer
    assert free.failure is not None and len(free.failure.losses) == 2
    assert out.failure is None
    assert any("before the failure block" in n for n in out.result.notes)
