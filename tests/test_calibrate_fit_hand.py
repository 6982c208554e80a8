"""Efficiency fit, tiny hand-computed cases: regimes.solve, row terms, identifiability, golden."""

from __future__ import annotations

import numpy as np
import pytest

from partitioner.calibrate import regimes
from partitioner.calibrate.fit import fit_efficiencies, row_terms, row_time
from partitioner.calibrate.timings import Timing
from partitioner.costs.roofline import Hardware, Shape
from partitioner.errors import InputError
from partitioner.models import catalog
from partitioner.models.cluster import resolve_gpu
from partitioner.models.llm import Architecture


def data(f, m, n, y, w=None) -> regimes.RowData:
    arr = lambda v: np.asarray(v, dtype=float)  # noqa: E731
    return regimes.RowData(arr(f), arr(m), arr(n), arr(y), arr(w if w is not None else [1.0] * len(y)))


def test_solve_recovers_both_regimes_and_overhead_exactly():
    # p = (a, b, c) = (0.01, 0.5, 0.1): t = max(0.01 f, 0.5 m) + 0.1 n, by hand:
    # (f=0,m=1,n=1) 0.6; (100,1,1) 1.1; (100,1,2) 1.2; (0,2,1) 1.1
    d = data([0, 100, 100, 0], [1, 1, 1, 2], [1, 1, 2, 1], [0.6, 1.1, 1.2, 1.1])
    sol = regimes.solve(d, lower=(0.001, 0.001, 0.0), default=(0.02, 0.7, 0.3))
    assert sol.p == pytest.approx((0.01, 0.5, 0.1), rel=1e-9)
    assert sol.status == ("fitted", "fitted", "fitted") and sol.objective < 1e-20


def test_no_compute_row_keeps_eta_compute_default():
    # memory rows only: y = 0.5 m + 0.1 -> (0.6, 1.1); a stays 0.2 (0.2·1 <= 0.5·1 keeps them memory-bound)
    d = data([1, 1], [1, 2], [1, 1], [0.6, 1.1])
    sol = regimes.solve(d, lower=(0.01, 0.01, 0.0), default=(0.2, 0.9, 0.3))
    assert sol.p == pytest.approx((0.2, 0.5, 0.1)) and sol.status == ("unidentified", "fitted", "fitted")


def test_unidentified_default_that_would_flip_a_row_is_clamped():
    # y = 0.5 m + 0.1 on m = 1, 2, 3 (f = 1): default a = 0.7 would make row 1 compute-bound
    # (0.7 > 0.5·1), so a drops to min b·m/f = 0.5
    d = data([1, 1, 1], [1, 2, 3], [1, 1, 1], [0.6, 1.1, 1.6])
    sol = regimes.solve(d, lower=(0.01, 0.01, 0.0), default=(0.7, 0.9, 0.3))
    assert sol.p == pytest.approx((0.5, 0.5, 0.1)) and sol.status[0] == "clamped"
    assert sol.objective < 1e-20


@pytest.mark.parametrize("c_default, b", [(0.1, 0.5), (0.2, 0.4)])
def test_overhead_collinear_with_bytes_keeps_its_default(c_default, b):
    # m ∝ n (1:1, 2:2) and y = 0.6 n: b + c = 0.6 is all the data say, so c keeps its default
    d = data([0, 0], [1, 2], [1, 2], [0.6, 1.2])
    sol = regimes.solve(d, lower=(0.01, 0.01, 0.0), default=(0.1, 0.9, c_default))
    assert sol.p[1:] == pytest.approx((b, c_default)) and sol.status[1:] == ("fitted", "unidentified")


def test_bounds_hold_eta_at_one_and_overhead_at_zero():
    # unconstrained b = 0.3, c = 0.1; with b >= 0.5 (eta <= 1) the best c is 0 (KKT, by hand)
    d = data([0, 0], [1, 2], [1, 1], [0.4, 0.7])
    sol = regimes.solve(d, lower=(0.01, 0.5, 0.0), default=(0.1, 0.9, 0.05))
    assert sol.p[1:] == pytest.approx((0.5, 0.0)) and sol.status[1:] == ("bound", "bound")


