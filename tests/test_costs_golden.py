"""Golden numbers of the cost model against published tables (../shared/docs/costmodel.md)."""

from __future__ import annotations

import numpy as np
import pytest

from partitioner.costs import build_tables, memory, roofline
from partitioner.costs.roofline import Hardware, Shape, Work
from partitioner.models import ClusterSpec, ModelSpec, catalog


def _shape(preset: str) -> Shape:
    return Shape.of(ModelSpec(preset=preset).arch)


# Published totals (model cards; costmodel.md "Model catalogue" table).
@pytest.mark.parametrize("preset, billions", [
    ("llama-3.1-8b", 8.03), ("llama-3.1-70b", 70.55), ("qwen2.5-7b", 7.62), ("qwen2.5-72b", 72.71),
    ("mixtral-8x7b", 46.70), ("mistral-7b", 7.24), ("qwen2.5-14b", 14.77), ("llama-3.2-1b", 1.24),
    ("llama-3.2-3b", 3.21), ("llama-2-70b", 68.98),
])
def test_parameter_counts_match_published_totals(preset, billions):
    assert roofline.total_params(_shape(preset)) / 1e9 == pytest.approx(billions, rel=0.005)


# costmodel.md table: "layer params" column.
@pytest.mark.parametrize("preset, millions", [
    ("llama-3.1-8b", 218.1), ("llama-3.1-70b", 855.7), ("qwen2.5-7b", 233.1), ("qwen2.5-14b", 275.3),
    ("qwen2.5-72b", 877.7), ("mixtral-8x7b", 1451.3),
])
def test_layer_params_match_table(preset, millions):
    assert roofline.layer_params(_shape(preset)) / 1e6 == pytest.approx(millions, abs=0.06)


def test_llama_8b_layer_params_hand_computed():
    # Q,O 2*4096*4096 + K,V 2*4096*1024 + MLP 3*4096*14336 + norms 2*4096
    assert roofline.layer_params(_shape("llama-3.1-8b")) == 33554432 + 8388608 + 176160768 + 8192


# costmodel.md table: "KV B/tok/layer" column (bf16).
@pytest.mark.parametrize("preset, nbytes", [
    ("llama-3.1-8b", 4096), ("llama-3.1-70b", 4096), ("qwen2.5-7b", 2048), ("qwen2.5-14b", 4096),
    ("qwen2.5-72b", 4096), ("mistral-7b", 4096), ("mixtral-8x7b", 4096), ("deepseek-r1-distill-qwen-14b", 4096),
])
def test_kv_bytes_per_token_per_layer(preset, nbytes):
    assert roofline.kv_bytes_per_token(_shape(preset), 2.0) == nbytes


def test_mixtral_active_params_and_experts_touched():
    s = _shape("mixtral-8x7b")
    active = roofline.attn_params(s) + roofline.mlp_params(s, experts=s.k) + roofline.norm_params(s)
    assert active / 1e6 == pytest.approx(394.3, abs=0.1)  # costmodel.md "active 394.3M"
    assert roofline.experts_touched(s, 1) == pytest.approx(2.0)
    assert roofline.experts_touched(s, 2) == pytest.approx(8 * (1 - 0.75 ** 2))
    assert roofline.experts_touched(s, 10_000) == pytest.approx(8.0)


def test_rtx3090_decode_of_a_bf16_llama_8b_layer_is_bandwidth_bound():
    """time = bytes / (eta_m * 936 GB/s) + t_fixed (issue 3, Validation)."""
    model = ModelSpec(preset="llama-3.1-8b", workload={"batch": 1, "context": 1024, "prompt_tokens": 512})
    cluster = ClusterSpec(devices=[{"name": "g", "gpu": "rtx-3090"}])
    t = build_tables(model, cluster)
    eta_c, eta_m, t_fixed = cluster.devices[0].spec.efficiency()
    weights = 2 * 218_112_000
    kv = 1024 * 4096 + 4096  # read the context, write the new token
    assert t.cost[0, 1] == pytest.approx((weights + kv) / (eta_m * 936e9) + t_fixed, rel=1e-12)
    d = catalog.gpu_defaults()
    assert (eta_m, t_fixed) == (d["eta_memory"]["gddr"][16], 0.0)  # gpus.yaml defaults: GDDR, 16-bit weights
    # the compute side is far below: 2 * 218 M FLOPs at 0.75 * 71 TFLOPS
    assert 2 * 218_112_000 / (eta_c * 71e12) < (weights + kv) / (eta_m * 936e9) / 50


def test_prefill_is_compute_bound_and_has_the_causal_half():
    s, hw = _shape("llama-3.1-8b"), Hardware(F=100e12, BW=1e12, eta_c=1.0, eta_m=1.0, t_fixed=0.0)
    w = Work(b_w=2, b_kv=2, b_a=2, phase="prefill", B=1, S=2048, C=2048)
    assert roofline.attn_flops(s, w) == 4 * 32 * 128 * 2048 * 2049 / 2
    flops, nbytes = roofline.layer_flops(s, w), roofline.layer_bytes(s, w)
    assert flops == 2 * 2048 * 218_112_000 + roofline.attn_flops(s, w)
    assert roofline.roofline_time(flops, nbytes, hw) == pytest.approx(flops / 100e12)


