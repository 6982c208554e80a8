"""The Hugging Face path: a tiny random Llama from a config dict (hidden 32, 2 layers, vocab 128).

Skipped without torch or transformers. Nothing is downloaded: `from_config` builds random weights.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from partitioner.calibrate.measure import measure  # noqa: E402
from partitioner.calibrate.measure_parts import find_parts  # noqa: E402
from partitioner.calibrate.timings import read_timings  # noqa: E402
from partitioner.cli import main  # noqa: E402

CONFIG = {"model_type": "llama", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 128}


@pytest.fixture(scope="module")
def llama() -> Any:
    config = transformers.AutoConfig.for_model(**CONFIG)
    return transformers.AutoModelForCausalLM.from_config(config)


@pytest.fixture()
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIG), encoding="utf-8")
    return path


def cache_length(kwargs: dict[str, Any]) -> int:
    cache = kwargs.get("cache", kwargs.get("past_key_values"))
    return 0 if cache is None else int(cache.get_seq_length())


def test_detects_llama_parts(llama: Any) -> None:
    parts = find_parts(llama)
    assert (parts.embed_path, parts.layers_path, parts.head_path) == ("model.embed_tokens", "model.layers", "lm_head")
    assert len(parts.layers) == 2 and parts.vocab == 128


def test_decode_times_one_token_at_context_c_every_repeat(llama: Any) -> None:
    seen: list[tuple[int, int]] = []

    def record(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        ids = args[0] if args else kwargs["input_ids"]
        seen.append((cache_length(kwargs), ids.shape[1]))

    handle = llama.register_forward_pre_hook(record, with_kwargs=True)
    try:
        rows = measure(llama, phase="decode", batches=[2], tokens=[6], repeats=3, warmup=1)
    finally:
        handle.remove()
    assert [r.layer for r in rows] == ["embed", "0", "1", "lm_head"] and all(r.seconds > 0 for r in rows)
    assert seen == [(0, 5)] + [(5, 1)] * 4  # untimed 5-token prefix, then every step reads 5 + 1 = C


def test_cli_prefill_and_decode_from_config_json(config_file: Path, tmp_path: Path) -> None:
    for phase in ("prefill", "decode"):
        out = tmp_path / f"{phase}.csv"
        res = CliRunner().invoke(main, ["calibrate", "measure", "--hf-config", str(config_file), "--phase", phase,
                                        "--batch", "1,2", "--tokens", "4", "--repeats", "2", "--warmup", "1",
                                        "--label", "rtx-3090", "--out", str(out)])
        assert res.exit_code == 0, res.output
        rows = read_timings(out, num_layers=2)
        assert [(t.batch, t.layer) for t in rows] == [(b, n) for b in (1, 2) for n in ("embed", "0", "1", "lm_head")]
        assert {(t.phase, t.tokens, t.device) for t in rows} == {(phase, 4, "rtx-3090")}
        assert f"# model: LlamaForCausalLM from {config_file} (random weights); layers model.layers" in out.read_text()


@pytest.mark.parametrize(("content", "match"), [
    ("{", r"config.json:1: invalid JSON: Expecting property name"),
    ("[1]", r"config.json: must be a JSON object \(got list\)"),
    ('{"hidden_size": 8}', r"config.json: model_type: must be a string naming the architecture, e.g. 'llama' \(got None\)"),
    ('{"model_type": "no-such-arch"}', r"config.json: model_type 'no-such-arch' \(transformers .*\): cannot build a causal LM: "),
    ('{"model_type": "vit"}', r"config.json: model_type 'vit' \(transformers .*\): cannot build a causal LM: ValueError: "),
])
def test_bad_config_is_one_line(tmp_path: Path, content: str, match: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(content, encoding="utf-8")
    res = CliRunner().invoke(main, ["calibrate", "measure", "--hf-config", str(path), "--repeats", "1",
                                    "--out", str(tmp_path / "t.csv")])
    assert res.exit_code == 2, res.output
    assert len(res.stderr.strip().splitlines()) == 1
    assert re.search(match, res.stderr), res.stderr


def test_missing_config_file(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["calibrate", "measure", "--hf-config", str(tmp_path / "nope.json"),
                                    "--out", str(tmp_path / "t.csv")])
    assert res.exit_code == 2 and "nope.json: file not found" in res.stderr
