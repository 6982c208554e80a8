"""Resource limits by design: every bound fails fast with one line naming the limit and its knob."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from partitioner.errors import ConfigError, InputError, translate
from partitioner.limits import check_magnitude, limit
from partitioner.models import load_cluster, load_model
from partitioner.models.loader import parse_yaml
from partitioner.userfiles import read_user_text


def _bomb(levels: int = 9, width: int = 9) -> str:
    text = "a0: &a0 [" + ", ".join(["x"] * width) + "]\n"
    for i in range(1, levels + 1):
        text += f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]\n"
    return text


def test_alias_bomb_is_refused_quickly_with_the_limit_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """Quickly = without expanding: the size is computed once per distinct node (10 levels of 10
    here, not 9**10 expanded nodes), counted through the children listed."""
    from partitioner.models import loader

    listed = [0]
    real = loader._children

    def counted(node):  # type: ignore[no-untyped-def]
        out = real(node)
        listed[0] += len(out)
        return out

    monkeypatch.setattr(loader, "_children", counted)
    with pytest.raises(ConfigError, match=r"MAX_YAML_NODES = 1000000 \(raise it with .*PARTITIONER_MAX_YAML_NODES\)"):
        parse_yaml(_bomb(), "bomb.yaml")
    assert listed[0] < 1000  # the distinct nodes' children, not the expansion's millions


def test_small_aliases_still_work() -> None:
    data, _ = parse_yaml("base: &b {x: 1}\nuse: *b\n", "ok.yaml")
    assert data == {"base": {"x": 1}, "use": {"x": 1}}


def test_limit_is_raised_by_its_environment_variable(monkeypatch) -> None:
    monkeypatch.setenv("PARTITIONER_MAX_YAML_NODES", "10")
    with pytest.raises(ConfigError, match="MAX_YAML_NODES = 10"):
        parse_yaml(_bomb(2, 3), "b.yaml")
    monkeypatch.setenv("PARTITIONER_MAX_YAML_NODES", "lots")
    with pytest.raises(InputError, match="PARTITIONER_MAX_YAML_NODES must be a positive integer"):
        limit("MAX_YAML_NODES")


@pytest.mark.parametrize(("text", "message"), [
    ("name: &a [*a]\n", r"^s\.yaml:1: an alias refers to the collection that contains it"),
    ("m: &a {k: *a}\n", r"^s\.yaml:1: an alias refers"),
    ("x: " + "[" * 5000 + "]" * 5000 + "\n", r"^s\.yaml:1: nesting exceeds the limit MAX_YAML_DEPTH = 64"),
    ("x:\n" + "".join("  " * i + "- \n" for i in range(1, 80)), r"MAX_YAML_DEPTH"),
    ("a: 1\nb: x\x00y\n", r"^s\.yaml:2: column 5: control character U\+0000 is not allowed in YAML$"),
    ("a: 1\nb: \x1b[31m\n", r"^s\.yaml:2: column 4: control character U\+001B"),
    ("a: " + "9" * 400 + "\n", r"^s\.yaml:1: an integer of 400 digits exceeds the limit MAX_INT_DIGITS"),
    ("a: " + "9" * 5000 + "\n", r"an integer of 5000 digits"),
    ("a: [1, 2\n", r"^s\.yaml:\d+: malformed YAML: "),
    ("--- {a: 1}\n--- {b: 2}\n", r"malformed YAML: but found another document \(expected a single document"),
])
def test_hostile_yaml_is_one_located_line(text, message) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        parse_yaml(text, "s.yaml")
    assert "\n" not in str(info.value)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_layer_caps(tmp_path) -> None:
    rep = _write(tmp_path, "r.yaml", "layers:\n  - {name: l, cost: {rtx-3090: 0.001}, memory_gb: 0.1, repeat: 100000000}\n")
    with pytest.raises(ConfigError, match=r"r\.yaml:2: layers\[0\]\.repeat: .*MAX_LAYERS = 1024"):
        load_model(rep)
    arch = ("architecture: {num_hidden_layers: %s, hidden_size: 64, intermediate_size: 128, "
            "num_attention_heads: 4, vocab_size: 100}\n")
    with pytest.raises(ConfigError, match=r"architecture\.num_hidden_layers: .*MAX_LAYERS"):
        load_model(_write(tmp_path, "a.yaml", arch % 100_000_000))
    assert load_model(_write(tmp_path, "b.yaml", arch % 1024)).arch.num_hidden_layers == 1024
    hf = _write(tmp_path, "c.json", '{"num_hidden_layers": 100000000, "hidden_size": 64, "intermediate_size": 128, '
                                    '"num_attention_heads": 4, "vocab_size": 100}')
    with pytest.raises(ConfigError, match=r"hf_config: .*MAX_LAYERS"):
        load_model(_write(tmp_path, "h.yaml", f"hf_config: {hf.name}\n"))


def test_device_cap(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PARTITIONER_MAX_DEVICES", "2")
    text = "devices:\n" + "".join(f"  - {{name: g{i}, gpu: rtx-3090}}\n" for i in range(3))
    # refused while read, at the item past the limit (line 4), not after parsing every device
    with pytest.raises(ConfigError, match=r"c\.yaml:4: devices: more than 2 devices exceeds the limit MAX_DEVICES = 2"):
        load_cluster(_write(tmp_path, "c.yaml", text))


@pytest.mark.parametrize(("field", "value", "message"), [
    ("weights", "1e-320", "subnormal"),
    ("weights", ".inf", "finite"),
    ("batch", "1.0e+40", "vocab|integer|valid|less than"),
])
def test_absurd_numbers_in_a_model(tmp_path, field, value, message) -> None:
    path = _write(tmp_path, "m.yaml", f"preset: llama-3.1-8b\nworkload: {{{field}: {value}}}\n")
    with pytest.raises(ConfigError, match=message):
        load_model(path)


def test_vocab_1e40_is_refused(tmp_path) -> None:
    path = _write(tmp_path, "v.yaml", "architecture: {num_hidden_layers: 2, hidden_size: 64, intermediate_size: 128, "
                                      "num_attention_heads: 4, vocab_size: 1.0e+40}\n")
    with pytest.raises(ConfigError, match=r"architecture\.vocab_size"):
        load_model(path)


def test_inputs_must_be_regular_files_of_bounded_size(tmp_path, monkeypatch) -> None:
    for device in ("/dev/zero", "/dev/null", "/dev/stdin"):
        if os.path.exists(device):
            with pytest.raises(ConfigError, match="not a regular file"):
                read_user_text(device)
    fifo = tmp_path / "p.csv"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match=r"p\.csv: is a FIFO, not a regular file"):
        read_user_text(fifo)  # would block forever if it were opened
    loop = tmp_path / "loop.yaml"
    loop.symlink_to(loop)
    with pytest.raises(ConfigError, match=r"loop\.yaml: cannot read"):
        read_user_text(loop)
    monkeypatch.setenv("PARTITIONER_MAX_INPUT_BYTES", "10")
    big = _write(tmp_path, "big.csv", "x" * 11)
    with pytest.raises(ConfigError, match=r"big\.csv: its size \(11 bytes\) exceeds the limit MAX_INPUT_BYTES = 10"):
        read_user_text(big)
    (tmp_path / "u16.json").write_bytes("{}".encode("utf-16"))
    with pytest.raises(ConfigError, match=r"not utf-8 text.*UTF-16"):
        read_user_text(tmp_path / "u16.json", limit=100)


def test_hf_config_gets_the_same_treatment(tmp_path) -> None:
    deep = _write(tmp_path, "deep.json", "[" * 5000 + "]" * 5000)
    with pytest.raises(ConfigError, match="MAX_YAML_DEPTH"):
        load_model(_write(tmp_path, "a.yaml", f"hf_config: {deep.name}\n"))
    with pytest.raises(ConfigError, match="not a regular file"):
        load_model(_write(tmp_path, "z.yaml", "hf_config: /dev/zero\n"))
    nan = _write(tmp_path, "nan.json", '{"num_hidden_layers": NaN}')
    with pytest.raises(ConfigError, match="NaN is not JSON"):
        load_model(_write(tmp_path, "n.yaml", f"hf_config: {nan.name}\n"))


def test_magnitudes() -> None:
    assert check_magnitude("x", 0.0) == 0.0 and check_magnitude("x", 1e18) == 1e18
    for bad in (1e-320, 1e19, float("nan"), float("inf")):
        with pytest.raises(InputError):
            check_magnitude("x", bad)


@pytest.mark.parametrize("exc", [
    RecursionError("maximum recursion depth exceeded"), OverflowError("intermediate overflow in fsum"),
    MemoryError(), b"x".decode("utf-16", errors="strict") if False else UnicodeDecodeError(
        "utf-8", b"\xff", 0, 1, "invalid start byte"),
    ValueError("Exceeds the limit (4300 digits) for integer string conversion"),
    RuntimeError("Symlink loop from '/tmp/x'"), FloatingPointError("overflow"), ValueError("embedded null byte"),
])
def test_translate_maps_what_input_can_cause(exc) -> None:
    mapped = translate(exc)
    assert mapped is not None and mapped.exit_code == 2 and "\n" not in str(mapped)


def test_translate_leaves_bugs_alone() -> None:
    assert translate(KeyError("x")) is None and translate(TypeError("x")) is None
    import numpy as np

    assert translate(np.linalg.LinAlgError("Singular matrix")) is not None


def test_micro_batch_cap_names_the_limit() -> None:
    from click.testing import CliRunner

    from partitioner.cli import main

    repo = Path(__file__).resolve().parents[1]
    res = CliRunner().invoke(main, ["plan", str(repo / "examples/models/qwen2.5-14b.yaml"),
                                    str(repo / "examples/clusters/seed.yaml"), "--objective", "balanced", "--M", "1000001"])
    assert res.exit_code == 2
    assert res.stderr == ("error: M = 1000001: the number of micro-batches exceeds the limit MAX_MICROBATCHES = "
                          "1000000 (raise it with the environment variable PARTITIONER_MAX_MICROBATCHES)\n")
