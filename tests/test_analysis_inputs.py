"""Every invalid-input path of partitioner.analysis raises InputError quoting the value (issue 2)."""

from __future__ import annotations

import numpy as np
import pytest

from partitioner import analysis as A
from partitioner.errors import InputError, PartitionerError


@pytest.mark.parametrize(
    ("tau", "match"),
    [
        ([], r"at least one stage time \(got \[\]\)"),
        ([1, -0.5], r"tau\[1\] must be finite and >= 0 \(got -0.5\)"),
        ([1, float("nan")], r"tau\[1\] .* \(got nan\)"),
        ([float("inf")], r"tau\[0\] .* \(got inf\)"),
        ([0, 0], r"positive stage time \(got \[0.0, 0.0\]\)"),
        ("1,2", r"not a string \(got '1,2'\)"),
        ([[1, 2]], r"1 dimension"),
        (["a"], r"must be numbers \(got \['a'\]\)"),
    ],
)
def test_bad_tau(tau: object, match: str) -> None:
    with pytest.raises(InputError, match=match):
        A.makespan_async(tau, None, 1)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("d", "match"),
    [
        ([1, 2], r"S-1 = 3 link latencies for S = 4 stages \(got 2: \[1.0, 2.0\]\)"),
        ([1, 2, 3, 4], r"got 4"),
        ([1, -2, 3], r"d\[1\] must be finite and >= 0 \(got -2.0\)"),
        ([1, 2, float("inf")], r"d\[2\] .* \(got inf\)"),
    ],
)
def test_bad_d(d: object, match: str) -> None:
    with pytest.raises(InputError, match=match):
        A.makespan_blocking([0.5, 1, 1, 5], d, 1)  # type: ignore[arg-type]


@pytest.mark.parametrize("M", [0, -3, 2.5, 8.0, True, "8", None])
def test_bad_M(M: object) -> None:
    with pytest.raises(InputError, match=rf"M must be an integer >= 1 \(got {M!r}\)"):
        A.makespan_async([1, 2], None, M)  # type: ignore[arg-type]


def test_numpy_integer_M_is_accepted() -> None:
    assert A.makespan_free([1, 2], np.int64(3)) == 7


@pytest.mark.parametrize("rho", [-0.01, 1.01, float("inf")])
def test_bad_rho(rho: float) -> None:
    with pytest.raises(InputError, match=rf"rho must be .*\(got {rho!r}\)"):
        A.analyze([1, 2], [0], 2, rho)


def test_input_error_is_a_value_error_and_partitioner_error() -> None:
    with pytest.raises(ValueError):
        A.tau_max([])
    with pytest.raises(PartitionerError):
        A.tau_max([])
