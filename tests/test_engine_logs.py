"""The KV pool against public vLLM / SGLang start-up logs (tests/data/engine_logs.yaml).

Each row's prediction uses only its settings and model shapes (partitioner.calibrate.engine_logs);
the engine's measured memory constants come from the `fit` rows, the rest are held out. vLLM before
0.6.4 sized its pool by another rule (free memory before minus after the profile run, which counts
allocator and NCCL memory); on those rows the model is an upper bound, not a prediction.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from partitioner.calibrate.engine_logs import fit_constants, in_scope, load_rows, predict, version_tuple
from partitioner.models.engines import resolve_engine

CORPUS = Path(__file__).resolve().parent / "data" / "engine_logs.yaml"
ROWS = load_rows(CORPUS)


def _within(rows, tol: float = 0.20) -> float:
    scored = [abs(predict(r).error) <= tol for r in rows if predict(r).logged > 0]
    return sum(scored) / len(scored)


def test_the_corpus_names_its_sources_and_covers_tp_pp_and_mixed_gpus():
    assert all(r.source.startswith("https://github.com/") for r in ROWS)
    assert {r.engine for r in ROWS} == {"vllm", "sglang"}
    assert any(r.tp > 1 for r in ROWS) and any(r.pp > 1 for r in ROWS)
    assert any(len(set(r.gpus)) > 1 for r in ROWS)  # a mixed-GPU pipeline
    assert {r.split for r in ROWS} == {"fit", "test"}


def test_shipped_constants_are_the_fit_rows_own():
    """The constants in presets/engines.yaml come from the fit rows (never tuned on test rows)."""
    shipped = resolve_engine("vllm").memory or {}
    for key, value in fit_constants(ROWS).items():
        assert shipped[key] == pytest.approx(value, abs=0.006), key


def test_pool_within_20_percent_on_modelled_rows():
    """vLLM >= 0.6.4 and SGLang: 11 of 13 rows within ±20 %, the held-out ones 8 of 10. The two
    misses are V1 engines (Llama-3.1-8B on an L40S under 0.8.5, +26 %; Qwen3-235B-FP8 at TP 4 under
    0.9, +45 %), whose start-up counts memory beyond the profiled activations and the sampler
    (vllm/v1/worker/gpu_worker.py `determine_available_memory`, v0.8.5, adds everything the device
    holds beyond torch's current allocation)."""
    modelled = [r for r in ROWS if in_scope(r)]
    assert _within(modelled) >= 11 / 13 >= 0.8
    assert _within([r for r in modelled if r.split == "test"]) >= 8 / 10  # held out


def test_share_within_20_percent_over_every_row_with_a_logged_pool():
    """The issue's criterion over ALL rows (old vLLM included) is not met: 13 of 20 rows whose log
    gives a pool are within ±20 %. The seven vLLM < 0.6.4 rows hold five misses (their four TP or PP
    rows, +38 % to +771 %, and one TP 1 row at +20.9 %), the modelled versions two (above). This
    floor keeps the measured share from sliding; benchmarks/engine_logs.py prints the count."""
    pooled = [r for r in ROWS if predict(r).logged > 0]
    assert len(ROWS) >= 21 and len(pooled) >= 20
    assert _within(pooled) >= 13 / 20


def test_refusals_agree_with_the_engine():
    """The engine refused to start (pool below one max_model_len request, or no memory) exactly
    where the model refuses."""
    for r in ROWS:
        if in_scope(r):
            assert predict(r).refused == bool(r.logged.get("refused", 0)), r.id


def test_before_the_modelled_rule_the_model_is_an_upper_bound():
    old = [r for r in ROWS if not in_scope(r)]
    assert old and all(version_tuple(r.version) < (0, 6, 4) for r in old)
    assert all(predict(r).predicted >= predict(r).logged for r in old)


def test_logged_weights_match_the_shapes_within_3_percent():
    """The weights term alone, where the log gives it (dense 16-bit checkpoints)."""
    checked = 0
    for r in ROWS:
        if "weights_gib" in r.logged and r.weights in ("bf16", "fp16") and r.pp == 1:
            worst = min(predict(r).stages, key=lambda m: m.kv_tokens or 0)
            assert worst.weights / 2**30 == pytest.approx(r.logged["weights_gib"], rel=0.03), r.id
            checked += 1
    assert checked >= 4
