"""`fit_overlap` by hand and against theory.md's published numbers (issue 6, "Overlap ratio").

Golden sources: theory.md Errors 3 (tau = [4, 5], d = [2], 50 % of each transfer overlapped:
slope 5.0, so §9's formula reports rho = 1.0; the linear slope(0.5) is 5.5) and Table 2 rows 2,
8 and 9 (T_async / T_block at M = 8 and 100, the *derived* value columns of theory.md).
"""

from __future__ import annotations

import json
import math

import pytest

from partitioner.analysis import effective_slope, first_latency
from partitioner.analysis.overlap import per_transfer_overlap, per_transfer_slope
from partitioner.calibrate.overlap import ADVICE_FLOOR, OverlapFit, advise, fit_overlap
from partitioner.errors import InputError

PAPER = [0.5, 1, 1, 5]


# --- golden: theory.md Errors 3 -------------------------------------------------------------


def test_errors3_example_rho_is_one_and_p_only_bounded() -> None:
    # T(M) = 11 + 5 (M-1): the per-transfer 50 % slope of Errors 3
    assert per_transfer_slope([4, 5], [2], 0.5) == 5.0
    assert effective_slope([4, 5], [2], 0.5) == 5.5
    fit = fit_overlap([4, 5], [2], [1, 10], [11.0, 56.0])
    assert fit.k == pytest.approx(5.0) and fit.b == pytest.approx(11.0)
    assert fit.rho == pytest.approx(1.0) and fit.rho_reason is None
    assert fit.p is None and fit.p_min == pytest.approx(0.5) and "any p >= 0.5" in (fit.p_reason or "")
    assert fit.recoverable == pytest.approx(0.0, abs=1e-12)
    assert fit.rebalance_headroom == pytest.approx(5 / 4.5 - 1)
    assert fit.advice_kind == "rebalance" and fit.warnings == ()


# --- golden: theory.md Table 2 ---------------------------------------------------------------


def test_table2_row9_midpoints_give_rho_half() -> None:
    # row 9: T_async 41/133, T_block 111/1123 at M = 8/100; midpoints 76/628
    tau, d = [1, 1, 1, 1], [10, 10, 10]
    fit = fit_overlap(tau, d, [8, 100], [76.0, 628.0])
    assert (fit.tau_max, fit.sigma_max) == (1.0, 11.0)
    assert fit.k == pytest.approx(6.0) and fit.b == pytest.approx(34.0) and fit.first_latency == 34.0
    assert fit.rho == pytest.approx(0.5) and fit.p == pytest.approx(0.5) and fit.p_min is None
    assert fit.recoverable == pytest.approx(5.0) and fit.rebalance_headroom == 0.0
    assert [(p.T_async, p.T_block) for p in fit.points] == [(41.0, 111.0), (133.0, 1123.0)]
    assert all(p.inside for p in fit.points) and fit.r2 is None
    assert fit.advice_kind == "communication" and fit.binding_links == (0, 1, 2) and fit.first_binding_link == 0
    assert "0->1, 1->2, 2->3" in fit.advice and "500.0%" in fit.advice


@pytest.mark.parametrize(("Ts", "rho", "k"), [((48.0, 517.2), 0.0, 5.1), ((47.3, 507.3), 1.0, 5.0)])
def test_table2_row8_block_and_async_ends(Ts: tuple[float, float], rho: float, k: float) -> None:
    fit = fit_overlap(PAPER, [4.6, 0.1, 0.1], [8, 100], list(Ts))
    assert fit.rho == pytest.approx(rho, abs=1e-9) and fit.k == pytest.approx(k)
    assert fit.b == pytest.approx(12.3) and fit.slope_in_range
    assert fit.recoverable == pytest.approx((1 - rho) * 0.1 / 5)
    assert fit.rebalance_headroom == pytest.approx(5 / 1.875 - 1)  # 166.7 %
    assert fit.advice_kind == "rebalance" and "166.7%" in fit.advice
    if rho == 0.0:
        assert fit.p == pytest.approx(0.0, abs=1e-9)  # link 0: 1 - (5.1 - 0.5)/4.6 = 0
    else:
        assert fit.p is None and fit.p_min == pytest.approx(1 - 4.5 / 4.6)  # link 0: slack 4.5, d_0 4.6


def test_table2_row2_rho_undefined_but_fit_reported() -> None:
    fit = fit_overlap(PAPER, None, [8, 100], [42.5, 502.5])
    assert fit.rho is None
    assert fit.rho_reason == "sigma_max = tau_max = 5: no link binds, T_async = T_block for every M"
    assert fit.k == pytest.approx(5.0) and fit.b == pytest.approx(7.5) and fit.slope_in_range
    assert fit.p is None and fit.p_min is None and "no link has d_s > 0" in (fit.p_reason or "")
    assert fit.recoverable == 0.0 and all(p.inside for p in fit.points) and fit.warnings == ()
    assert fit.to_dict()["rho"] is None


