"""Engine presets in the cost model: selection, per-token and per-hop overheads, calibrated
devices, fp16 accumulation, precision classes, and the multi-GPU llama.cpp case."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

import partitioner
from partitioner.cli import main
from partitioner.costs import build_tables, roofline
from partitioner.costs.roofline import Hardware, Shape, Work
from partitioner.errors import ConfigError, InputError
from partitioner.models import ClusterSpec, ModelSpec, catalog
from partitioner.models.cluster import resolve_gpu
from partitioner.models.engines import engine_ids, precision_class, resolve_engine

ENGINES = ("generic", "llamacpp", "vllm", "sglang", "trtllm")


def _cluster(*gpus: str | dict[str, object], **extra: object) -> ClusterSpec:
    return ClusterSpec.model_validate({"devices": [{"name": f"g{i}", "gpu": g, "node": "h"} for i, g in enumerate(gpus)],
                                       **extra})


def test_engine_ids_are_the_contract_names():
    assert engine_ids() == ENGINES
    for key in ENGINES:
        assert resolve_engine(key).source  # every preset says where its numbers come from


def test_unknown_engine_lists_the_valid_ones():
    with pytest.raises(ValueError, match=r"unknown engine id 'vlm'; closest: vllm.*; valid: generic, llamacpp, vllm, sglang, trtllm"):
        _cluster("rtx-3090", engine="vlm")
    with pytest.raises(ValueError, match=r"unknown engine id 'llama.cpp'"):
        ModelSpec(preset="llama-3.1-8b", workload={"engine": "llama.cpp"})
    with pytest.raises(InputError, match=r"unknown engine id 'tensorrt'.*valid: generic, llamacpp"):
        build_tables(ModelSpec(preset="llama-3.1-8b"), _cluster("rtx-3090"), engine="tensorrt")


def test_engine_comes_from_the_argument_then_the_files():
    model = ModelSpec(preset="llama-3.1-8b")
    head = {e: build_tables(model, _cluster("rtx-3090"), engine=e).cost[0, -1] for e in ENGINES}
    assert head["llamacpp"] < head["generic"] and head["vllm"] < head["generic"]  # engines' own per-token costs
    assert build_tables(model, _cluster("rtx-3090")).cost[0, -1] == head["generic"]
    assert build_tables(model, _cluster("rtx-3090", engine="vllm")).cost[0, -1] == head["vllm"]
    on_model = ModelSpec(preset="llama-3.1-8b", workload={"engine": "sglang"})
    assert build_tables(on_model, _cluster("rtx-3090")).cost[0, -1] == head["sglang"]
    assert build_tables(on_model, _cluster("rtx-3090", engine="sglang")).cost[0, -1] == head["sglang"]
    assert build_tables(on_model, _cluster("rtx-3090", engine="vllm"), engine="trtllm").cost[0, -1] == head["trtllm"]
    with pytest.raises(ConfigError, match=r"engine 'sglang' differs from the cluster's engine 'vllm'"):
        build_tables(on_model, _cluster("rtx-3090", engine="vllm"))


def test_per_token_cost_rides_on_the_lm_head_only():
    """t_token = fitted default (memory type, precision) x the engine's scale, on the LM head."""
    model = ModelSpec(preset="llama-3.1-8b", workload={"weights": "int4"})
    s, w = Shape.of(model.arch), Work.of(model.workload)
    d = catalog.gpu_defaults()
    for gpu, mt in (("rtx-3090", "gddr"), ("a100-40gb", "hbm"), ("apple-m2-ultra", "unified")):
        for e in ENGINES:
            t = build_tables(model, _cluster(gpu), engine=e)
            hw = Hardware.of(resolve_gpu(gpu), 4.0, e)
            head = roofline.roofline_time(roofline.head_flops(s, w), roofline.head_bytes(s, w), hw)
            want = d["token_overhead_ms"][mt][4] / 1e3 * resolve_engine(e).token_overhead_scale
            assert t.cost[0, -1] - head == pytest.approx(want, rel=1e-9, abs=1e-15)
            layer = roofline.roofline_time(roofline.layer_flops(s, w), roofline.layer_bytes(s, w), hw)
            np.testing.assert_allclose(t.cost[0, 1:-1], layer, rtol=1e-12)  # no fixed cost per layer


