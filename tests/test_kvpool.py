"""The engine KV pool (partitioner.costs.kvpool) by hand, engine settings in cluster.yaml, and the
generic capacity's closed form against the fit test it replaces."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from partitioner.costs import build_tables
from partitioner.costs.kvpool import EngineSettings, GiB, KVPool, plan_kv_tokens, stage_memory
from partitioner.errors import ConfigError
from partitioner.models import load_cluster, load_model
from partitioner.models.cluster import resolve_gpu
from partitioner.models.engines import resolve_settings
from partitioner.serving.capacity import _stage_max, capacity, fits

EX = Path(__file__).resolve().parents[1] / "examples"
VLLM = EngineSettings(name="vllm", gpu_memory_utilization=0.9, max_model_len=1000, max_num_batched_tokens=1000,
                      max_num_seqs=10, block_size=16, non_torch_gib_tp1=0.5, non_torch_gib_tp=2.0,
                      non_torch_gib_tp_pcie=1.0, sampler_copies=1.0)


def _pool(settings: EngineSettings = VLLM, G: int = 2, visible_gib: float = 10.0) -> KVPool:
    """Layers: embed (1 GiB), 4 decoders of 1 GiB and 1 MiB of KV per token each, head (1 GiB)."""
    return KVPool(settings=settings, visible_bytes=np.full(G, visible_gib * GiB), tp=np.ones(G, dtype=int),
                  weight_bytes=np.array([1.0, 1, 1, 1, 1, 1]) * GiB, kv_bytes=np.array([0.0, 1, 1, 1, 1, 0]) * 2**20,
                  act_fixed=2**20, act_sharded=2**20, vocab=2**16)


def test_vllm_pool_by_hand():
    """Stage [0, 3): 9 GiB − 3 GiB weights − 1000 tokens x 2 MiB activation − 0.5 GiB = 3.546875 GiB
    over 16 tokens x 2 MiB blocks = 113 blocks; the last stage also pays 10 x 65536 x 4 B of sampler."""
    p = _pool()
    first = stage_memory(p, 0, 0, 3, last=False)
    pool = 9 * GiB - 3 * GiB - 1000 * 2 * 2**20 - 0.5 * GiB
    assert first.kv_tokens == 16 * math.floor(pool / (16 * 2 * 2**20)) == 16 * 113
    last = stage_memory(p, 1, 3, 6, last=True)
    assert last.sampler == 10 * 2**16 * 4
    assert last.kv_tokens == 16 * math.floor((pool - last.sampler) / (16 * 2 * 2**20))
    tokens, stages = plan_kv_tokens(p, (0, 1), (0, 3, 6))
    assert tokens == min(first.kv_tokens, last.kv_tokens) == last.kv_tokens  # the worst rank sets the pool
    assert stages[0].free == pytest.approx(10 * GiB - (3 * GiB + first.kv + first.activation + first.non_torch))


def test_tp_halves_weights_and_kv_per_rank_and_pays_non_torch():
    p = _pool().regroup([(0, 1)])
    m = stage_memory(p, 0, 0, 6, last=True)
    assert m.weights == 3 * GiB and m.non_torch == 2.0 * GiB  # 6 GiB / 2 ranks; NVLink default
    assert m.activation == 1000 * (2**20 + 2**20 / 2)
    k = 4 * 2**20 / 2
    assert m.kv_tokens == 16 * math.floor((9 * GiB - m.weights - m.activation - m.non_torch - m.sampler) / (16 * k))
    pcie = KVPool(**{**p.__dict__, "nvlink": np.array([False])})
    assert stage_memory(pcie, 0, 0, 6, last=True).non_torch == 1.0 * GiB


def test_sglang_and_llamacpp_rules():
    sg = _pool(EngineSettings(name="sglang", mem_fraction_static=0.8, non_torch_gib_tp1=0.5))
    m = stage_memory(sg, 0, 0, 3, last=True)
    assert m.activation == 0 and m.sampler == 0  # SGLang leaves activations to (1 − f)·M
    assert m.kv_tokens == math.floor((8 * GiB - 3 * GiB - 0.5 * GiB) / (2 * 2**20))  # page size 1
    lc = _pool(EngineSettings(name="llamacpp", ctx_size=2048, ubatch_size=512))
    m = stage_memory(lc, 0, 0, 3, last=False)  # 3 GiB weights + 1 GiB compute + 4 GiB KV <= 10 GiB
    assert m.kv_tokens == 2048 and m.activation == GiB  # n_ctx cells on every device for its layers
    big = _pool(EngineSettings(name="llamacpp", ctx_size=4096, ubatch_size=512))
    assert stage_memory(big, 0, 0, 3, last=False).kv_tokens == 0  # 3 + 1 + 8 GiB do not fit in 10


def test_refusal_below_max_model_len_and_short_pool_note(tmp_path):
    model = load_model(EX / "models" / "llama-3-70b-fp8.yaml")
    base = (EX / "clusters" / "l4x8-vllm.yaml").read_text()
    tight = base.replace("non_kv_gib: 9.02", "non_kv_gib: 9.87")  # 0.045 GiB left on the first GPU
    t = build_tables(model, load_cluster(_write(tmp_path, tight)))
    cap = capacity(t, tuple(range(8)), (0, 11, 21, 31, 41, 51, 61, 71, 82))
    assert cap.max_sequences == 0 and "refuses to start" in cap.note and 0 < cap.kv_tokens < 2048
    short = tight.replace("max_num_seqs: 256}", "max_num_seqs: 256, max_model_len: 512}")
    t = build_tables(model, load_cluster(_write(tmp_path, short)))
    cap = capacity(t, tuple(range(8)), (0, 11, 21, 31, 41, 51, 61, 71, 82))
    assert 512 <= cap.kv_tokens < 2048 and cap.max_sequences == 0 and "shorter sequences are served" in cap.note


def _write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    return str(path)


def test_engine_mapping_resolves_defaults_by_gpu():
    h100 = resolve_settings("vllm", {}, min_visible_gib=79.19, gpu_names=("NVIDIA H100 SXM",), context=4096)
    assert (h100.max_num_batched_tokens, h100.max_num_seqs, h100.max_model_len) == (8192, 1024, 4096)
    a100 = resolve_settings("vllm", {"max_num_seqs": 64}, min_visible_gib=79.2, gpu_names=("NVIDIA A100 80GB SXM",))
    assert (a100.max_num_batched_tokens, a100.max_num_seqs, a100.gpu_memory_utilization) == (2048, 64, 0.9)
    sg = resolve_settings("sglang", {"mem_fraction_static": 0.7})
    assert sg.mem_fraction_static == 0.7 and sg.chunked_prefill_size == 8192


@pytest.mark.parametrize("engine, location, match", [
    ("{name: vllm, gpu_memory_utilizaton: 0.9}", "engine.gpu_memory_utilizaton", "not a setting of vllm"),
    ("{name: vllm, gpu_memory_utilization: 1.5}", "engine.gpu_memory_utilization", r"fraction in \(0, 1\] \(got 1.5\)"),
    ("{name: sglang, max_num_seqs: 8}", "engine.max_num_seqs", "not a setting of sglang"),
    ("{name: vlm}", "engine.name", "unknown engine id 'vlm'"),
    ("{name: llamacpp, ctx_size: -1}", "engine.ctx_size", r"positive integer \(got -1\)"),
    ("{gpu_memory_utilization: 0.9}", "engine.name", "needs `name:`"),
])
def test_engine_mapping_errors_name_file_field_and_value(tmp_path, engine, location, match):
    path = _write(tmp_path, f"devices:\n  - {{name: a, gpu: l4}}\nengine: {engine}\n")
    with pytest.raises(ConfigError, match=match) as info:
        load_cluster(path)
    assert info.value.file == path and info.value.location == location and "\n" not in str(info.value)


def test_engine_visible_memory_as_logged():
    assert resolve_gpu("h100-sxm").engine_visible_bytes / GiB == pytest.approx(79.19)
    assert resolve_gpu("rtx-3090").engine_visible_bytes / GiB == pytest.approx(23.58)
    assert resolve_gpu("rtx-4090").engine_visible_bytes / GiB == pytest.approx(23.55)
    assert resolve_gpu("l4").engine_visible_bytes / GiB == pytest.approx(22.05)


def test_generic_capacity_closed_form_matches_the_fit_test():
    rng = np.random.default_rng(0)
    for _ in range(2000):
        w, kv, cap = rng.uniform(0, 30), rng.uniform(1e-4, 3), rng.uniform(1, 30)
        n = _stage_max(w, kv, cap)
        assert n is not None and (n == 0 or fits(w, kv, cap, n)) and not fits(w, kv, cap, n + 1)


def test_workload_engine_flags_override_the_clusters(tmp_path):
    model_text = (EX / "models" / "llama-3-70b-fp8.yaml").read_text().replace(
        "  context: 2048", "  context: 2048\n  engine: {name: vllm, gpu_memory_utilization: 0.8}")
    mp = tmp_path / "model.yaml"
    mp.write_text(model_text)
    t = build_tables(load_model(mp), load_cluster(EX / "clusters" / "l4x8-vllm.yaml"))
    st = t.kv_pool.settings
    assert st.gpu_memory_utilization == 0.8 and st.max_num_batched_tokens == 8192  # model's, then cluster's flag
    bad = tmp_path / "bad.yaml"
    bad.write_text(model_text.replace("gpu_memory_utilization: 0.8", "gpu_memory_utilization: 0"))
    with pytest.raises(ConfigError, match=r"fraction in \(0, 1\] \(got 0\)") as info:
        load_model(bad)
    assert info.value.location == "workload.engine.gpu_memory_utilization"


def test_tp_group_rows_get_the_engines_per_rank_budget(tmp_path):
    from partitioner.costs.groups import Group, group_tables

    cp = tmp_path / "c.yaml"
    cp.write_text("devices:\n  - {name: a, gpu: h100-sxm, node: n}\n  - {name: b, gpu: h100-sxm, node: n}\n"
                  "engine: {name: vllm, max_num_batched_tokens: 4096}\n")
    model, cluster = load_model(EX / "models" / "llama-3.1-8b.yaml"), load_cluster(cp)
    t = group_tables(model, cluster, [Group((0, 1), "n")])
    p = t.kv_pool
    assert list(p.tp) == [2] and p.settings.max_num_batched_tokens == 4096
    act = 4096 * (p.act_fixed + p.act_sharded / 2)
    assert t.capacity_gb[0] == pytest.approx(2 * (0.9 * 79.19 * GiB - act - 3.58 * GiB) / 1e9)
    cap = capacity(t, (0,), (0, t.L))
    m = cap.memory[0]
    assert m.non_torch == 3.58 * GiB and m.weights == pytest.approx(float(np.sum(p.weight_bytes)) / 2)


def test_sglang_defaults_follow_tp_and_gpu_memory():
    st = resolve_settings("sglang", {}, min_visible_gib=23.55)
    assert st.chunked_prefill_size == 2048 and st.mem_fraction_static is None
    assert [st.fraction(t) for t in (1, 2, 4, 8, 16)] == [0.88, 0.87, 0.85, 0.81, 0.79]
    assert resolve_settings("sglang", {}, min_visible_gib=79.19).chunked_prefill_size == 8192


def test_each_vllm_release_sizes_its_pool_by_its_own_rule():
    """presets/engines.yaml `pool_rules`: the newest rule whose first release is <= the version; V0
    releases profile max(max_model_len, 2048) tokens with 256 sequences unless the flags say otherwise."""
    assert resolve_settings("vllm", {}).peak_rule == "torch_peak"
    old = resolve_settings("vllm", {"version": "0.5.3", "max_model_len": 8192}, min_visible_gib=79.19)
    assert (old.peak_rule, old.max_num_batched_tokens, old.max_num_seqs) == ("free_memory", 8192, 256)
    assert resolve_settings("vllm", {"version": "0.4", "max_model_len": 1024}).max_num_batched_tokens == 2048
    given = resolve_settings("vllm", {"version": "0.5.3", "max_model_len": 8192, "max_num_batched_tokens": 512})
    assert given.max_num_batched_tokens == 512
    assert resolve_settings("vllm", {"version": "0.2.4"}).peak_rule == "max_allocated"
    assert resolve_settings("vllm", {"version": "0.6.4"}).peak_rule == "torch_peak"


def test_a_plan_on_vllm_0_5_uses_that_release_s_peak(tmp_path):
    """examples/clusters/l4x8-vllm.yaml without its calibrated non_kv_gib: vLLM 0.5.3's free-memory
    rule charges every non-first PP rank the IntermediateTensors of the profiled batch (8192 tokens x
    hidden + residual x 2 bytes); under 0.2.4's max_memory_allocated no non-torch memory is charged."""
    text = (EX / "clusters" / "l4x8-vllm.yaml").read_text().replace(", non_kv_gib: 9.02", "")
    model = load_model(EX / "models" / "llama-3-70b-fp8.yaml")
    cuts = (0, 11, 21, 31, 41, 51, 61, 71, 82)
    mem = capacity(build_tables(model, load_cluster(_write(tmp_path, text))), tuple(range(8)), cuts).memory
    assert mem[1].activation - mem[0].activation == pytest.approx(8192 * 2 * 8192 * 2)
    assert mem[0].non_torch == 0.35 * GiB
    old = text.replace('version: "0.5.3"', 'version: "0.2.4"')
    mem_old = capacity(build_tables(model, load_cluster(_write(tmp_path, old))), tuple(range(8)), cuts).memory
    assert mem_old[0].non_torch == 0.0 and mem_old[1].activation == mem_old[0].activation
