"""Batch-dependent profile costs, kv_bytes_per_token, and the Helix bs2time converter."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from partitioner.cli import main
from partitioner.costs import build_tables
from partitioner.models import load_cluster, load_model

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).resolve().parent / "data" / "bs2time" / "tiny"
SHARED = Path(os.environ.get("PARTITIONER_SHARED") or ROOT / ".." / "shared")
HELIX = SHARED / "data" / "helix" / "simulator" / "model_manager" / "llama2_70b"
CLUSTER = "devices:\n  - {name: a, gpu: a100-40gb, node: n1}\n  - {name: b, gpu: l4, node: n2}\nlinks: {inter_node: 10gbe}\n"


def _converter():
    spec = importlib.util.spec_from_file_location("bs2time", ROOT / "examples" / "helix" / "bs2time_to_profile.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def _write(tmp_path: Path, model: str, cluster: str = CLUSTER) -> tuple[Path, Path]:
    (tmp_path / "m.yaml").write_text(model)
    (tmp_path / "c.yaml").write_text(cluster)
    return tmp_path / "m.yaml", tmp_path / "c.yaml"


PROFILE = """layers:
  - name: layer
    repeat: 4
    cost: {{a100-40gb: {{1: 0.001, 8: 0.002, 32: 0.004}}, l4: 0.005}}
    memory_gb: 2.0
    kv_bytes_per_token: {kv}
workload: {{batch: {batch}, context: 1000, in_flight: 2}}
"""


def test_batch_table_is_interpolated_linearly(tmp_path):
    m, c = _write(tmp_path, PROFILE.format(kv=1000, batch=20))
    t = build_tables(load_model(m), load_cluster(c))
    assert t.cost[0, 0] == pytest.approx(0.002 + (20 - 8) / (32 - 8) * 0.002)  # between 8 and 32
    assert t.cost[1, 0] == 0.005  # a scalar cost does not depend on the batch
    # memory_gb is the weights; the KV of batch 20 x in_flight 2 x context 1000 x 1000 B is added
    assert np.allclose(t.memory_gb, 2.0 + 1000 * 1000 * 20 * 2 / 1e9)
    assert t.batch == 20 and t.in_flight == 2 and t.context == 1000


def test_kv_bytes_per_token_defaults_to_zero_and_keeps_old_profiles(tmp_path):
    m, c = _write(tmp_path, "layers:\n  - {name: x, repeat: 2, cost: {l4: 0.01, a100-40gb: 0.005}, memory_gb: 3}\n")
    t = build_tables(load_model(m), load_cluster(c))
    assert np.all(t.memory_gb == 3.0) and np.all(t.kv_bytes_per_token == 0)
    code = CliRunner().invoke(main, ["plan", str(m), str(c), "--objective", "balanced", "--json"]).exit_code
    assert code == 0


@pytest.mark.parametrize("text, where", [
    (PROFILE.format(kv=0, batch=64), r"m.yaml:4: layers\[0\].cost.a100-40gb: batch 64 is outside the table's sizes 1..32"),
    ("layers:\n  - name: x\n    cost: {l4: {8: 0.1, 4: 0.2}}\n    memory_gb: 1\n",
     r"m.yaml:3: layers\[0\].cost.l4: batch sizes must increase \(got 4 after 8\)"),
    ("layers:\n  - name: x\n    cost: {l4: {8: 0.1, 16: -0.2}}\n    memory_gb: 1\n", r"layers\[0\].cost.l4\[16\]: .*greater than 0"),
    ("layers:\n  - name: x\n    cost: {l4: {}}\n    memory_gb: 1\n", r"layers\[0\].cost.l4: a batch table needs at least one"),
    ("layers:\n  - name: x\n    cost: {l4: 0.1}\n    memory_gb: 1\n    kv_bytes_per_token: -1\n",
     r"layers\[0\].kv_bytes_per_token: .*greater than or equal to 0"),
])
def test_bad_batch_tables_are_one_located_line(tmp_path, text, where):
    import re

    m, c = _write(tmp_path, text, CLUSTER if "a100" in text else "devices:\n  - {name: b, gpu: l4}\n")
    r = CliRunner().invoke(main, ["plan", str(m), str(c), "--objective", "balanced"])
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1 and re.search(where, r.stderr), r.stderr


def test_serve_searches_only_the_batches_the_tables_cover(tmp_path):
    import partitioner

    m, c = _write(tmp_path, PROFILE.format(kv=100_000, batch=8))
    p = partitioner.plan(m, c, objective="serve")
    assert 1 <= p.serving.batch <= 32 and {pt["batch"] for pt in p.frontier} <= set(range(1, 33))
    assert p.serving.max_sequences >= p.serving.batch * p.serving.in_flight


def test_converter_on_a_fixture_of_our_own(tmp_path):
    conv = _converter()
    text = conv.convert(FIXTURE, "llama-2-70b", gpus={"a100": "a100-40gb", "l4": "l4"})
    (tmp_path / "p.yaml").write_text(text)
    model = load_model(tmp_path / "p.yaml")
    entry = model.layers[0]
    assert entry.cost["a100-40gb"] == {1: 0.001, 4: 0.0012, 16: 0.002}  # ms -> s, the 0 row dropped
    assert entry.prefill_cost["l4"] == {100: 0.009, 1000: 0.07}
    assert entry.kv_bytes_per_token == 2 * 8 * 128 * 2 and entry.repeat == 80
    (tmp_path / "c.yaml").write_text(CLUSTER)
    t = build_tables(model, load_cluster(tmp_path / "c.yaml"))
    assert t.cost[1, 0] == pytest.approx(0.0044 + (8 - 4) / 12 * (0.006 - 0.0044))  # l4 at batch 8
    assert t.prefill_cost is not None and t.prefill_cost[0, 0] == pytest.approx(0.003 + 412 / 900 * 0.017)


def test_converter_rejects_a_bad_row(tmp_path):
    conv = _converter()
    (tmp_path / "a100").mkdir()
    (tmp_path / "a100" / "decode_bs2time.csv").write_text("0,0\n4,1\n2,1\n")
    with pytest.raises(SystemExit, match=r"decode_bs2time.csv:3: sizes must increase \(got 2 after 4\)"):
        conv.convert(tmp_path, "llama-2-70b", gpus={"a100": "a100-40gb"})


@pytest.mark.skipif(not HELIX.is_dir(), reason="../shared/data/helix is absent")
def test_converter_on_the_real_helix_tables(tmp_path):
    conv = _converter()
    out = tmp_path / "helix.yaml"
    assert conv.main(["--helix", str(HELIX.parent), "--out", str(out)]) == 0
    model = load_model(out)
    cluster = load_cluster(ROOT / "examples" / "clusters" / "helix-a100-l4-t4.yaml")
    t = build_tables(model, cluster)
    # Helix's README: LLaMA-70B decode at a batch of 8 takes 1.4 ms (A100), 7.0 ms (L4), 7.5 ms (T4)
    by_gpu = {g: t.cost[i, 0] for i, g in enumerate(t.gpu_names)}
    assert by_gpu["a100-40gb"] == pytest.approx(1.4e-3) and by_gpu["l4"] == pytest.approx(7.0e-3)
    assert by_gpu["t4"] == pytest.approx(7.5e-3)