def test_hop_overhead_is_added_to_every_link_once():
    data = {"devices": [{"name": "a", "gpu": "rtx-3090", "node": "n1"}, {"name": "b", "gpu": "rtx-3090", "node": "n1"},
                        {"name": "c", "gpu": "t4", "node": "n2"}],
            "links": {"intra_node": "pcie4", "inter_node": "10gbe"},
            "pairs": [{"from": "a", "to": "c", "latency_ms": 3, "bandwidth_gb_s": 1}]}
    cluster = ClusterSpec.model_validate(data)
    for e in ENGINES:
        t = build_tables(ModelSpec(preset="llama-3.1-8b"), cluster, engine=e)
        hop = resolve_engine(e).hop_overhead_ms / 1e3
        assert np.all(np.diag(t.latency_s) == 0)
        assert t.latency_s[0, 1] == pytest.approx(catalog.require("links", "pcie4")["latency_ms"] / 1e3 + hop)
        assert t.latency_s[1, 2] == pytest.approx(catalog.require("links", "10gbe")["latency_ms"] / 1e3 + hop)
        assert t.latency_s[2, 0] == pytest.approx(3e-3 + hop)  # a listed pair carries it too


def test_one_and_two_rtx3090s_in_a_llamacpp_layer_split():
    """Llama-3-8B F16 (the shapes of the llama-3.1-8b preset) on one RTX 3090 and on two in one
    host: a token costs the same layers either way (the per-token cost is charged once per
    pipeline), so two cards are slower by exactly the hop d = alpha + hop + b/beta, ~1 %."""
    model = ModelSpec(preset="llama-3.1-8b", workload={"weights": "fp16", "kv_cache": "fp16", "batch": 1,
                                                        "context": 1024, "prompt_tokens": 512, "engine": "llamacpp"})
    one = partitioner.plan(model, _cluster("rtx-3090"), M=1, objective="balanced")
    two = partitioner.plan(model, _cluster("rtx-3090", "rtx-3090"), M=1, objective="balanced")
    assert len(one.stages) == 1 and len(two.stages) == 2
    t1 = build_tables(model, _cluster("rtx-3090"))
    assert one.T_async == pytest.approx(t1.cost[0].sum(), rel=1e-12)
    assert sum(st.tau for st in two.stages) == pytest.approx(one.T_async, rel=1e-12)  # same work, one t_token
    hop = two.stages[0].d
    assert two.T_async - one.T_async == pytest.approx(hop, rel=1e-9)  # the hop explains the whole loss
    t2 = build_tables(model, _cluster("rtx-3090", "rtx-3090"))
    assert hop == pytest.approx(t2.latency_s[0, 1] + t2.cut_bytes[two.stages[0].end - 1] / t2.bandwidth_Bps[0, 1])
    assert hop > resolve_engine("llamacpp").hop_overhead_ms / 1e3
    assert 0.005 < two.T_async / one.T_async - 1 < 0.03  # within a few per cent
    assert 45 < 1 / one.T_async < 70  # tokens/s of one RTX 3090 (llama-bench reports ~50-55 for F16 8B)


def test_calibrated_devices_ignore_the_engine():
    """A GPU spec that gives its own factors (a cluster written by `calibrate profile`) keeps them
    under every engine; what it leaves out comes from the engine-neutral defaults."""
    cal = {"base": "rtx-3090", "eta_compute": 0.6, "eta_memory": 0.8, "overhead_ms": 0.03}
    model = ModelSpec(preset="llama-3.1-8b", workload={"phase": "prefill", "prompt_tokens": 256, "context": 512})
    costs = [build_tables(model, _cluster(cal), engine=e).cost for e in ENGINES]
    for c in costs[1:]:
        np.testing.assert_array_equal(c, costs[0])
    spec = _cluster(cal).devices[0].spec
    eta_c, eta_m, t_layer, t_token = spec.factors(16, "llamacpp")
    assert (eta_c, eta_m, t_layer) == (0.6, 0.8, pytest.approx(0.03e-3))
    assert t_token == catalog.gpu_defaults()["token_overhead_ms"]["gddr"][16] / 1e3  # unscaled default
    assert spec.peak_flops("llamacpp") == 71e12  # no fp16-accumulate doubling either
    own = _cluster({"base": "rtx-3090", "token_overhead_ms": 0.0}).devices[0].spec
    assert own.factors(16, "vllm")[3] == 0.0


