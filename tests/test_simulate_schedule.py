"""The exact recurrences (1)/(2) of theory.md as full schedules: literal tables and properties."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from partitioner import analysis as A
from partitioner.errors import InputError
from partitioner.simulate import Event, simulate, ticks


def test_async_literal_schedule() -> None:
    # tau = [2, 1], d = [0.5], M = 3, recurrence (1) by hand
    s = simulate([2, 1], [0.5], 3, "async")
    np.testing.assert_allclose(s.start, [[0, 2.5], [2, 4.5], [4, 6.5]])
    np.testing.assert_allclose(s.finish, [[2, 3.5], [4, 5.5], [6, 7.5]])
    np.testing.assert_allclose(s.send_start, [[2], [4], [6]])
    np.testing.assert_allclose(s.send_finish, [[2.5], [4.5], [6.5]])
    np.testing.assert_allclose(s.release, s.finish)
    assert s.makespan == 7.5 == A.makespan_async([2, 1], [0.5], 3)
    assert (s.M, s.S) == (3, 2)


def test_blocking_literal_schedule() -> None:
    # recurrence (2): sigma = [2.5, 1]; the send holds stage 0
    s = simulate([2, 1], [0.5], 3, "blocking")
    np.testing.assert_allclose(s.start, [[0, 2.5], [2.5, 5], [5, 7.5]])
    np.testing.assert_allclose(s.finish, [[2, 3.5], [4.5, 6], [7, 8.5]])
    np.testing.assert_allclose(s.release[:, 0], [2.5, 5, 7.5])
    assert s.makespan == 8.5 == A.makespan_blocking([2, 1], [0.5], 3)


def test_events_for_gantt() -> None:
    ev = simulate([2, 1], [0.5], 2, "blocking").events()
    assert ev[:3] == [
        Event("compute", 0, 0, 0.0, 2.0),
        Event("hold", 0, 0, 2.0, 2.5),
        Event("send", 0, 0, 2.0, 2.5),
    ]
    assert sum(e.kind == "compute" for e in ev) == 4 and sum(e.kind == "send" for e in ev) == 2
    assert sum(e.kind == "hold" for e in ev) == 2  # only stage 0 holds (it sends)
    assert [e.start for e in ev] == sorted(e.start for e in ev)
    assert all(e.kind != "hold" for e in simulate([2, 1], [0.5], 2, "async").events())


def test_ticks_literal_table() -> None:
    # synchronous fill-drain order (torchgpipe clock_cycles), M + S - 1 = 4 ticks
    assert list(ticks(2, 3)) == [
        [(0, 0)],
        [(1, 0), (0, 1)],
        [(1, 1), (0, 2)],
        [(1, 2)],
    ]
    assert sum(1 for _ in ticks(8, 4)) == 11
    with pytest.raises(InputError, match=r"S must be an integer >= 1 \(got 0\)"):
        list(ticks(2, 0))


def test_errors_2_sojourn_times_depend_on_order() -> None:
    # theory.md Errors 2, d = 0.2 per link: [5,1,1,0.5] -> 8.1 each; [0.5,1,1,5] -> 8.1, 12.6, ..., 26.1
    head = simulate([5, 1, 1, 0.5], [0.2] * 3, 5).sojourn
    tail = simulate([0.5, 1, 1, 5], [0.2] * 3, 5).sojourn
    np.testing.assert_allclose(head, [8.1] * 5)
    np.testing.assert_allclose(tail, [8.1, 12.6, 17.1, 21.6, 26.1])
    # ... while first latency and every exit time are order-invariant (Prop 2)
    exits = [simulate(t, [0.2] * 3, 5).finish[:, -1] for t in ([5, 1, 1, 0.5], [0.5, 1, 1, 5])]
    np.testing.assert_allclose(exits[0], exits[1])


@st.composite
def chains(draw: st.DrawFn) -> tuple[list[float], list[float], int]:
    S = draw(st.integers(1, 6))
    tau = draw(st.lists(st.floats(0.01, 10), min_size=S, max_size=S))
    d = draw(st.lists(st.floats(0.0, 20), min_size=S - 1, max_size=S - 1))
    return tau, d, draw(st.integers(1, 40))


@settings(max_examples=80)
@given(chains())
def test_simulator_equals_theorems_2_and_3(chain: tuple[list[float], list[float], int]) -> None:
    tau, d, M = chain
    t_async = simulate(tau, d, M, "async").makespan
    t_block = simulate(tau, d, M, "blocking").makespan
    assert t_async == pytest.approx(A.makespan_async(tau, d, M), rel=1e-9)
    assert t_block == pytest.approx(A.makespan_blocking(tau, d, M), rel=1e-9)
    assert t_async <= t_block * (1 + 1e-12)  # Cor 5
    assert simulate(tau, None, M).makespan == pytest.approx(A.makespan_free(tau, M), rel=1e-9)  # Thm 1


@settings(max_examples=60)
@given(chains())
def test_gpipe_bias_constant_in_M(chain: tuple[list[float], list[float], int]) -> None:
    tau, _, M = chain
    bias = A.homogeneity_bias(tau)
    for m in (1, M, M + 7):  # Cor 1 against the simulated free schedule
        assert A.makespan_gpipe(tau, m) - simulate(tau, None, m).makespan == pytest.approx(bias, abs=1e-9)


@settings(max_examples=40)
@given(chains())
def test_schedule_is_causal(chain: tuple[list[float], list[float], int]) -> None:
    tau, d, M = chain
    for regime in ("async", "blocking"):
        s = simulate(tau, d, M, regime)
        np.testing.assert_allclose(s.finish - s.start, s.tau)
        assert (s.start[:, 1:] >= s.send_finish - 1e-12).all()  # arrives before it starts
        assert (s.start[1:] >= s.release[:-1] - 1e-12).all()  # one micro-batch per stage
        assert (s.send_start >= s.finish[:, :-1] - 1e-12).all()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"regime": "sync"}, r"regime must be one of async, blocking, partial \(got 'sync'\)"),
        ({"regime": "partial"}, r"needs rho.*\(got None\)"),
        ({"regime": "async", "rho": 0.5}, r"rho applies only to regime 'partial' \(got rho=0.5"),
        ({"regime": "partial", "rho": 1.5}, r"rho must be in \[0, 1\] \(got 1.5\)"),
        ({"M": 0}, r"M must be an integer >= 1 \(got 0\)"),
        ({"d": [1]}, r"got 1: \[1.0\]"),
        ({"tau": [1, -1, 1]}, r"tau\[1\] .*got -1.0"),
    ],
)
def test_simulate_bad_input(kwargs: dict, match: str) -> None:
    args = {"tau": [1, 2, 3], "d": [0.1, 0.2], "M": 2, **kwargs}
    with pytest.raises(InputError, match=match):
        simulate(**args)
