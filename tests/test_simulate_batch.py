"""`simulate_batch`: N configurations at once agree with `simulate` and the closed forms."""

from __future__ import annotations

import numpy as np
import pytest

from partitioner import analysis as A
from partitioner.errors import InputError
from partitioner.simulate import simulate, simulate_batch


def _configs(seed: int, N: int, S: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    tau = 10 ** rng.uniform(-1, 1, (N, S))
    return tau, rng.uniform(0.01, 20, (N, S - 1)) * tau[:, :-1]


@pytest.mark.parametrize("S", [1, 2, 4, 8])
def test_batch_matches_closed_forms(S: int) -> None:
    tau, d = _configs(S, 200, S)
    for M in (1, 7, 50):
        np.testing.assert_allclose(simulate_batch(tau, d, M, "async"), A.makespan_async_batch(tau, d, M), rtol=1e-12)
        np.testing.assert_allclose(
            simulate_batch(tau, d, M, "blocking"), A.makespan_blocking_batch(tau, d, M), rtol=1e-12
        )


def test_batch_with_per_config_M() -> None:
    tau, d = _configs(1, 30, 3)
    M = np.arange(1, 31)
    np.testing.assert_allclose(simulate_batch(tau, d, M, "blocking"), A.makespan_blocking_batch(tau, d, M))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"regime": "partial", "rho": 0.3},
        {"serial_links": True},
        {"buffer": 1},
        {"regime": "blocking", "buffer": [0, 2, None]},
        {"serial_links": True, "buffer": 0, "regime": "partial", "rho": 0.7},
    ],
)
def test_batch_matches_single_simulate_with_extensions(kwargs: dict) -> None:
    tau, d = _configs(2, 12, 4)
    got = simulate_batch(tau, d, 9, **kwargs)
    want = [simulate(tau[i], d[i], 9, **kwargs).makespan for i in range(12)]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_batch_link_occupancy() -> None:
    tau, d = _configs(3, 10, 3)
    occ = d / 2
    got = simulate_batch(tau, d, 6, serial_links=True, link_occupancy=occ)
    want = [simulate(tau[i], d[i], 6, serial_links=True, link_occupancy=occ[i]).makespan for i in range(10)]
    np.testing.assert_allclose(got, want)
    with pytest.raises(InputError, match=r"link_occupancy must be <= d"):
        simulate_batch(tau, d, 6, serial_links=True, link_occupancy=d * 2)
    with pytest.raises(InputError, match=r"needs serial_links=True"):
        simulate_batch(tau, d, 6, link_occupancy=occ)


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        (([[1, 2]], [[1]], 0), {}, r"M must be an integer >= 1 \(got 0\)"),
        (([[1, 2]], [[1, 2]], 1), {}, r"shape \(N, S-1\)"),
        (([[1, 2]], [[1]], 1), {"regime": "fast"}, r"got 'fast'"),
        (([[1, 2]], [[1]], 1), {"buffer": -2}, r"got -2"),
    ],
)
def test_batch_bad_input(args: tuple, kwargs: dict, match: str) -> None:
    with pytest.raises(InputError, match=match):
        simulate_batch(*args, **kwargs)
