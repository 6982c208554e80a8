"""Vectorised closed forms agree row by row with the scalar ones; batch shape errors."""

from __future__ import annotations

import numpy as np
import pytest

from partitioner import analysis as A
from partitioner.errors import InputError


def _configs(seed: int, N: int, S: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    tau = 10 ** rng.uniform(-1, 1, (N, S))
    return tau, rng.uniform(0.01, 20, (N, S - 1)) * tau[:, :-1]


@pytest.mark.parametrize("S", [1, 2, 5])
def test_batch_equals_scalar(S: int) -> None:
    tau, d = _configs(S, 25, S)
    M = np.arange(1, 26)
    cases = [
        (A.makespan_async_batch(tau, d, M), lambda i: A.makespan_async(tau[i], d[i], int(M[i]))),
        (A.makespan_blocking_batch(tau, d, M), lambda i: A.makespan_blocking(tau[i], d[i], int(M[i]))),
        (A.makespan_free_batch(tau, M), lambda i: A.makespan_free(tau[i], int(M[i]))),
        (A.makespan_gpipe_batch(tau, M), lambda i: A.makespan_gpipe(tau[i], int(M[i]))),
        (A.sigma_max_batch(tau, d), lambda i: A.sigma_max(tau[i], d[i])),
        (A.tau_max_batch(tau), lambda i: A.tau_max(tau[i])),
        (A.homogeneity_bias_batch(tau), lambda i: A.homogeneity_bias(tau[i])),
    ]
    for got, want in cases:
        assert got.shape == (25,)
        np.testing.assert_allclose(got, [want(i) for i in range(25)], rtol=1e-12)


def test_batch_scalar_M_and_default_d() -> None:
    tau = np.array([[0.5, 1, 1, 5], [1, 1, 1, 1]])
    np.testing.assert_allclose(A.makespan_async_batch(tau, None, 8), [42.5, 11])
    np.testing.assert_allclose(A.makespan_gpipe_batch(tau, 8), [55, 11])
    np.testing.assert_allclose(A.sigma_batch(tau, [[4.6, 0.1, 0.1], [0, 0, 0]])[0], [5.1, 1.1, 1.1, 5])


@pytest.mark.parametrize(
    ("tau", "d", "M", "match"),
    [
        ([1, 2], None, 1, r"2 dimension"),
        (np.zeros((0, 3)), None, 1, r"N, S >= 1 \(got \(0, 3\)\)"),
        ([[1, 2], [0, 0]], None, 1, r"tau\[1\] needs a positive stage time \(got \[0.0, 0.0\]\)"),
        ([[1, -2]], None, 1, r"tau\[\[0, 1\]\] must be finite and >= 0 \(got -2.0\)"),
        ([[1, 2]], [[1, 2]], 1, r"shape \(N, S-1\) = \(1, 1\) \(got \(1, 2\)\)"),
        ([[1, 2]], [[np.nan]], 1, r"got nan"),
        ([[1, 2], [1, 2]], None, [1, 0], r"M must be >= 1 \(got 0 in M\)"),
        ([[1, 2], [1, 2]], None, [1.5, 2.0], r"integer array of shape \(2,\)"),
        ([[1, 2], [1, 2]], None, [1, 2, 3], r"integer array of shape \(2,\)"),
        ([[1, 2]], None, 0, r"M must be an integer >= 1 \(got 0\)"),
        ([[1, 2]], None, True, r"got True"),
    ],
)
def test_batch_bad_input(tau: object, d: object, M: object, match: str) -> None:
    with pytest.raises(InputError, match=match):
        A.makespan_async_batch(tau, d, M)