def test_fp16_accumulating_engine_doubles_geforce_tensor_rate_only():
    assert resolve_gpu("rtx-3090").peak_flops("llamacpp") == 2 * 71e12
    assert resolve_gpu("rtx-3090").peak_flops("vllm") == 71e12
    assert resolve_gpu("rtx-a6000").peak_flops("llamacpp") == 154.8e12  # workstation: full rate already
    assert resolve_gpu("gtx-1070").peak_flops("llamacpp") == 6.5e12  # no tensor cores: FP32


def test_precision_classes_and_default_factors():
    assert [precision_class(b) for b in (16, 12, 8.5, 8, 6.56, 5.69, 4.85, 4.5, 2.6)] == [16, 16, 8, 8, 8, 4, 4, 4, 4]
    d = catalog.gpu_defaults()
    for mt in ("gddr", "hbm", "unified"):
        em = d["eta_memory"][mt]
        assert 0 < em[4] <= em[8] <= em[16] <= 1  # dequantisation costs bandwidth efficiency
    assert d["eta_compute"]["inference"] < d["eta_compute"]["tensor"]  # power-limited L4 / T4
    # pre-Ampere NVIDIA (compute capability < 8.0) take the fitted memory factor; AMD and Apple do not
    t4, l4 = resolve_gpu("t4").factors(), resolve_gpu("l4").factors()
    assert t4[1] == pytest.approx(d["eta_memory"]["gddr"][16] * d["pre_ampere_eta_memory_scale"])
    assert l4[1] == d["eta_memory"]["gddr"][16] and t4[0] == l4[0] == d["eta_compute"]["inference"]
    assert resolve_gpu("mi300x").factors()[1] == d["eta_memory"]["hbm"][16]
    # an engine scale never pushes an efficiency past 1
    assert resolve_gpu("apple-m2-ultra").factors(16, "llamacpp")[1] == 1.0


def test_inline_spec_without_memory_type_follows_its_family():
    c = ClusterSpec.model_validate({"devices": [
        {"name": "a", "gpu": {"name": "x", "family": "datacenter", "memory_gb": 40, "bandwidth_gb_s": 1000,
                              "tensor_tflops": 100, "fp32_tflops": 20}},
        {"name": "b", "gpu": {"name": "y", "family": "apple", "memory_gb": 64, "bandwidth_gb_s": 400, "fp32_tflops": 10}},
        {"name": "c", "gpu": {"name": "z", "memory_type": "gddr", "compute_class": "inference", "memory_gb": 16,
                              "bandwidth_gb_s": 300, "tensor_tflops": 100, "fp32_tflops": 20}}]})
    kinds = [(d.spec.mem_type, d.spec.compute_kind) for d in c.devices]
    assert kinds == [("hbm", "tensor"), ("unified", "fp32"), ("gddr", "inference")]


def test_cli_costs_engine_and_catalog_engines():
    runner = CliRunner()
    args = ["costs", "examples/models/llama-3.1-8b.yaml", "examples/clusters/seed.yaml", "--json"]
    import json

    base = json.loads(runner.invoke(main, args).output)
    vllm = json.loads(runner.invoke(main, [*args, "--engine", "vllm"]).output)
    assert base["layers"][-1]["cost_s"] != vllm["layers"][-1]["cost_s"]
    assert base["layers"][1]["cost_s"] == vllm["layers"][1]["cost_s"]  # same etas: only the fixed costs move
    bad = runner.invoke(main, [*args, "--engine", "vlm"])
    assert bad.exit_code == 2 and "unknown engine id 'vlm'; closest: vllm" in bad.output
    listed = runner.invoke(main, ["catalog", "engines", "--json"])
    assert [r["id"] for r in json.loads(listed.output)] == list(ENGINES)


@pytest.mark.parametrize("gpu, measured_s, rel", [
    ("h100-sxm", 6.48e-3, 0.02),  # vLLM 0.21, TPOT p50 at concurrency 1 (engines.yaml vllm source)
    ("a100-40gb", (128 / 75 - 0.066) / 127, 0.03),  # vLLM 0.23, ~75 tok/s incl. a ~66 ms 1024-token prefill
])
def test_vllm_single_request_decode_matches_published_measurements(gpu, measured_s, rel):
    """Llama-3.1-8B BF16, one sequence: weights stream at the HBM 16-bit default plus vLLM's
    per-token cost (golden numbers from the two measurements the vllm preset cites)."""
    model = ModelSpec(preset="llama-3.1-8b", workload={"batch": 1, "prompt_tokens": 1024, "context": 1088})
    t = build_tables(model, _cluster(gpu), engine="vllm")
    assert t.cost[0].sum() == pytest.approx(measured_s, rel=rel)
