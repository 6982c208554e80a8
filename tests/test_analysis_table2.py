"""theory.md Table 2: the eleven validation configurations, closed forms and simulator.

Value columns are *derived* in theory.md (A = sum tau + sum d, T_async, T_block, bias, T_c)."""

from __future__ import annotations

import pytest

from partitioner import analysis as A
from partitioner.simulate import simulate

TC_ROWS_2_8 = (20, 55, 515)
# (#, tau, d, A, tau_max, sigma_max, transition, bias, T_async M=1/8/100, T_block M=8/100, T_c M=1/8/100)
TABLE_2 = [
    (1, [1, 1, 1, 1], [0, 0, 0], 4, 1, 1, False, 0, (4, 11, 103), (11, 103), (4, 11, 103)),
    (2, [0.5, 1, 1, 5], [0, 0, 0], 7.5, 5, 5, False, 12.5, (7.5, 42.5, 502.5), (42.5, 502.5), TC_ROWS_2_8),
    (3, [5, 1, 1, 0.5], [0, 0, 0], 7.5, 5, 5, False, 12.5, (7.5, 42.5, 502.5), (42.5, 502.5), TC_ROWS_2_8),
    (4, [1, 5, 1, 1], [0, 0, 0], 8, 5, 5, False, 12, (8, 43, 503), (43, 503), TC_ROWS_2_8),
    (5, [1, 1, 5, 5], [0, 0, 0], 12, 5, 5, False, 8, (12, 47, 507), (47, 507), TC_ROWS_2_8),
    (6, [0.5, 1, 1, 5], [0.1, 0.1, 0.1], 7.8, 5, 5, False, 12.5, (7.8, 42.8, 502.8), (42.8, 502.8), TC_ROWS_2_8),
    (7, [0.5, 1, 1, 5], [4, 0.1, 0.1], 11.7, 5, 5, False, 12.5, (11.7, 46.7, 506.7), (46.7, 506.7), TC_ROWS_2_8),
    (8, [0.5, 1, 1, 5], [4.6, 0.1, 0.1], 12.3, 5, 5.1, True, 12.5, (12.3, 47.3, 507.3), (48.0, 517.2), TC_ROWS_2_8),
    (9, [1, 1, 1, 1], [10, 10, 10], 34, 1, 11, True, 0, (34, 41, 133), (111, 1123), (4, 11, 103)),
    (10, [0.5] * 4, [1, 0.01, 1], 4.01, 0.5, 1.5, True, 0, (4.01, 7.51, 53.51), (14.51, 152.51), (2, 5.5, 51.5)),
    (11, [0.2, 0.3, 0.5, 0.9, 1.7], [0.1, 0.1, 0.1, 0.9], 4.8, 1.7, 1.8, True, 4.9,
     (4.8, 16.7, 173.1), (17.4, 183.0), (8.5, 20.4, 176.8)),
]
IDS = [f"row{r[0]}" for r in TABLE_2]


@pytest.mark.parametrize("row", TABLE_2, ids=IDS)
def test_table_2_closed_forms(row: tuple) -> None:
    _, tau, d, fill, t_max, s_max, trans, bias, t_async, t_block, t_c = row
    assert A.first_latency(tau, d) == pytest.approx(fill)
    assert A.tau_max(tau) == t_max
    assert A.sigma_max(tau, d) == pytest.approx(s_max)
    assert A.phase_transition(tau, d) is trans
    assert A.homogeneity_bias(tau) == pytest.approx(bias, abs=1e-12)
    for M, want in zip((1, 8, 100), t_async):
        assert A.makespan_async(tau, d, M) == pytest.approx(want)
    assert A.makespan_blocking(tau, d, 1) == pytest.approx(t_async[0])
    for M, want in zip((8, 100), t_block):
        assert A.makespan_blocking(tau, d, M) == pytest.approx(want)
    for M, want in zip((1, 8, 100), t_c):
        assert A.makespan_gpipe(tau, M) == pytest.approx(want)


@pytest.mark.parametrize("row", TABLE_2, ids=IDS)
def test_table_2_simulated(row: tuple) -> None:
    # App. C: checked for M in {1,2,4,8,16,32,100}, both regimes, "max relative error < 1e-9"
    _, tau, d, *_ = row
    for M in (1, 2, 4, 8, 16, 32, 100):
        assert simulate(tau, d, M, "async").makespan == pytest.approx(A.makespan_async(tau, d, M), rel=1e-9)
        assert simulate(tau, d, M, "blocking").makespan == pytest.approx(A.makespan_blocking(tau, d, M), rel=1e-9)


def test_table_2_gpipe_under_and_over_estimates() -> None:
    # "In rows 9-10 T_c underestimates (Cor 3); in row 8 at M = 100, T_block exceeds T_c."
    for _, tau, d, *_ in (TABLE_2[8], TABLE_2[9]):
        assert A.full_bias(tau, d) < 0
        assert A.gpipe_relative_error(tau, d, 8) < 0
    _, tau, d, *_ = TABLE_2[7]
    assert A.makespan_blocking(tau, d, 100) > A.makespan_gpipe(tau, 100)