# --- tiny hand-computed ----------------------------------------------------------------------


def test_three_points_least_squares_by_hand() -> None:
    # x = M-1 = 0,1,2; T = 10,12,17: Sxy = 7, Sxx = 2 -> k = 3.5, b = 13 - 3.5 = 9.5
    fit = fit_overlap([1, 1], [10], [1, 2, 3], [10.0, 12.0, 17.0])
    assert fit.k == pytest.approx(3.5) and fit.b == pytest.approx(9.5)
    assert [p.fitted for p in fit.points] == pytest.approx([9.5, 13.0, 16.5])
    assert [p.residual for p in fit.points] == pytest.approx([0.5, -1.0, 0.5])
    assert fit.r2 == pytest.approx(1 - 1.5 / 26)
    assert fit.rho == pytest.approx(0.75) and fit.p == pytest.approx(0.75)  # (11-3.5)/10; 1-(3.5-1)/10
    assert fit.intercept_diff == pytest.approx(-2.5) and fit.intercept_rel == pytest.approx(-2.5 / 12)
    # T_async = 12, 13, 14; T_block = 12, 23, 34: M = 1 and 2 lie below T_async
    assert [p.inside for p in fit.points] == [False, False, True]
    assert len(fit.warnings) == 1 and fit.warnings[0].startswith("2 of 3 measurements lie outside")


def test_repeated_M_is_averaged() -> None:
    fit = fit_overlap([1, 1], [10], [2, 2, 4], [14.0, 16.0, 27.0])  # mean 15 at M = 2 -> k = 6
    # x = 1, 1, 3: Sxy = 16, Sxx = 8/3; fitted 15, 15, 27; ss_res = 2, ss_tot = 98
    assert fit.k == pytest.approx(6.0) and fit.b == pytest.approx(9.0) and fit.rho == pytest.approx(0.5)
    assert fit.r2 == pytest.approx(96 / 98)


def test_slope_above_sigma_max_warns_and_clips_p() -> None:
    fit = fit_overlap(PAPER, [4.6, 0.1, 0.1], [8, 100], [47.0, 530.0])  # k = 5.25 > sigma_max 5.1
    assert fit.rho == pytest.approx(-1.5) and not fit.slope_in_range
    assert fit.p == 0.0 and fit.recoverable == pytest.approx(0.05)
    assert "outside [tau_max, sigma_max] = [5, 5.1]" in fit.warnings[0] and "§10(ii)" in fit.warnings[0]
    assert fit.warnings[1].startswith("2 of 2 measurements")


def test_slope_below_tau_max_warns_rho_above_one() -> None:
    fit = fit_overlap([1, 1], [10], [1, 11], [12.0, 17.0])  # k = 0.5 < tau_max = 1
    assert fit.rho == pytest.approx(1.05) and not fit.slope_in_range
    assert fit.p is None and fit.p_min == pytest.approx(1.0)  # slack 0 on link 0: only p = 1 fits
    assert fit.recoverable == pytest.approx(-0.5) and fit.advice_kind == "limit"  # (1-1.05)*10/1


def test_undefined_rho_with_wrong_slope_still_warns() -> None:
    fit = fit_overlap(PAPER, None, [1, 3], [7.5, 18.5])  # k = 5.5 although sigma_max = tau_max = 5
    assert fit.rho is None and not fit.slope_in_range and "rho = undefined" in fit.warnings[0]


def test_single_stage_has_no_links() -> None:
    fit = fit_overlap([3], None, [1, 5], [3.0, 15.0])
    assert fit.d == () and fit.rho is None and fit.p is None
    assert fit.binding_links == () and fit.first_binding_link is None
    assert fit.advice_kind == "limit" and "at its limit" in fit.advice


def test_sandwich_tolerance_accepts_rounding_only() -> None:
    ok = fit_overlap([1, 1, 1, 1], [10, 10, 10], [8, 100], [41.0 * (1 - 1e-7), 133.0])
    assert ok.points[0].inside
    bad = fit_overlap([1, 1, 1, 1], [10, 10, 10], [8, 100], [41.0 * (1 - 1e-4), 133.0])
    assert not bad.points[0].inside


def test_to_dict_is_json_and_complete() -> None:
    fit = fit_overlap([1, 1, 1, 1], [10, 10, 10], [8, 100, 50], [76.0, 628.0, 350.0])
    data = json.loads(json.dumps(fit.to_dict()))
    assert set(data) == set(OverlapFit.__dataclass_fields__)
    assert data["binding_links"] == [0, 1, 2] and data["tau"] == [1, 1, 1, 1]
    assert data["points"][2] == {**data["points"][2], "M": 50, "T": 350.0, "inside": True}
    assert 0 < data["r2"] < 1 and data["warnings"] == []
    with pytest.raises(AttributeError):
        fit.k = 1.0  # type: ignore[misc]


