"""The KV pool against public vLLM / SGLang start-up logs (tests/data/engine_logs.yaml).

Each row's prediction uses only its settings and model shapes (partitioner.calibrate.engine_logs)
and the rule its vLLM release sized the pool by (presets/engines.yaml `pool_rules`); the engine's
measured memory constants come from the `fit` rows, the rest are held out.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from partitioner.calibrate.engine_logs import fit_constants, load_rows, predict
from partitioner.costs.kvpool import version_tuple
from partitioner.models.engines import pool_rule, resolve_engine

CORPUS = Path(__file__).resolve().parent / "data" / "engine_logs.yaml"
ROWS = load_rows(CORPUS)


def _within(rows, tol: float = 0.20) -> float:
    scored = [abs(predict(r).error) <= tol for r in rows if predict(r).logged > 0]
    return sum(scored) / len(scored)


def test_the_corpus_names_its_sources_and_covers_tp_pp_and_mixed_gpus():
    assert all(r.source.startswith(("https://github.com/", "https://docs.sglang.ai/")) for r in ROWS)
    assert {r.engine for r in ROWS} == {"vllm", "sglang"}
    assert any(r.tp > 1 for r in ROWS) and any(r.pp > 1 for r in ROWS)
    assert any(len(set(r.gpus)) > 1 for r in ROWS)  # a mixed-GPU pipeline
    assert {r.split for r in ROWS} == {"fit", "test"}


def test_shipped_constants_are_the_fit_rows_own():
    """The constants in presets/engines.yaml come from the fit rows (never tuned on test rows)."""
    shipped = resolve_engine("vllm").memory or {}
    for key, value in fit_constants(ROWS).items():
        assert shipped[key] == pytest.approx(value, abs=0.006), key


def test_pool_within_20_percent_over_every_row_with_a_logged_pool():
    """The issue's criterion: >= 80 % of the rows whose log gives a pool are within ±20 %, over all
    rows (37 of 44) and over the held-out rows alone (34 of 41); benchmarks/engine_logs.py prints
    the table. The misses: PR 6920's two PP-8 launches (vLLM 0.5.3 logged about 7 GiB more non-KV
    memory per worker than its source allocates), the T4 TP-2 row of 0.4, Qwen2.5-72B at TP 2 on
    0.19 (a 3 GiB pool: 1.5 GiB of NCCL memory off is -26 %), the V1 rows of 0.8.5 on an L40S
    (+26 %) and of 0.9 with an LMCache connector (+45 %), and the 16k-context row of 0.2.0 (+22 %)."""
    pooled = [r for r in ROWS if predict(r).logged > 0]
    assert len(ROWS) >= 30 and len(pooled) >= 44
    assert _within(pooled) >= 0.8
    held_out = [r for r in pooled if r.split == "test"]
    assert len(held_out) >= 41 and _within(held_out) >= 0.8


def test_the_corpus_covers_pp_tp_and_mixed_rows_of_current_engines():
    """Mostly what users run: vLLM >= 0.6.4 (V1 from 0.8) and SGLang, with PP, TP and mixed-GPU rows."""
    modern = [r for r in ROWS if r.engine == "sglang" or (r.version and version_tuple(r.version) >= (0, 6, 4))]
    assert len(modern) >= 0.6 * len(ROWS)
    assert sum(r.pp > 1 for r in ROWS) >= 5 and sum(r.tp > 1 for r in ROWS) >= 15
    assert any(len(set(r.gpus)) > 1 for r in ROWS)


def test_pr_2031_both_rules_within_2_percent():
    """vLLM PR 2031 logged each launch under the rule before it (v0.2.4: torch's max_memory_allocated)
    and under its own (v0.2.5: total - free memory, which sees NCCL and the all-reduce inputs the
    caching allocator holds at TP 4: 160 x 4096 x 8192 x 2 bytes = 10 GiB per worker). No constant is
    fitted on these rows."""
    errors = {}
    for r in ROWS:
        if r.id.startswith("pr2031-"):
            p = predict(r)
            errors[r.id] = p.error
            if r.id == "pr2031-llama2-70b-a100-tp4":
                assert pool_rule(resolve_engine("vllm"), r.version)[1]["peak"] == "free_memory"
                assert p.stages[0].activation >= 160 * 4096 * 8192 * 2
            if r.id.endswith("-main"):
                assert pool_rule(resolve_engine("vllm"), r.version)[1]["peak"] == "max_allocated"
                assert p.stages[0].non_torch == 0.0
    assert len(errors) == 4 and all(abs(e) <= 0.02 for e in errors.values()), errors


def test_refusals_agree_with_the_engine():
    """The engine refused to start (pool below one max_model_len request, or no memory) exactly
    where the model refuses."""
    for r in ROWS:
        assert predict(r).refused == bool(r.logged.get("refused", 0)), r.id


def test_logged_weights_match_the_shapes_within_3_percent():
    """The weights term alone, where the log gives it (dense 16-bit checkpoints)."""
    checked = 0
    for r in ROWS:
        if "weights_gib" in r.logged and r.weights in ("bf16", "fp16") and r.pp == 1:
            worst = min(predict(r).stages, key=lambda m: m.kv_tokens or 0)
            assert worst.weights / 2**30 == pytest.approx(r.logged["weights_gib"], rel=0.03), r.id
            checked += 1
    assert checked >= 4


def test_readme_counts_are_the_benchmarks():
    """README "KV pool as the engine sizes it" prints benchmarks/engine_logs.py's table and counts."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "engine_logs.py"
    spec = importlib.util.spec_from_file_location("engine_logs_bench", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    preds = [predict(r) for r in ROWS]
    for name, (ok, n) in bench.summary(preds).items():
        assert f"within ±20%: {ok}/{n} (" in readme, name
    for p in preds:
        assert f"[{p.row.id}]({p.row.source})" in readme
        if p.logged > 0:
            assert f"| {p.error:+.1%} |" in readme
