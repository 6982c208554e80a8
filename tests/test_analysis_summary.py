"""`analyze()` collects every quantity under the JSON names of issue 2."""

from __future__ import annotations

import dataclasses
import json

import pytest

from partitioner.analysis import Analysis, analyze

ISSUE_KEYS = (
    "S M tau d tau_max sigma_max T_free T_async T_block T_gpipe homogeneity_bias full_bias "
    "phase_transition overlap_gap effective_slope asymptotic_throughput_async "
    "asymptotic_throughput_blocking crossover_batches"
).split()


def test_row8_summary() -> None:
    a = analyze([0.5, 1, 1, 5], [4.6, 0.1, 0.1], M=8, rho=0.8)
    assert (a.S, a.M, a.tau, a.d) == (4, 8, (0.5, 1.0, 1.0, 5.0), (4.6, 0.1, 0.1))
    assert a.T_async == pytest.approx(47.3) and a.T_block == pytest.approx(48.0)
    assert a.T_free == pytest.approx(42.5) and a.T_gpipe == pytest.approx(55)
    assert a.T_real == pytest.approx(48.0 - 0.8 * 0.7)
    assert a.effective_slope == pytest.approx(5.02)
    assert a.phase_transition is True and a.binding_links == (0,)
    assert a.first_binding_link == 1 and a.slack == (4.5, 4.0, 4.0)
    assert a.overlap_gap == pytest.approx(0.7) and a.crossover_batches == pytest.approx(3.46)
    assert a.gpipe_error == pytest.approx((55 - 47.3) / 47.3)
    assert a.full_bias == pytest.approx(7.7) and a.first_latency == pytest.approx(12.3)
    assert a.asymptotic_throughput_blocking == pytest.approx(1 / 5.1)


def test_to_dict_is_json_ready_with_issue_keys() -> None:
    out = analyze([2.0], None, 3).to_dict()
    assert set(ISSUE_KEYS) <= set(out)
    assert set(out) == {f.name for f in dataclasses.fields(Analysis)}
    assert out["d"] == [] and out["first_binding_link"] is None and out["binding_links"] == []
    assert json.loads(json.dumps(out)) == out
    assert all(type(v) in (int, float, bool, list, type(None)) for v in out.values())


def test_analysis_is_frozen() -> None:
    a = analyze([1, 2])
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.M = 3  # type: ignore[misc]