def test_objective_is_relative_and_weighted():
    d = data([0, 0], [1, 1], [0, 0], [1.0, 2.0], w=[3, 1])
    # prediction 1.5 both: rel errors +0.5, -0.25 -> 3·0.25 + 1·0.0625
    assert regimes.objective((0.0, 1.5, 0.0), d) == pytest.approx(0.8125)


TINY = Shape(L=2, h=4, i=8, H=2, kv=1, d=2, V=10)


def test_row_terms_by_hand():
    # layer params: attn 4·2·2 + 2·4·1·2 + 2·2·4 = 48, mlp 3·4·8 = 96, norms 8 -> 152
    # decode B=2, C=3, 2-byte dtypes: FLOPs 2·2·152 + 4·2·2·2·3 = 704;
    # bytes 2·152 + 2·3·(2·1·2·2) + 2·(2·1·2·2) = 304 + 48 + 16 = 368; the range 0-1 doubles both
    t = Timing("t4", "decoder", 0, 1, "decode", 2, 3, 1.0)
    assert row_terms(t, TINY, (2.0, 2.0, 2.0)) == (2 * 704.0, 2 * 368.0)
    # lm_head: 2·B·h·V = 160 FLOPs; bytes 2·(V·h + h) + B·V·2 = 88 + 40
    head = Timing("t4", "head", 0, 0, "decode", 2, 3, 1.0)
    assert row_terms(head, TINY, (2.0, 2.0, 2.0)) == (160.0, 128.0)
    embed = Timing("t4", "embed", 0, 0, "prefill", 2, 3, 1.0)  # T = 6 rows of h = 4, read and written
    assert row_terms(embed, TINY, (2.0, 2.0, 2.0)) == (0.0, 6 * 4 * 4.0)


def test_row_time_charges_overhead_per_layer():
    hw = Hardware(F=1e3, BW=1e3, eta_c=0.5, eta_m=1.0, t_fixed=0.25)
    assert row_time(1000.0, 100.0, 4, hw) == pytest.approx(2.0 + 4 * 0.25)


def _rows(device: str, hw: Hardware, shape: Shape, spec: list[tuple]) -> list[Timing]:
    out = []
    for kind, a, b, phase, B, T in spec:
        t = Timing(device, kind, a, b, phase, B, T, 1.0)
        f, m = row_terms(t, shape, (2.0, 2.0, 2.0))
        out.append(Timing(device, kind, a, b, phase, B, T, row_time(f, m, t.n_layers, hw)))
    return out


def test_decode_only_at_one_point_identifies_eta_memory_only():
    shape = Shape.of(Architecture.model_validate(catalog.require("models", "llama-3.2-1b")["architecture"]))
    base = Hardware.of(resolve_gpu("l4"))
    true = Hardware(base.F, base.BW, 0.5, 0.55, 2e-5)
    rows = _rows("l4", true, shape, [("decoder", 0, 0, "decode", 8, 1024), ("decoder", 1, 4, "decode", 8, 1024)])
    g = fit_efficiencies(rows, {"l4": ("l4", base)}, shape, (2.0, 2.0, 2.0)).gpus[0]
    assert g.status == ("unidentified", "fitted", "unidentified") and g.identified == ("eta_memory",)
    assert g.fitted.eta_c == base.eta_c and g.fitted.t_fixed == base.t_fixed  # defaults kept
    assert g.rms_after < 1e-12 < g.rms_before  # b absorbs the overhead: every row is one point
    assert any("eta_compute not identified (no row is compute-bound)" in n for n in g.notes)
    assert any("overhead_ms not identified" in n for n in g.notes)


