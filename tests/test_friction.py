"""Newcomer friction: suggestions by edit distance over ids and display names, the shipped model
presets, an unknown model that says how to describe any model, and infeasibility messages that
split weights from KV cache and name the nearest fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from partitioner.cli import main
from partitioner.models.catalog import aliases, closest, ids, require
from partitioner.models.llm import Architecture


@pytest.mark.parametrize(("typo", "kind", "first"), [
    ("rtx-3060", "gpus", {"rtx-3060-12gb", "rtx-3060-ti"}),  # a prefix of the ids: was rtx-3090/3080/3070
    ("a100", "gpus", {"a100-40gb", "a100-80gb"}),
    ("RTX 4090", "gpus", {"rtx-4090"}),
    ("llama3.1-8b", "models", {"llama-3.1-8b"}),
    ("GeForce RTX 3060 12GB", "gpus", {"rtx-3060-12gb"}),  # a display name finds its id
])
def test_closest_ids_by_prefix_and_edit_distance(typo: str, kind: str, first: set[str]) -> None:
    near = closest(typo, ids(kind), aliases=aliases(kind))
    assert set(near[: len(first)]) == first, near


def test_nothing_close_suggests_nothing() -> None:
    assert closest("zzzzzz", ids("gpus"), aliases=aliases("gpus")) == []


# published totals (billions of parameters) of the presets' config.json shapes
@pytest.mark.parametrize(("preset", "layers", "heads", "kv"), [
    ("qwen2.5-32b", 64, 40, 8), ("qwen3-32b", 64, 64, 8), ("llama-3.3-70b", 80, 64, 8),
    ("deepseek-r1-distill-qwen-32b", 64, 40, 8), ("deepseek-r1-distill-llama-70b", 80, 64, 8),
    ("gemma-2-9b", 42, 16, 8), ("gemma-2-27b", 46, 32, 16),
])
def test_new_presets_load_with_their_config_shapes(preset: str, layers: int, heads: int, kv: int) -> None:
    arch = Architecture.model_validate(require("models", preset)["architecture"])
    assert (arch.num_hidden_layers, arch.num_attention_heads, arch.kv_heads) == (layers, heads, kv)


def _plan(tmp_path: Path, model: str, cluster: str, *extra: str) -> tuple[int, str]:
    (tmp_path / "m.yaml").write_text(model)
    (tmp_path / "c.yaml").write_text(cluster)
    res = CliRunner().invoke(main, ["plan", str(tmp_path / "m.yaml"), str(tmp_path / "c.yaml"), *extra])
    return res.exit_code, res.stderr


L4X4 = "devices:\n" + "".join(f"  - {{name: g{i}, gpu: l4}}\n" for i in range(4))  # 4 x 23 GB usable


def test_unknown_model_names_the_other_forms(tmp_path: Path) -> None:
    code, err = _plan(tmp_path, "preset: qwen2.5-34b\n", L4X4)
    assert code == 2 and "closest: " in err and "qwen2.5-32b" in err
    assert "`hf_config: path/to/config.json`" in err and "`architecture: {num_hidden_layers:" in err


def test_kv_cache_too_large_names_the_batch_that_fits(tmp_path: Path) -> None:
    # at the workload's own batch (the default serving answer would pick a batch that fits)
    code, err = _plan(tmp_path, "preset: llama-3.1-8b\nworkload: {batch: 128, context: 8192}\n", L4X4,
                      "--objective", "balanced")
    assert code == 3
    assert "(weights 16.23 GB + KV cache 137.44 GB for 128 sequences) but the cluster has 92.00 GB" in err
    # (92 - 16.23) / (137.44 / 128) = 70.6: at most 70 sequences fit beside the weights
    assert "nearest fix: at most 70 sequences in flight fit beside the weights" in err


def test_weights_too_large_suggest_int4_or_more_gpus(tmp_path: Path) -> None:
    code, err = _plan(tmp_path, "preset: llama-3.1-70b\nworkload: {batch: 1, context: 4096}\n", L4X4)
    assert code == 3 and "weights 141.11 GB + KV cache 1.34 GB for 1 sequence)" in err
    assert "nearest fix: quantized weights (`weights: int4`" in err and "short by 49.11 GB" in err


def test_score_verdict_follows_the_numbers_not_the_label() -> None:
    from partitioner.cli.score import _ratio_line

    # yours decodes faster: the verdict says so (it said "the optimal plan's throughput is 2.39x yours")
    assert _ratio_line("decode tokens/s", 239.0, 100.0, higher_is_better=True) == "decode tokens/s: yours is 2.39x higher"
    assert _ratio_line("decode tokens/s", 100.0, 131.0, higher_is_better=True) == \
        "decode tokens/s: the optimal plan is 1.31x higher"
    assert _ratio_line("TPOT", 0.05, 0.1, higher_is_better=False) == "TPOT: yours is 2.00x faster"
    assert _ratio_line("TPOT", 0.1004, 0.1, higher_is_better=False) == "TPOT: the same within 1 %"
