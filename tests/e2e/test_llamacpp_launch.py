"""Exported llama.cpp launches run on a real llama.cpp (CPU build, tests/e2e/build_llamacpp.sh).

For each plan the test renders the llama.cpp export, runs every per-host script and the
llama-server script exactly as written, with only PATH changed: it puts a directory first
whose `llama-server` and `ggml-rpc-server` record what they were started with and then run the
real binaries. There are no GPUs, so the CUDA devices of the llama-server host are stood in by
rpc-servers the test starts on 127.0.0.1: the `llama-server` wrapper rewrites `--device CUDAk`
into the next RPC device (appending the stand-in's endpoint to `--rpc`), sets llama-server's
port (LLAMA_ARG_PORT; the line has none) and its log verbosity (LLAMA_ARG_LOG_VERBOSITY, so
that `load_tensors: layer N assigned to device X` is logged). Hosts are loopback addresses
127.0.0.x; every process is started and stopped here, each wait is bounded.

Checked per plan: llama.cpp's own log places every decoder layer and the output layer on the
device the plan gives it (name -> endpoint from llama.cpp's `using device NAME (ENDPOINT)` line,
endpoint -> node and CUDA ordinal from what the scripts started, ordinal -> plan device), and a
completion request returns tokens.

Needs PARTITIONER_LLAMACPP_BIN (the directory holding ggml-rpc-server and llama-server); without
it the tests skip, unless PARTITIONER_E2E_REQUIRED=1 (set by .ci/run), where they fail.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_export_launch import plan_of

from partitioner.export import render

pytestmark = pytest.mark.e2e

BIN = os.environ.get("PARTITIONER_LLAMACPP_BIN", "")
HERE = Path(__file__).parent
READY_S = 120  # any one wait: a server listening, llama-server healthy, a completion
LAYER = re.compile(r"load_tensors: layer +(\d+) assigned to device (\S+?),")
USING = re.compile(r"using device (\S+) \(([^)]*)\)")

WRAP_RPC = """#!/usr/bin/env bash
# record how the script started this rpc-server, then run the real one
echo "$(printf '%q ' "$@")CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-}" >> "$E2E_LOG_DIR/rpc-started.txt"
exec "$E2E_REAL_BIN/ggml-rpc-server" "$@"
"""

WRAP_SERVER = """#!/usr/bin/env python3
# CUDA<k> of --device -> the next RPC device, on the stand-in rpc-server of ordinal k
import json, os, sys
args = sys.argv[1:]
stand_in = json.loads(os.environ["E2E_CUDA_STAND_INS"])  # {"0": "127.0.0.1:PORT", ...}
rpc = args[args.index("--rpc") + 1].split(",") if "--rpc" in args else []
dev_at = args.index("--device") + 1
names = []
for name in args[dev_at].split(","):
    if name.startswith("CUDA"):
        rpc.append(stand_in[name[4:]])
        name = f"RPC{len(rpc) - 1}"
    names.append(name)
args[dev_at] = ",".join(names)
if "--rpc" in args:
    args[args.index("--rpc") + 1] = ",".join(rpc)
elif rpc:
    args[dev_at - 1:dev_at - 1] = ["--rpc", ",".join(rpc)]  # --rpc before --device (common/arg.cpp)
with open(os.path.join(os.environ["E2E_LOG_DIR"], "server-argv.json"), "w") as f:
    json.dump({"argv": sys.argv[1:], "ran": args}, f)
