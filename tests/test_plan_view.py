"""The plan table numbers decoder layers as engines count them, and the console takes the terminal width."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from partitioner.cli import main

EX = Path(__file__).resolve().parents[1] / "examples"
ARGS = [str(EX / "models" / "llama-3.1-8b.yaml"), str(EX / "clusters" / "seed.yaml"), "--objective", "balanced"]


def test_decoder_numbers_match_the_engines_and_embed_and_head_are_named():
    r = CliRunner().invoke(main, ["plan", *ARGS], env={"COLUMNS": "200"})
    plan = json.loads(CliRunner().invoke(main, ["plan", *ARGS, "--json"]).stdout)
    first = 0
    for st in plan["stages"]:
        n = st["decoder_layers"]
        want = " + ".join(
            [*(["embed"] if st["embed"] else []),
             *([f"decoders {first}–{first + n - 1}"] if n > 1 else [f"decoder {first}"] if n == 1 else []),
             *(["lm_head"] if st["head"] else [])])
        assert want in r.stdout, (want, r.stdout)
        first += n
    assert first == 32  # Llama-3.1-8B's 32 decoder layers, numbered 0..31 as vLLM counts them
    assert "layer.31" not in r.stdout  # the layer-list names (embed at index 0) are not shown


def test_console_width_follows_the_terminal_when_piped():
    wide = CliRunner().invoke(main, ["plan", *ARGS], env={"COLUMNS": "220"}).stdout
    narrow = CliRunner().invoke(main, ["plan", *ARGS], env={"COLUMNS": "90"}).stdout
    assert max(map(len, wide.splitlines())) > 140  # not the old fixed 140 columns
    assert max(map(len, narrow.splitlines())) <= 90
    assert re.search(r"decode [\d,.]+ tokens/s", narrow)
