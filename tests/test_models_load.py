"""Loading model.yaml / cluster.yaml: forms, defaults, immutability, hf_config, what-if helpers."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from partitioner.costs import build_tables
from partitioner.errors import ConfigError
from partitioner.models import (
    ClusterSpec,
    ModelSpec,
    catalog,
    load_cluster,
    load_model,
    with_device,
    with_link,
    with_phase,
    without_device,
)
from partitioner.models.engines import resolve_engine

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_seed_cluster_defaults_and_immutability():
    c = load_cluster(EXAMPLES / "clusters" / "seed.yaml")
    assert c.order == "free" and c.reserve_gb == 1.0
    assert [(d.name, d.gpu, d.node) for d in c.devices] == [
        ("laptop-5090", "rtx-5090-laptop", "laptop"), ("node02-3090", "rtx-3090", "node-02"),
        ("node03-3090", "rtx-3090", "node-03"), ("node03-1070", "gtx-1070", "node-03"),
    ]
    assert len({d.node for d in c.devices}) == 3
    with pytest.raises(ValidationError):
        c.order = "fixed"  # type: ignore[misc]


def test_node_defaults_to_device_name_and_memory_override():
    c = ClusterSpec(devices=[{"name": "x", "gpu": "t4", "memory_gb": 12}])
    assert c.devices[0].node == "x" and c.capacity_gb(c.devices[0]) == 11.0
    assert c.devices[0].gpu_id == "t4"


def test_inline_gpu_spec():
    c = ClusterSpec(devices=[{"name": "x", "gpu": {"name": "my-card", "memory_gb": 12, "bandwidth_gb_s": 400,
                                                    "fp32_tflops": 20, "family": "geforce"}}])
    assert c.devices[0].gpu_id == "my-card" and f"{c.devices[0].gpu}" == "my-card"
    # no memory_type given: a geforce-family card is GDDR; no tensor cores: the fp32 compute class
    spec = c.devices[0].spec
    assert (spec.mem_type, spec.compute_kind) == ("gddr", "fp32")
    d = catalog.gpu_defaults()
    assert spec.efficiency() == (d["eta_compute"]["fp32"], d["eta_memory"]["gddr"][16], d["overhead_ms"] / 1e3)


def test_preset_name_and_hf_config_relative_to_the_yaml():
    assert load_model(EXAMPLES / "models" / "qwen2.5-14b.yaml").name == "Qwen2.5-14B"
    hf = load_model(EXAMPLES / "models" / "hf-qwen2.5-7b.yaml")
    preset = ModelSpec(preset="qwen2.5-7b")
    assert hf.arch == preset.arch  # the shipped config.json equals the catalogue entry (QKV bias implied)
    assert hf.name == "Qwen2.5-7B (hf_config)"


def test_name_defaults_to_file_stem(tmp_path):
    p = tmp_path / "tiny.yaml"
    p.write_text("architecture: {num_hidden_layers: 2, hidden_size: 64, intermediate_size: 128,"
                 " num_attention_heads: 4, vocab_size: 100}\n")
    assert load_model(p).name == "tiny"


def test_profile_form():
    m = load_model(EXAMPLES / "models" / "llama2-70b-helix-profile.yaml")
    assert m.is_profile and m.arch is None and m.layers[0].repeat == 80


def test_without_device():
    c = load_cluster(EXAMPLES / "clusters" / "a100-l4-t4.yaml")
    d = without_device(c, "a100-1")
    assert [x.name for x in d.devices] == [x.name for x in c.devices if x.name != "a100-1"]
    assert d.pairs == () and len(c.pairs) == 1  # the pair naming it went too; input untouched
    with pytest.raises(ConfigError, match=r"--without: unknown device 'a100-9'; closest: a100-0, a100-1; valid: a100-0"):
        without_device(c, "a100-9")
    one = ClusterSpec(devices=[{"name": "x", "gpu": "t4"}])
    with pytest.raises(ConfigError, match=r"only device"):
        without_device(one, "x")


def test_with_device():
    c = load_cluster(EXAMPLES / "clusters" / "seed.yaml")
    d = with_device(c, "rtx-4090", "node-02")
    assert d.devices[-1].name == "rtx-4090@node-02" and d.devices[-1].node == "node-02"
    d2 = with_device(d, "rtx-4090", "node-02")
    assert d2.devices[-1].name == "rtx-4090@node-02-2"
    assert with_device(c, "t4", "x", name="extra").devices[-1].name == "extra"
    with pytest.raises(ConfigError, match=r"--with: unknown GPU id 'rtx-4091'; closest: rtx-4090"):
        with_device(c, "rtx-4091", "node-02")
    with pytest.raises(ConfigError, match=r"already exists"):
        with_device(c, "t4", "x", name="laptop-5090")


def test_with_link_sets_both_directions():
    c = load_cluster(EXAMPLES / "clusters" / "seed.yaml")
    d = with_link(c, "laptop-5090", "node02-3090", 0.5, 3.0)
    t = build_tables(ModelSpec(preset="llama-3.1-8b"), d)
    hop = resolve_engine("generic").hop_overhead_ms / 1e3  # the engine's per-hop cost is added to every link
    assert t.latency_s[0, 1] == pytest.approx(0.5e-3 + hop) and t.bandwidth_Bps[1, 0] == 3e9
    with pytest.raises(ConfigError, match=r"--link: unknown device 'nope'"):
        with_link(c, "nope", "node02-3090", 1, 1)
    with pytest.raises(ConfigError, match=r"--link: .*greater than 0"):
        with_link(c, "laptop-5090", "node02-3090", 1, 0)


def test_with_phase_keeps_resolved_hf_config():
    m = load_model(EXAMPLES / "models" / "hf-qwen2.5-7b.yaml")
    p = with_phase(m, "prefill")
    assert p.workload.phase == "prefill" and m.workload.phase == "decode"
    assert p.arch == m.arch
    with pytest.raises(ConfigError, match=r"phase must be decode or prefill \(got 'train'\)"):
        with_phase(m, "train")
    with pytest.raises(ConfigError, match=r"measured profile"):
        with_phase(load_model(EXAMPLES / "models" / "llama2-70b-helix-profile.yaml"), "prefill")


def test_an_inline_spec_with_base_keeps_the_catalogue_id_as_its_gpu_id(tmp_path):
    from partitioner.models import load_cluster

    path = tmp_path / "c.yaml"
    path.write_text("devices:\n  - {name: a, gpu: {base: t4, memory_gb: 15}}\n"
                    "  - {name: b, gpu: {name: My card, memory_gb: 8, bandwidth_gb_s: 300, fp32_tflops: 10}}\n")
    a, b = load_cluster(path).devices
    assert (a.gpu_id, a.spec.name, a.total_gb) == ("t4", "Tesla T4", 15.0)
    assert b.gpu_id == "My card" and b.spec.base is None


def test_catalogue_gpus_carry_compute_capability() -> None:
    """Engines gate on it (vLLM needs 7.0); Pascal cards are 6.1, AMD cards have none."""
    from partitioner.models.cluster import resolve_gpu

    assert resolve_gpu("gtx-1070").cc == (6, 1)
    assert resolve_gpu("rtx-3090").cc == (8, 6)
    assert resolve_gpu("mi300x").cc is None