os.environ["LLAMA_ARG_LOG_VERBOSITY"] = "10"
os.execv(os.path.join(os.environ["E2E_REAL_BIN"], "llama-server"), ["llama-server", *args])
"""


def _free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _listening(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    end = time.monotonic() + 15
    for p in procs:
        try:
            p.wait(timeout=max(0.1, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=10)


@pytest.fixture(scope="module")
def bin_dir() -> Path:
    if not (BIN and (Path(BIN) / "llama-server").exists() and (Path(BIN) / "ggml-rpc-server").exists()):
        msg = ("llama.cpp binaries not found: run tests/e2e/build_llamacpp.sh CACHE and set "
               "PARTITIONER_LLAMACPP_BIN=CACHE/bin")
        if os.environ.get("PARTITIONER_E2E_REQUIRED") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    return Path(BIN)


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("gguf")
    from tiny_gguf import write_tiny_llama

    return write_tiny_llama(tmp_path_factory.mktemp("model") / "tiny-llama.gguf")


META = {"workload": {"weights": "fp32", "kv_cache": "fp16", "activations": "fp32", "context": 256}}
A, B, C = "127.0.0.1", "127.0.0.2", "127.0.0.3"


def _head_only(doc: dict) -> dict:
    """The last stage keeps only the LM head (0 decoder layers)."""
    *_, before, last = doc["stages"]
    n = doc["num_layers"]
    before["end"], before["last_layer"] = n - 1, f"l{n - 2}"
    before["decoder_layers"] += last["decoder_layers"]
    last["start"], last["first_layer"], last["decoder_layers"] = n - 1, f"l{n - 1}", 0
    return doc


# name: (stages as (device, node), CUDA ordinal per device, node addresses, serving); the llama-server
# host gets a stand-in for every ordinal up to its largest, so a skipped ordinal is an unused device
PLANS = {
    # one host, two GPUs in reverse order
    "one-host-free-order": ([("g1", "head"), ("g0", "head")], {"g0": 0, "g1": 1}, {"head": A}, None),
    # one host, GPU 1 left unused
    "unused-device": ([("g2", "head"), ("g0", "head")], {"g0": 0, "g2": 2}, {"head": A}, None),
    # two hosts, one GPU each
    "two-hosts": ([("h0", "head"), ("b0", "box")], {"h0": 0, "b0": 0}, {"head": A, "box": B}, None),
    # a remote host with two devices, in reverse ordinal order, and four slots
    "remote-two-devices": ([("h0", "head"), ("b1", "box"), ("b0", "box")], {"h0": 0, "b0": 0, "b1": 1},
                           {"head": A, "box": B}, {"max_sequences": 4, "context": 256}),
    # three hosts, four devices, two of them on the llama-server host
    "three-hosts": ([("h1", "head"), ("h0", "head"), ("b0", "box"), ("c0", "cube")], {"h0": 0, "h1": 1, "b0": 0, "c0": 0},
                    {"head": A, "box": B, "cube": C}, None),
    # the last stage holds only the LM head (the output layer alone on the remote device)
    "head-only-stage": ([("h0", "head"), ("b0", "box"), ("c0", "cube")], {"h0": 0, "b0": 0, "c0": 0},
                        {"head": A, "box": B, "cube": C}, None),
}


def _plan(name: str, model: Path) -> tuple[dict, dict[str, int]]:
    order, ords, hosts, serving = PLANS[name]
    doc = plan_of(order, n_dec=12, hosts=hosts, meta={**META, "model_id": str(model)})
    if serving:
        doc["serving"] = serving
    if name == "head-only-stage":
        doc = _head_only(doc)
    return doc, ords


def _expected(doc: dict) -> dict[int, str]:
    """Plan device of every llama.cpp layer position: decoder layers by stage, the output layer
    (position n_layer) on the stage holding the LM head."""
    out: dict[int, str] = {}
    pos = 0
    for st in doc["stages"]:
        for _ in range(st["decoder_layers"]):
            out[pos] = st["device"]
            pos += 1
    out[pos] = doc["stages"][-1]["device"]
    return out


@pytest.fixture
def run_dir(tmp_path: Path, bin_dir: Path) -> Iterator[tuple[Path, dict[str, str], list[subprocess.Popen]]]:
    wrap = tmp_path / "bin"
    wrap.mkdir()
    for name, text in (("ggml-rpc-server", WRAP_RPC), ("llama-server", WRAP_SERVER)):
        (wrap / name).write_text(text)
        (wrap / name).chmod(0o755)
    logs = tmp_path / "logs"
    logs.mkdir()
    env = {"PATH": f"{wrap}:{os.environ['PATH']}", "HOME": str(tmp_path), "E2E_REAL_BIN": str(bin_dir),
           "E2E_LOG_DIR": str(logs)}
    procs: list[subprocess.Popen] = []
    try:
        yield tmp_path, env, procs
    finally:
        _stop(procs)


def _start(cmd: list[str], env: dict[str, str], log: Path, cwd: Path) -> subprocess.Popen:
    with open(log, "w") as f:
        return subprocess.Popen(cmd, env=env, stdout=f, stderr=subprocess.STDOUT, cwd=cwd, start_new_session=True)


def _wait(what: str, ok, procs: list[subprocess.Popen], logs: list[Path]) -> None:
    end = time.monotonic() + READY_S
    while time.monotonic() < end:
        if ok():
            return
        if any(p.poll() is not None for p in procs):
            break
        time.sleep(0.5)
    tails = "\n".join(f"--- {p.name}\n" + p.read_text(errors="replace")[-3000:] for p in logs if p.exists())
    pytest.fail(f"{what} did not happen within {READY_S} s\n{tails}")


@pytest.mark.parametrize("name", list(PLANS))
def test_exported_llamacpp_launch_places_every_layer_as_planned(name: str, model: Path, run_dir) -> None:
    tmp, env, procs = run_dir
    doc, ords = _plan(name, model)
    out = render(doc, "llamacpp", ordinals=ords)
    assert not out.cannot_express, out.cannot_express
    head = doc["stages"][0]["node"]
    # stand-ins for the llama-server host's CUDA devices: one rpc-server per ordinal up to the largest used
    stand_in: dict[str, str] = {}
    for k in range(1 + max(ords[st["device"]] for st in doc["stages"] if st["node"] == head)):
        port = _free_port()
        stand_in[str(k)] = f"127.0.0.1:{port}"
        log = tmp / f"stand-in-cuda{k}.log"
        procs.append(_start([f"{env['E2E_REAL_BIN']}/ggml-rpc-server", "--host", "127.0.0.1", "--port", str(port)],
                            env, log, tmp))
    env = {**env, "E2E_CUDA_STAND_INS": json.dumps(stand_in), "LLAMA_ARG_PORT": str(_free_port())}
    logs = [tmp / f"{n}.log" for n, _ in out.scripts]
    for (script, text), log in zip(out.scripts, logs, strict=True):
        path = tmp / script
        path.write_text(text)
        procs.append(_start(["bash", str(path)], env, log, tmp))
        if "llama-server" not in text:  # a host's rpc-servers: its script says when all listen
            _wait(f"{script} ready", lambda log=log: "ready:" in log.read_text(), procs, logs)
    for ep in stand_in.values():
        _wait(f"stand-in {ep} listening", lambda ep=ep: _listening("127.0.0.1", int(ep.split(":")[1])), procs, logs)
    port = int(env["LLAMA_ARG_PORT"])

    def healthy() -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    _wait("llama-server healthy", healthy, procs, logs)
    body = json.dumps({"prompt": "hello world", "n_predict": 4, "ignore_eos": True, "temperature": 0}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/completion", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=READY_S) as r:
        answer = json.load(r)
    assert answer["tokens_predicted"] == 4 and answer["tokens_evaluated"] >= 1

    server_log = logs[-1].read_text(errors="replace")
    endpoint_of = dict(USING.findall(server_log))  # llama.cpp's device name -> its endpoint
    # endpoint -> (node, CUDA ordinal): what the scripts started (wrapper record), and the stand-ins
    started = (tmp / "logs" / "rpc-started.txt").read_text().splitlines() if (tmp / "logs" / "rpc-started.txt").exists() else []
    node_of_addr = {a: n for n, a in PLANS[name][2].items()}
    gpu_at: dict[str, tuple[str, int]] = {f"127.0.0.1:{ep.split(':')[1]}": (head, int(k)) for k, ep in stand_in.items()}
    for line in started:
        args = line.split()
        host, port_ = args[args.index("--host") + 1], args[args.index("--port") + 1]
        gpu_at[f"{host}:{port_}"] = (node_of_addr[host], int(line.rsplit("CUDA_VISIBLE_DEVICES=", 1)[1]))
    device_at = {(st["node"], ords[st["device"]]): st["device"] for st in doc["stages"]}
    placed = {int(n): device_at[gpu_at[endpoint_of[dev]]] for n, dev in LAYER.findall(server_log)}
    assert placed == _expected(doc), (placed, out.text)
    assert len(started) == sum(1 for st in doc["stages"] if st["node"] != head)  # one rpc-server per remote stage
