"""Every invalid model.yaml / cluster.yaml names the file, the YAML path and the line (issue 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from partitioner.costs import build_tables
from partitioner.errors import ConfigError
from partitioner.models import load_cluster, load_model


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _raises(loader, path: str, location: str | None, line: int | None, match: str) -> ConfigError:
    with pytest.raises(ConfigError, match=match) as info:
        loader(path)
    err = info.value
    assert err.file == path
    assert err.location == location
    assert err.line == line
    assert str(err).startswith(f"{path}:{line}: " if line else f"{path}: ")
    assert "\n" not in str(err)
    return err


CLUSTER_CASES = [
    # (yaml, location, line, match)
    ("devices:\n  - {name: a, gpu: rtx-3090}\n  - {name: b, gpu: rtx-309}\n",
     "devices[1].gpu", 3, r"unknown GPU id 'rtx-309'; closest: rtx-3090.*; valid: rtx-5090, "),
    ("devices:\n  - name: a\n    gpu: rtx-3090\n  - name: b\n    gpu: rtx-3090\n  - name: c\n"
     "    gpu: t4\n    memory_gb: -3\n", "devices[2].memory_gb", 8, r"greater than 0 \(got -3\)"),
    ("devices:\n  - name: a\n    gpu: t4\n    memory_gb: 0\n", "devices[0].memory_gb", 4, r"greater than 0 \(got 0\)"),
    ("devices:\n  - name: a\n    gpu: t4\n    memory_gb: .inf\n", "devices[0].memory_gb", 4, r"finite number \(got inf\)"),
    ("devices:\n  - name: a\n    gpu: rtx-3090\n    memroy_gb: 3\n", "devices[0].memroy_gb", 4,
     r"unknown field 'memroy_gb'; closest: memory_gb.*valid: name, gpu, node, memory_gb, reserve_gb"),
    ("devices:\n  - {name: a, gpu: t4}\nreserv_gb: 2\n", "reserv_gb", 3, r"unknown field 'reserv_gb'; closest: reserve_gb"),
    ("devices:\n  - {name: a, gpu: rtx-3090}\n  - {name: a, gpu: t4}\n", "devices[1].name", 3,
     r"duplicate device name 'a' \(also devices\[0\]\)"),
    ("devices:\n  - {name: a, gpu: t4}\n  - {name: b, gpu: t4}\npairs:\n"
     "  - {from: a, to: bb, latency_ms: 1, bandwidth_gb_s: 1}\n", "pairs[0].to", 5, r"unknown device 'bb'; closest: b; valid: a, b"),
    ("devices:\n  - {name: a, gpu: t4}\npairs:\n  - {from: x, to: a, latency_ms: 1, bandwidth_gb_s: 1}\n",
     "pairs[0].from", 4, r"unknown device 'x'"),
    ("devices:\n  - {name: a, gpu: t4}\n  - {name: b, gpu: t4}\npairs:\n"
     "  - {from: a, to: b, latency_ms: -1, bandwidth_gb_s: 1}\n", "pairs[0].latency_ms", 5, r"greater than or equal to 0 \(got -1\)"),
    ("devices:\n  - {name: a, gpu: t4}\nlinks:\n  inter_node: 10gbee\n", "links.inter_node", 4,
     r"unknown link id '10gbee'; closest: 10gbe"),
    ("devices:\n  - {name: a, gpu: t4}\nlinks:\n  intra_node: {latency_ms: 0.01, bandwidth_gb_s: 0}\n",
     "links.intra_node.bandwidth_gb_s", 4, r"greater than 0 \(got 0\)"),
    ("devices:\n  - name: a\n    gpu: {base: rtx-3090, eta_memory: .nan}\n", "devices[0].gpu.eta_memory", 3, r"finite number"),
    ("devices:\n  - name: a\n    gpu: {base: rtx-3091}\n", "devices[0].gpu.base", 3, r"unknown GPU id 'rtx-3091'; closest: rtx-3090"),
    ("devices:\n  - name: a\n    gpu: {memory_gb: 8, bandwidth_gb_s: 100}\n", "devices[0].gpu.fp32_tflops", 3, r"missing required field"),
    ("devices:\n  - name: a\n    gpu: {base: t4, eta_compute: 1.5}\n", "devices[0].gpu.eta_compute", 3, r"less than or equal to 1"),
    ("devices:\n  - {name: a, gpu: t4, reserve_gb: 16}\n", "devices[0].reserve_gb", 2, r"reserve 16 GB leaves no usable memory on 'a'"),
    ("devices: []\n", "devices", 1, r"at least 1 item"),
    ("devices:\n  - {name: a, gpu: t4}\norder: random\n", "order", 3, r"'free' or 'fixed' \(got 'random'\)"),
    ("devices:\n  - {gpu: t4}\n", "devices[0].name", 2, r"missing required field"),
]


@pytest.mark.parametrize("text, location, line, match", CLUSTER_CASES)
def test_cluster_errors_name_file_path_and_line(tmp_path, text, location, line, match):
    _raises(load_cluster, _write(tmp_path, "cluster.yaml", text), location, line, match)


MODEL_CASES = [
    ("preset: llama-3.1-8\n", "preset", 1, r"unknown model id 'llama-3.1-8'; closest: llama-3.1-8b"),
    ("preset: llama-3.1-8b\nworkload:\n  batch: 0\n", "workload.batch", 3, r"greater than 0 \(got 0\)"),
    ("preset: llama-3.1-8b\nworkload: {weights: int3}\n", "workload.weights", 2, r"'int4' \(got 'int3'\)"),
    ("preset: llama-3.1-8b\nworkload: {weights: -4}\n", "workload.weights", 2, r"greater than 0"),
    ("preset: llama-3.1-8b\nworkload:\n  prompt_tokens: 4096\n  context: 1024\n", "workload.context", 4,
     r"must be >= prompt_tokens=4096 \(got 1024\)"),
    ("preset: llama-3.1-8b\nworkload:\n  phsae: decode\n", "workload.phsae", 3, r"unknown field 'phsae'; closest: phase"),
    ("name: x\n", None, None, r"exactly one of preset, architecture, hf_config, layers \(got none\)"),
    ("preset: llama-3.1-8b\nhf_config: a.json\n", None, None, r"exactly one of .* \(got preset, hf_config\)"),
    ("architecture:\n  num_hidden_layers: 2\n  hidden_size: 64\n  intermediate_size: 128\n"
     "  num_attention_heads: 4\n  num_key_value_heads: 3\n  vocab_size: 100\n",
     "architecture.num_key_value_heads", 6, r"must divide num_attention_heads=4 \(got 3\)"),
    ("architecture:\n  num_hidden_layers: 2\n  hidden_size: 64\n  intermediate_size: 128\n"
     "  num_attention_heads: 4\n  vocab_size: 100\n  num_local_experts: 2\n  num_experts_per_tok: 3\n",
     "architecture.num_experts_per_tok", 8, r"must be <= num_local_experts=2 \(got 3\)"),
    ("architecture:\n  num_hidden_layers: 2\n  hidden_size: 64\n  intermediate_size: 128\n"
     "  num_attention_heads: 4\n  vocab_size: 100\n  num_hiden_layers: 3\n",
     "architecture.num_hiden_layers", 7, r"unknown field 'num_hiden_layers'; closest: num_hidden_layers"),
    ("layers:\n  - {name: x, cost: {t4: .nan}, memory_gb: 1}\n", "layers[0].cost.t4", 2, r"finite number \(got nan\)"),
    ("layers:\n  - name: x\n    cost: {t4: 0.1}\n    memory_gb: 1\n    repeat: 0\n", "layers[0].repeat", 5, r"greater than 0"),
    ("layers:\n  - name: x\n    cost: {t4: -0.1}\n    memory_gb: 1\n", "layers[0].cost.t4", 3, r"greater than 0 \(got -0.1\)"),
    ("layers:\n  - name: x\n    cost: {}\n    memory_gb: 1\n", "layers[0].cost", 3, r"at least one GPU id or device name"),
    ("layers:\n  - name: x\n    cost: {t4: 0.1}\n    memory_gb: 1\n    kind: encoder\n", "layers[0].kind", 5, r"'embed', 'decoder' or 'head'"),
    ("layers:\n  - {name: x, cost: {t4: 0.1}, memory_gb: 1}\nworkload: {weights: fp8}\n", "workload.weights", 3,
     r"a measured profile \(layers:\) takes only batch, prompt_tokens, context, in_flight"),
]


@pytest.mark.parametrize("text, location, line, match", MODEL_CASES)
def test_model_errors_name_file_path_and_line(tmp_path, text, location, line, match):
    _raises(load_model, _write(tmp_path, "model.yaml", text), location, line, match)


@pytest.mark.parametrize("loader", [load_model, load_cluster])
@pytest.mark.parametrize("text, line, match", [
    ("devices:\n  - {name: a, gpu: rtx-3090\n", 3, r"malformed YAML: expected ',' or '}'"),
    ("a: 1\n  b: 2\n", 2, r"malformed YAML"),
    ("devices: !!python/object/apply:os.system [\"echo hi\"]\n", 1, r"malformed YAML: could not determine a constructor"),
    ("- 1\n- 2\n", 1, r"expected a mapping at the top level \(got a list\)"),
    ("", 1, r"expected a mapping at the top level \(got an empty file\)"),
    ("name: a\nname: b\n", 2, r"duplicate key 'name'"),
])
def test_malformed_yaml_names_file_and_line(tmp_path, loader, text, line, match):
    path = _write(tmp_path, "f.yaml", text)
    with pytest.raises(ConfigError, match=match) as info:
        loader(path)
    assert info.value.file == path and info.value.line == line


@pytest.mark.parametrize("loader", [load_model, load_cluster])
def test_missing_file_is_named(tmp_path, loader):
    path = str(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match=r"nope.yaml: file not found"):
        loader(path)


def test_hf_config_that_is_not_a_decoder_llm(tmp_path):
    (tmp_path / "bert.json").write_text(json.dumps(
        {"architectures": ["BertForMaskedLM"], "model_type": "bert", "hidden_size": 768}))
    path = _write(tmp_path, "m.yaml", "hf_config: bert.json\n")
    with pytest.raises(ConfigError, match=r"bert.json: architectures: not a decoder LLM config: .*BertForMaskedLM"):
        load_model(path)


@pytest.mark.parametrize("config, match", [
    ({"is_encoder_decoder": True, "model_type": "t5"}, r"not a decoder LLM config: is_encoder_decoder"),
    ({"architectures": ["LlamaForCausalLM"], "hidden_size": 64}, r"missing num_hidden_layers, intermediate_size"),
])
def test_hf_config_missing_fields(tmp_path, config, match):
    (tmp_path / "c.json").write_text(json.dumps(config))
    with pytest.raises(ConfigError, match=match):
        load_model(_write(tmp_path, "m.yaml", "hf_config: c.json\n"))


def test_hf_config_missing_or_malformed_json(tmp_path):
    with pytest.raises(ConfigError, match=r"absent.json: file not found"):
        load_model(_write(tmp_path, "m.yaml", "hf_config: absent.json\n"))
    (tmp_path / "bad.json").write_text('{\n  "hidden_size": ,\n}')
    with pytest.raises(ConfigError, match=r"bad.json:2: malformed JSON"):
        load_model(_write(tmp_path, "m2.yaml", "hf_config: bad.json\n"))


def test_profile_layer_missing_a_device_cost_names_layer_and_device(tmp_path):
    model = load_model(_write(tmp_path, "model.yaml", (
        "layers:\n"
        "  - {name: embed, kind: embed, cost: {a100-80gb: 0.001, l4: 0.001}, memory_gb: 1}\n"
        "  - name: block\n"
        "    repeat: 4\n"
        "    cost: {t4: 0.01, big: 0.002}\n"
        "    memory_gb: 1\n")))
    cluster = load_cluster(_write(tmp_path, "cluster.yaml",
                                  "devices:\n  - {name: big, gpu: a100-80gb}\n  - {name: small, gpu: l4}\n"))
    with pytest.raises(ConfigError) as info:
        build_tables(model, cluster)
    err = info.value
    assert (err.file, err.location, err.line) == (str(tmp_path / "model.yaml"), "layers[1].cost", 5)
    assert "layer 'block' has no cost for device 'small' (gpu 'l4')" in str(err)
