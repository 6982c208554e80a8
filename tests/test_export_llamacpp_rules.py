"""llama.cpp launch rules found by running the exports on a real build (see tests/e2e): the slot
cap, IPv6 endpoints, host-name warnings and the per-host scripts' background servers."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from test_export_launch import plan_of

from partitioner.errors import InputError
from partitioner.export import render
from partitioner.export.llamacpp import MAX_SEQ

HOSTS = {"head": "10.0.0.1", "box": "10.0.0.2"}


def _arg(argv: tuple[str, ...], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def _served(seqs: int, context: int = 4096) -> dict:
    doc = plan_of([("h0", "head"), ("b0", "box"), ("b1", "box")], hosts=HOSTS)
    doc["serving"] = {"max_sequences": seqs, "context": context}
    return doc


@pytest.mark.parametrize(("seqs", "np_", "capped"), [(419, MAX_SEQ, True), (256, 256, False), (12, 12, False)])
def test_slots_capped_at_llama_max_seq_with_context_to_match(seqs: int, np_: int, capped: bool) -> None:
    # src/llama-cparams.h LLAMA_MAX_SEQ = 256; each slot gets n_ctx / n_seq_max (src/llama-context.cpp)
    out = render(_served(seqs), "llamacpp", ordinals={"h0": 0, "b0": 0, "b1": 1})
    serve = out.steps[-1].argv
    assert int(_arg(serve, "-np")) == np_ and int(_arg(serve, "-c")) == np_ * 4096
    assert any("LLAMA_MAX_SEQ" in w for w in out.warnings) == capped


def test_ipv6_endpoints_are_refused_with_one_line() -> None:
    doc = plan_of([("h0", "head"), ("b0", "box")], hosts={"head": "10.0.0.1", "box": "fd00::2"})
    with pytest.raises(InputError, match=r"node 'box' address 'fd00::2'.*cannot be IPv6") as err:
        render(doc, "llamacpp")
    assert "\n" not in str(err.value)
    ok = plan_of([("h0", "head"), ("b0", "box")], hosts=HOSTS)
    with pytest.raises(InputError, match=r"--rpc-endpoint b0=\[::1\]:50052: .*IPv6 is not supported"):
        render(ok, "llamacpp", endpoints={"b0": "[::1]:50052"})
    assert "--rpc 10.0.0.9:7000 " in render(ok, "llamacpp", endpoints={"b0": "10.0.0.9:7000"}).text


def test_node_names_that_are_not_host_names_are_warned_about() -> None:
    doc = plan_of([("h0", "head"), ("b0", "my box")], hosts={"head": None, "my box": None})
    out = render(doc, "llamacpp")
    assert any("node names ['my box'] are not host names" in w for w in out.warnings)
    named = plan_of([("h0", "head"), ("b0", "box")], hosts={"head": None, "box": None})
    assert not any("not host names" in w for w in render(named, "llamacpp").warnings)


def test_scripts_start_every_rpc_server_in_the_background_and_wait_for_it() -> None:
    out = render(plan_of([("h0", "head"), ("b0", "box"), ("b1", "box")], hosts=HOSTS), "llamacpp",
                 ordinals={"h0": 0, "b0": 0, "b1": 1})
    (box_name, box), (head_name, head) = out.scripts
    assert (box_name, head_name) == ("01-box.sh", "02-head.sh")
    lines = box.splitlines()
    starts = [i for i, x in enumerate(lines) if "ggml_rpc_server_bin" in x and x.endswith(" &")]
    assert len(starts) == 2  # both servers, in the background
    assert lines[-1] == "wait" and lines[-4:-2] == ["wait_port 10.0.0.2 50052", "wait_port 10.0.0.2 50053"]
    assert "--host 10.0.0.2" in lines[starts[0]] and "CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=1" in lines[starts[1]]
    assert 'command -v ggml-rpc-server || command -v rpc-server' in box
    serve = head.splitlines()
    k = next(i for i, x in enumerate(serve) if "llama-server" in x)
    assert serve[k - 2:k] == ["wait_port 10.0.0.2 50052", "wait_port 10.0.0.2 50053"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_readiness_check_gives_up_when_nothing_listens(tmp_path) -> None:
    out = render(plan_of([("h0", "head"), ("b0", "box")], hosts={"head": "127.0.0.1", "box": "127.0.0.1"}), "llamacpp",
                 endpoints={"b0": "127.0.0.1:1"})
    head = dict(out.scripts)["02-head.sh"]
    fast = head.replace("seq 120", "seq 2")  # two tries instead of two minutes
    r = subprocess.run(["bash", "-c", fast], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert r.returncode == 1 and "nothing listens on 127.0.0.1:1 after 120 tries" in r.stderr
