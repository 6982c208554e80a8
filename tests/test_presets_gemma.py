"""The Gemma-3 presets: the text decoder of each config.json (huggingface.co/google/gemma-3-*-it),
their published sizes, the KV counted on every layer at full context (presets/models.yaml says why),
and a plan on a small mixed cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from partitioner.costs.roofline import Shape, kv_bytes_per_token, total_params
from partitioner.models.catalog import require
from partitioner.models.llm import Architecture
from partitioner.result import Plan


def _shape(preset: str) -> Shape:
    return Shape.of(Architecture.model_validate(require("models", preset)["architecture"]))


# (layers, q heads, kv heads, head_dim, vocab, text parameters in billions): config.json text_config;
# 27B is published as 27 B with a 0.4 B vision tower, 12B as 12 B.
@pytest.mark.parametrize(("preset", "L", "H", "kv", "d", "V", "billions"), [
    ("gemma-3-27b-it", 62, 32, 16, 128, 262208, 27.0),
    ("gemma-3-12b-it", 48, 16, 8, 256, 262208, 11.8),
])
def test_gemma3_presets_have_their_config_shapes(preset: str, L: int, H: int, kv: int, d: int, V: int,
                                                 billions: float) -> None:
    s = _shape(preset)
    assert (s.L, s.H, s.kv, s.d, s.V, s.tie) == (L, H, kv, d, V, True)
    assert total_params(s) / 1e9 == pytest.approx(billions, abs=0.05)


def test_gemma3_kv_is_counted_on_every_layer_at_full_context() -> None:
    # 2 (K and V) x 16 kv heads x 128 x 2 bytes = 8 KiB per token per layer, on all 62 layers: the
    # uniform-layer model does not know the 52 sliding-window layers (presets/models.yaml comment)
    s = _shape("gemma-3-27b-it")
    assert kv_bytes_per_token(s, 2.0) == 8192
    assert kv_bytes_per_token(s, 2.0) * s.L == 62 * 8192


def test_gemma3_27b_plans_on_two_l4_and_an_a100(tmp_path: Path) -> None:
    from partitioner.api import plan

    (tmp_path / "m.yaml").write_text("preset: gemma-3-27b-it\nworkload: {batch: 4, context: 8192}\n")
    (tmp_path / "c.yaml").write_text(
        "devices:\n  - {name: g0, gpu: l4, node: a}\n  - {name: g1, gpu: l4, node: a}\n"
        "  - {name: g2, gpu: a100-40gb, node: b}\nlinks: {intra_node: pcie4, inter_node: 10gbe}\n")
    found = plan(tmp_path / "m.yaml", tmp_path / "c.yaml", objective="balanced")
    assert isinstance(found, Plan) and found.optimal
    assert sum(st.decoder_layers for st in found.stages) == 62
    assert len(found.stages) == 3  # bf16 27B (54 GB of weights) needs all three GPUs