# --- advice: a deterministic function of the numbers -------------------------------------------


def test_advice_limit_when_both_small() -> None:
    kind, text = advise(0.005, ADVICE_FLOOR * 0.99, (0,), 0)
    assert kind == "limit" and "0.5%" in text and "both < 1%" in text


def test_advice_negative_headroom_counts_as_zero() -> None:
    assert advise(-0.3, -0.1, (), None)[0] == "limit"


def test_advice_communication_names_links_and_first() -> None:
    kind, text = advise(0.2, 0.1, (1,), 0)
    assert kind == "communication"
    assert "20.0%" in text and "10.0%" in text and "Cor 4): 1->2." in text
    assert "(Errors 1): 0->1 (not binding yet)." in text
    assert advise(0.2, 0.1, (0, 1), 0)[1].endswith("(Errors 1): 0->1.")


def test_advice_rebalance_wins_ties() -> None:
    kind, text = advise(0.1, 0.1, (0,), 0)
    assert kind == "rebalance" and "`partition plan`" in text


# --- error paths (pure API) ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("Ms", "Ts", "message"),
    [
        ([4], [20.0], r"^need at least two measurements at two distinct M \(got 1: M=4\)$"),
        ([], [], r"\(got 0: none\)"),
        ([4, 4], [20.0, 21.0], r"^need measurements at two distinct M \(got 2, all at M=4\)$"),
        ([4, 5], [20.0], r"as many makespans as M values \(got 2 M, 1 T\)"),
        ([0, 5], [20.0, 25.0], r"M must be an integer >= 1 \(got 0\)"),
        ([True, 5], [20.0, 25.0], r"M must be an integer >= 1 \(got True\)"),
        ([2.5, 5], [20.0, 25.0], r"got 2.5"),
        ([4, 5], [20.0, -1.0], r"> 0 \(got T=-1.0 at M=5\)"),
        ([4, 5], [0.0, 25.0], r"got T=0.0 at M=4"),
        ([4, 5], [math.nan, 25.0], r"got T=nan"),
        ([4, 5], ["20", 25.0], r"got T='20'"),
    ],
)
def test_bad_measurements(Ms: list, Ts: list, message: str) -> None:
    with pytest.raises(InputError, match=message):
        fit_overlap([4, 5], [2], Ms, Ts)


@pytest.mark.parametrize(
    ("tau", "d", "message"),
    [
        ([4, 5], [2, 3], r"d must hold S-1 = 1 link latencies .*got 2"),
        ([4, -5], [2], r"tau\[1\] must be finite and >= 0 \(got -5.0\)"),
        ([4, 5], [-2], r"d\[0\] must be finite and >= 0"),
        ([], None, r"tau must hold at least one stage time"),
    ],
)
def test_bad_tau_or_d(tau: list, d: list | None, message: str) -> None:
    with pytest.raises(InputError, match=message):
        fit_overlap(tau, d, [2, 4], [10.0, 20.0])


# --- the per-transfer helpers added to partitioner.analysis.overlap ---------------------------


def test_per_transfer_slope_by_hand() -> None:
    assert per_transfer_slope([4, 5], [2], 0.0) == 6.0
    assert per_transfer_slope([4, 5], [2], 1.0) == 5.0
    assert per_transfer_slope([1, 1, 1, 1], [10, 10, 10], 0.5) == 6.0
    assert per_transfer_slope([3]) == 3.0
    assert per_transfer_slope([4, 5], [2], 0.25) <= effective_slope([4, 5], [2], 0.25)


def test_per_transfer_overlap_inverse_and_bound() -> None:
    assert per_transfer_overlap(6.0, [1, 1], [10]) == (pytest.approx(0.5), True)
    assert per_transfer_overlap(5.0, [4, 5], [2]) == (pytest.approx(0.5), False)
    assert per_transfer_overlap(5.0, [0.5, 1, 1, 5], [0.1, 0.1, 0.1]) == (0.0, False)
    assert per_transfer_overlap(99.0, [4, 5], [2]) == (0.0, True)  # beyond sigma_max: clipped


@pytest.mark.parametrize(
    ("k", "d", "message"),
    [(5.0, [0.0], r"needs a link with d_s > 0 \(got d = \[0.0\]\)"), (math.inf, [2.0], r"finite .*got inf")],
)
def test_per_transfer_overlap_errors(k: float, d: list[float], message: str) -> None:
    with pytest.raises(InputError, match=message):
        per_transfer_overlap(k, [4, 5], d)


def test_first_latency_is_the_intercept_reference() -> None:
    assert fit_overlap(PAPER, [4.6, 0.1, 0.1], [8, 100], [48.0, 517.2]).first_latency == first_latency(
        PAPER, [4.6, 0.1, 0.1]
    )
