"""Small fleet instances for the fleet tests: a tiny model, cheap GPU types with given prices."""

from __future__ import annotations

import random
from typing import Any

from partitioner.models import ModelSpec

TINY = {"name": "tiny-4l", "architecture": {
    "num_hidden_layers": 4, "hidden_size": 2048, "intermediate_size": 8192, "num_attention_heads": 16,
    "num_key_value_heads": 4, "vocab_size": 32000, "tie_word_embeddings": False},
    "workload": {"phase": "decode", "batch": 8, "prompt_tokens": 512, "context": 2048}}

# GPU ids with prices given here (not all have catalogue prices): dollars per hour
PRICES = {"gtx-1070": 0.08, "t4": 0.25, "l4": 0.78, "rtx-3060-12gb": 0.12, "rtx-3090": 0.39}


def tiny_model(**workload: Any) -> ModelSpec:
    data = dict(TINY)
    data["workload"] = {**TINY["workload"], **workload}
    return ModelSpec.model_validate(data)


def random_case(seed: int) -> dict[str, Any]:
    """A market of 1-3 GPU types with 1-2 cards each (3 types only every fourth case) and a target."""
    rng = random.Random(seed)
    kinds = 3 if seed % 4 == 0 else rng.choice([1, 2, 2])
    gpus = rng.sample(sorted(PRICES), kinds)
    market = {g: rng.choice([1, 2]) if kinds < 3 else 1 for g in gpus}
    mode = rng.choice(["cheapest", "cheapest", "most", "users"])
    tpot = rng.choice([None, 5.0, 20.0])
    return {"market": market, "mode": mode, "tpot_ms": tpot if mode != "users" else 20.0,
            "tokens": rng.choice([5_000.0, 15_000.0, 30_000.0, 60_000.0]), "users": rng.choice([16, 64, 256]),
            "budget": rng.choice([0.3, 0.8, 2.0])}
