"""The version line of every launch plan and `--engine-version` (rules per release in engines.yaml)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from test_export_launch import plan_of

from partitioner.cli import main
from partitioner.errors import InputError
from partitioner.export import ENGINES, render
from partitioner.export.versions import release
from partitioner.jsonio import dumps
from partitioner.models.engines import resolve_engine

DOC = plan_of([("a0", "A"), ("b0", "B")], hosts={"A": "10.0.0.1", "B": "10.0.0.2"})


@pytest.mark.parametrize("engine", ENGINES)
def test_every_launch_plan_starts_with_the_release_it_is_written_for(engine: str) -> None:
    version, rules = release(engine)
    assert render(DOC, engine).text.splitlines()[0].startswith(f"# for {rules.get('label', '')}".rstrip())
    assert version in resolve_engine(engine).versions  # the same record the cost model reads
    assert render(DOC, engine, engine_version=version).text == render(DOC, engine).text


def test_unknown_release_and_snippet_targets_are_refused() -> None:
    with pytest.raises(InputError, match=r"--engine-version '0.1.0' is not a vLLM release .*\(known: 0.33.0"):
        render(DOC, "vllm", engine_version="0.1.0")
    with pytest.raises(InputError, match="applies to launch targets"):
        render(DOC, "megatron", engine_version="0.33.0")


def test_cli_engine_version(tmp_path) -> None:
    path = tmp_path / "plan.json"
    path.write_text(dumps(DOC))
    r = CliRunner().invoke(main, ["export", str(path), "--to", "vllm", "--engine-version", "0.33.0"])
    assert r.exit_code == 0 and r.stdout.startswith("# for vLLM 0.33.0\n")
    r = CliRunner().invoke(main, ["export", str(path), "--to", "vllm", "--engine-version", "9"])
    assert r.exit_code == 2 and "known: 0.33.0" in r.stderr and "Traceback" not in r.output


def test_vllm_0_11_orders_ray_ranks_by_ip_and_has_no_multiprocessing_launch() -> None:
    hosts = {"A": "10.0.0.1", "B": "10.0.0.2", "C": "10.0.0.3"}
    three = plan_of([("a0", "A"), ("b0", "B"), ("c0", "C"), ("c1", "C")], hosts=hosts)
    ords = {"a0": 0, "b0": 0, "c0": 0, "c1": 1}
    new = render(three, "vllm", ordinals=ords)
    assert any("random Ray node id" in c for c in new.cannot_express)  # 0.33.0: B and C in random order
    old = render(three, "vllm", ordinals=ords, engine_version="0.11.0")
    assert old.cannot_express == () and old.text.startswith("# for vLLM 0.11.0\n")  # fewer workers, then IP: B, C
    even = plan_of([("a0", "A"), ("b0", "B")], hosts=hosts)
    assert "--nnodes" in render(even, "vllm").text
    assert "--nnodes" not in render(even, "vllm", engine_version="0.11.0").text
    assert "ray start" in render(even, "vllm", engine_version="0.11.0").text