def test_devices_of_one_gpu_type_pool_their_rows():
    shape = TINY
    hw = Hardware.of(resolve_gpu("t4"))
    rows = [Timing("a", "decoder", 0, 0, "decode", 1, 8, 1e-3), Timing("b", "decoder", 1, 1, "decode", 2, 8, 2e-3),
            Timing("c", "decoder", 0, 0, "decode", 1, 8, 1e-3)]
    fit = fit_efficiencies(rows, {"a": ("t4", hw), "b": ("t4", hw), "c": ("l4", Hardware.of(resolve_gpu("l4")))},
                           shape, (2.0, 2.0, 2.0))
    assert [(g.gpu, g.devices, g.rows) for g in fit.gpus] == [("t4", ("a", "b"), 2), ("l4", ("c",), 1)]
    assert [r.gpu for r in fit.rows] == ["t4", "t4", "l4"] and fit.for_device("b").gpu == "t4"
    assert set(fit.to_dict()) == {"gpus", "rows"} and fit.to_dict()["rows"][1]["layer"] == "1"


def test_fit_rejects_no_rows_and_two_specs_under_one_name():
    hw = Hardware.of(resolve_gpu("t4"))
    with pytest.raises(InputError, match=r"no timings to fit \(got 0 rows\)"):
        fit_efficiencies([], {}, TINY, (2.0, 2.0, 2.0))
    rows = [Timing("a", "embed", 0, 0, "decode", 1, 8, 1e-3), Timing("b", "embed", 0, 0, "decode", 1, 8, 1e-3)]
    other = Hardware(hw.F, hw.BW, 0.5, 0.5, 0.0)
    with pytest.raises(InputError, match=r"GPU type 'custom' has two different specs \(devices 'a' and 'b'\)"):
        fit_efficiencies(rows, {"a": ("custom", hw), "b": ("custom", other)}, TINY, (2.0, 2.0, 2.0))
    with pytest.raises(InputError, match=r"no GPU spec for device 'a'"):
        fit_efficiencies(rows, {}, TINY, (2.0, 2.0, 2.0))


# Golden: Helix (Thesys-lab/Helix-ASPLOS25 @148b7330, Apache-2.0), LLaMA-2-70B on one A100,
# simulator/model_manager/llama2_70b/a100/decode_bs2time.csv (batch -> ms per decoder layer):
# 8 -> 1.4, 20 -> 1.5, 40 -> 1.7, 60 -> 1.8; prompt_bs2time.csv (prompt tokens -> ms per layer):
# 2000 -> 14, 4000 -> 28, 8000 -> 56. Helix does not state the decode context; we assume 1024
# (as examples/models/llama2-70b-helix-profile.yaml does) and one sequence per prompt.
HELIX_A100_DECODE = [(8, 1.4), (20, 1.5), (40, 1.7), (60, 1.8)]
HELIX_A100_PROMPT = [(2000, 14.0), (4000, 28.0), (8000, 56.0)]


def test_golden_helix_a100_llama2_70b():
    shape = Shape.of(Architecture.model_validate(catalog.require("models", "llama-2-70b")["architecture"]))
    hw = Hardware.of(resolve_gpu("a100-40gb"))
    rows = ([Timing("a100-40gb", "decoder", 0, 0, "decode", B, 1024, ms / 1e3) for B, ms in HELIX_A100_DECODE]
            + [Timing("a100-40gb", "decoder", 0, 0, "prefill", 1, S, ms / 1e3) for S, ms in HELIX_A100_PROMPT])
    fit = fit_efficiencies(rows, {"a100-40gb": ("a100-40gb", hw)}, shape, (2.0, 2.0, 2.0))
    g = fit.gpus[0]
    assert all(abs(r.error) < 0.08 for r in fit.rows), [round(r.error, 3) for r in fit.rows]
    assert abs(fit.rows[0].predicted_fitted - 1.4e-3) < 0.08 * 1.4e-3  # the README's 1.4 ms, batch 8
    assert g.rms_after < 0.05 < g.rms_before  # the fit beats the catalogue defaults
    assert [r.regime for r in fit.rows] == ["memory"] * 4 + ["compute"] * 3
    # costmodel.md [S6]: measured torch bf16 GEMM / dense peak on an A100 is 0.79-0.85
    assert 0.79 <= g.fitted.eta_c <= 0.85