def test_lm_head_logits_only_at_sampled_positions():
    s = _shape("llama-3.1-8b")
    w = Work(b_w=2, b_kv=2, b_a=2, phase="prefill", B=4, S=1000, C=1000)
    assert roofline.head_flops(s, w) == 2 * 4 * 4096 * 128256


def test_cut_bytes_two_tensors():
    s = _shape("llama-3.1-8b")
    decode = Work(b_w=2, b_kv=2, b_a=2, phase="decode", B=8, S=100, C=200)
    prefill = Work(b_w=2, b_kv=2, b_a=2, phase="prefill", B=2, S=100, C=200)
    assert roofline.cut_bytes(s, decode) == 8 * 4096 * 2 * 2  # costmodel.md: 8192 B per token per tensor
    assert roofline.cut_bytes(s, prefill) == 2 * 100 * 4096 * 2 * 2


def test_memory_per_layer_weights_plus_kv_plus_workspace():
    s = _shape("llama-3.1-8b")
    w = Work(b_w=0.5, b_kv=1, b_a=2, phase="decode", B=4, S=100, C=1000, in_flight=3)
    kv = 3 * 4 * 1000 * 2 * 8 * 128 * 1
    ws = 4 * 4 * 4096 * 2
    assert memory.decoder_memory_gb(s, w) == pytest.approx((0.5 * 218_112_000 + kv + ws) / 1e9)


def test_tied_embeddings_counted_on_both_ends():
    model = ModelSpec(preset="llama-3.2-1b")
    t = build_tables(model, ClusterSpec(devices=[{"name": "g", "gpu": "l4"}]))
    assert t.tied_gb == pytest.approx(2 * 128256 * 2048 / 1e9)
    assert t.memory_gb[-1] >= t.tied_gb and t.memory_gb[0] >= t.tied_gb
    assert t.params.sum() == pytest.approx(roofline.total_params(Shape.of(model.arch)))
    untied = build_tables(ModelSpec(preset="llama-3.1-8b"), ClusterSpec(devices=[{"name": "g", "gpu": "l4"}]))
    assert untied.tied_gb == 0.0
    assert untied.params.sum() == roofline.total_params(Shape.of(ModelSpec(preset="llama-3.1-8b").arch))


def test_cards_without_tensor_cores_use_fp32():
    c = ClusterSpec(devices=[{"name": "g", "gpu": "gtx-1070"}])
    assert Hardware.of(c.devices[0].spec).F == 6.5e12
    assert Hardware.of(ClusterSpec(devices=[{"name": "g", "gpu": "rtx-4090"}]).devices[0].spec).F == 165.2e12


def test_efficiency_overrides_inline():
    gpu = ClusterSpec(devices=[{"name": "g", "gpu": {"base": "t4", "eta_memory": 0.5, "overhead_ms": 0}}]).devices[0].spec
    assert gpu.efficiency() == (catalog.gpu_defaults()["eta_compute"]["inference"], 0.5, 0.0)  # T4: inference class
    assert gpu.bandwidth_gb_s == 320 and gpu.name == "Tesla T4"
    assert np.isfinite(Hardware.of(gpu).F)


def test_embedding_and_head_stay_16_bit_in_engine_quantised_checkpoints() -> None:
    """fp8 / int8 / int4 quantise linear layers only (vLLM Fp8Config.get_quant_method): the V·h
    embedding and LM head keep 2 bytes per weight; a GGUF bits-per-weight applies to every tensor."""
    from types import SimpleNamespace

    from partitioner.costs import memory
    from partitioner.costs.roofline import Work

    def work(weights: object) -> Work:
        return Work.of(SimpleNamespace(weights=weights, kv_cache="bf16", activations="bf16", phase="decode",
                                       batch=1, prompt_tokens=1, context=1, in_flight=1))

    for name in ("fp8", "int8", "int4"):
        assert work(name).b_e == 2.0 and work(name).b_w < 2.0
    assert work("bf16").b_e == 2.0 and work(4.85).b_e == work(4.85).b_w == 4.85 / 8
    arch = SimpleNamespace(num_hidden_layers=1, hidden_size=1000, intermediate_size=4000, num_attention_heads=10,
                           kv_heads=10, d_head=100, vocab_size=50_000, tie_word_embeddings=False,
                           attention_bias=False, num_local_experts=None, num_experts_per_tok=None,
                           moe_intermediate_size=None)
    from partitioner.costs.roofline import Shape

    s = Shape.of(arch)
    w8, w16 = work("fp8"), work("bf16")
    assert memory.embed_memory_gb(s, w8) == memory.embed_memory_gb(s, w16)  # the table: 2 bytes either way
    assert memory.decoder_memory_gb(s, w8) < memory.decoder_memory_gb(s, w16)  # the linear layers: 1 byte
