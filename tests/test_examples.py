"""The shipped examples load, and the README's main job is a real planning problem."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from partitioner.costs import build_tables
from partitioner.models import load_cluster, load_model
from partitioner.models.engines import resolve_engine

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
MODELS = sorted((EXAMPLES / "models").glob("*.yaml"))
CLUSTERS = sorted((EXAMPLES / "clusters").glob("*.yaml"))


def test_the_promised_files_exist():
    names = {p.name for p in MODELS} | {p.name for p in CLUSTERS}
    assert {"seed.yaml", "a100-l4-t4.yaml", "mixed-8gpu.yaml", "helix-a100-l4-t4.yaml", "qwen2.5-14b.yaml",
            "llama-3.1-8b.yaml", "llama-3.1-70b-int4.yaml", "custom-arch.yaml", "hf-qwen2.5-7b.yaml",
            "llama2-70b-helix-profile.yaml"} <= names
    assert (EXAMPLES / "models" / "qwen2.5-7b.config.json").is_file()


@pytest.mark.parametrize("path", CLUSTERS, ids=lambda p: p.name)
def test_every_cluster_loads(path):
    assert load_cluster(path).devices


@pytest.mark.parametrize("path", [p for p in MODELS if "helix" not in p.name], ids=lambda p: p.name)
def test_every_roofline_model_builds_on_the_seed_cluster(path):
    t = build_tables(load_model(path), load_cluster(EXAMPLES / "clusters" / "seed.yaml"))
    assert np.all(np.isfinite(t.cost)) and t.L >= 3


def test_seed_job_needs_several_devices_and_fits():
    """README main job: qwen2.5-14b on the seed cluster needs >= 2 devices and fits in total."""
    t = build_tables(load_model(EXAMPLES / "models" / "qwen2.5-14b.yaml"), load_cluster(EXAMPLES / "clusters" / "seed.yaml"))
    need = t.memory_gb.sum()
    assert need > t.capacity_gb.max()
    assert need < t.capacity_gb.sum()
    assert t.cost[3].sum() > 2 * t.cost[1].sum()  # the GTX 1070 is the slow card


def test_helix_profile_numbers_and_cluster():
    """Helix llama2_70b decode_bs2time.csv at batch 8: A100 1.4 ms, L4 7.0 ms, T4 7.5 ms per layer."""
    t = build_tables(load_model(EXAMPLES / "models" / "llama2-70b-helix-profile.yaml"),
                     load_cluster(EXAMPLES / "clusters" / "helix-a100-l4-t4.yaml"))
    assert t.L == 80 and t.G == 24
    assert sorted(set(np.round(t.cost[:, 0] * 1e3, 6))) == [1.4, 7.0, 7.5]
    assert t.gpu_names.count("a100-40gb") == 4 and t.gpu_names.count("l4") == 8 and t.gpu_names.count("t4") == 12
    off = ~np.eye(24, dtype=bool)
    hop = resolve_engine("generic").hop_overhead_ms / 1e3  # the engine's per-hop cost rides on every link
    assert np.allclose(t.latency_s[off], 1e-3 + hop) and np.all(t.bandwidth_Bps[off] == 0.125e9)


def test_rack_fits_llama_70b_int4():
    t = build_tables(load_model(EXAMPLES / "models" / "llama-3.1-70b-int4.yaml"),
                     load_cluster(EXAMPLES / "clusters" / "a100-l4-t4.yaml"))
    assert t.capacity_gb.max() < t.memory_gb.sum() < t.capacity_gb.sum()
