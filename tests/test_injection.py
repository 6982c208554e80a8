"""Names are data, never code: every export target's output, for a single pipeline and for
replicas, is piped through a real bash with stub binaries on PATH, and no injected command runs.

`bash -n` would prove nothing (a newline in a comment yields a valid script that runs the next
line), so the scripts are executed: PATH holds only recording stubs for the engines' binaries, and
`command_not_found_handle` records any other command. A hostile payload is the command `pwned`;
the test fails if it was ever run, or if a launch command's argument vector differs from the
`Step` the exporter planned (a name split into two arguments). Control characters are refused at
load (cluster.yaml, plan.json, file names) and escaped in comments if they get past it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_export_replicas import META, deployment
from test_export_tp import tp_plan

from partitioner.errors import ConfigError
from partitioner.export import TARGETS, render
from partitioner.export.load import parse_plan

REPO = Path(__file__).resolve().parents[1]
BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="needs bash")

# shell metacharacters a name may hold (they pass loading) and control characters it may not
META_NAMES = ["h;pwned;$(pwned)`pwned`", "a' ; pwned ; '|pwned", 'b" ; pwned ; "&&pwned>pwned']
CONTROL_NAMES = ["h1\npwned H1", "x\x1b[2J\rpwned\x85\u2028"]
ENGINE_BINARIES = ("vllm", "python", "python3", "ray", "mpirun", "llama-server", "rpc-server", "trtllm-serve",
                   "trtllm-llmapi-launch", "sglang", "deepspeed", "torchrun")

# each call is one file in $RECORD: argv NUL-separated (bash stubs: no interpreter start-up per call)
_PRELUDE = """command_not_found_handle() { printf '%s\\0' missing "$@" > "$RECORD/$BASHPID-$RANDOM$RANDOM"; return 127; }
"""
_STUB = """#!{bash}
printf '%s\\0' ran "${{0##*/}}" "$@" > "$RECORD/$BASHPID-$RANDOM$RANDOM"
"""


def _stubs(where: Path, names: set[str]) -> Path:
    """A PATH directory: a recording stub per engine binary (argv as JSON, one line), plus `cat`."""
    bin_dir = where / "bin"
    bin_dir.mkdir()
    stub = _STUB.format(bash=BASH)
    for name in names | set(ENGINE_BINARIES):
        path = bin_dir / name
        path.write_text(stub)
        path.chmod(0o755)
    cat = shutil.which("cat")
    assert cat is not None
    (bin_dir / "cat").symlink_to(cat)
    return bin_dir


def _run_bash(text: str, where: Path, binaries: set[str]) -> list[list[str]]:
    """Run `text` with bash in a fresh directory, PATH = stubs only; the recorded calls, each
    ``["ran", argv...]`` or ``["missing", argv...]``."""
    run_dir = where / f"run{len(list(where.iterdir()))}"
    record = run_dir / "record"
    record.mkdir(parents=True)
    bin_dir = where / "bin" if (where / "bin").exists() else _stubs(where, binaries)
    env = {"PATH": str(bin_dir), "RECORD": str(record), "HOME": str(run_dir)}
    subprocess.run([BASH, "--norc", "--noprofile", "-s"], input=_PRELUDE + text, text=True, cwd=run_dir, env=env,
                   capture_output=True, timeout=60, check=False)
    assert not (run_dir / "pwned").exists()
    calls = [f.read_bytes().decode().split("\0")[:-1] for f in record.iterdir()]
    return [c for c in calls if c]  # a stub still writing its record when bash ended leaves it empty


def _check(out, where: Path) -> None:  # type: ignore[no-untyped-def]
    binaries = {s.argv[0] for s in out.steps}
    planned = [list(s.argv) for s in out.steps]
    for text in [out.text, *(t for _, t in out.scripts)]:
        for kind, *argv in _run_bash(text, where, binaries):
            assert argv[0] != "pwned", f"injected command ran: {argv!r}"
            if kind == "ran":
                assert argv in planned, f"a command ran that the exporter did not plan: {argv!r}"


def _single(name: str) -> dict:
    doc = tp_plan([(["g0", "g1"], name), ([f"{name}-g2"], "h-two")], meta=META)
    doc["model"] = f"model {name}"
    return doc


def _replicas(name: str) -> dict:
    a = tp_plan([(["g0", "g1"], "h0")], meta=META)
    b = tp_plan([(["g2", "g3"], name)], meta=META)
    return deployment([a, b], [0.5, 0.5])


@pytest.mark.parametrize("target", TARGETS)
def test_shell_metacharacters_in_names_stay_one_argument(target: str, tmp_path: Path) -> None:
    for k, name in enumerate(META_NAMES):
        for make in (_single, _replicas):
            where = tmp_path / f"{make.__name__}{k}"
            where.mkdir()
            _check(render(make(name), target), where)


@pytest.mark.parametrize("target", TARGETS)
def test_control_characters_past_validation_are_escaped_in_comments(target: str, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Defence in depth: with plan.json's name check switched off, a newline still cannot end a comment."""
    from partitioner.export import load

    monkeypatch.setattr(load, "_text", lambda value: value)
    monkeypatch.setattr(load, "_host", lambda value: value)
    for k, name in enumerate(CONTROL_NAMES):
        for make in (_single, _replicas):
            where = tmp_path / f"{make.__name__}{k}"
            where.mkdir()
            out = render(make(name), target)
            assert "\x1b" not in out.text and "\x85" not in out.text
            _check(out, where)


@pytest.mark.parametrize("name", CONTROL_NAMES)
def test_plan_json_refuses_control_characters_in_names(name: str) -> None:
    with pytest.raises(ConfigError, match="control characters"):
        parse_plan(_single(name))
    with pytest.raises(ConfigError, match=r"replicas\[1\]\.\w+\[0\]\.node: must not contain control"):
        render(_replicas(name), "vllm")


def test_plan_json_refuses_a_shell_host_and_a_missing_format() -> None:
    doc = _single("h")
    doc["hosts"] = [{"node": "h", "address": "1.2.3.4;id", "devices": ["g0", "g1"]}]
    with pytest.raises(ConfigError, match=r"hosts\[0\]\.address: .*IP address or host name"):
        parse_plan(doc)
    del doc["format"]
    with pytest.raises(ConfigError, match="format: Field required"):
        parse_plan(doc)


def test_deploy_vllm_example_runs_no_injected_command(tmp_path: Path) -> None:
    for k, name in enumerate(META_NAMES[:4]):
        where = tmp_path / f"case{k}"
        where.mkdir()
        plan = where / "plan.json"
        plan.write_text(json.dumps(_replicas(name)))
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        res = subprocess.run([sys.executable, str(REPO / "examples" / "deploy_vllm.py"), str(plan), str(where / "out")],
                             capture_output=True, text=True, env=env, timeout=120, check=False)
        out = render(_replicas(name), "vllm")
        if res.returncode != 0:  # refused as not launchable: then it printed no script at all
            assert not (where / "out").exists()
            continue
        for script in sorted((where / "out").glob("*.sh")):
            for kind, *argv in _run_bash(script.read_text(), where, {s.argv[0] for s in out.steps}):
                assert argv[0] != "pwned" and (kind == "missing" or argv in [list(s.argv) for s in out.steps])


CLUSTER = "name: c\ndevices:\n  - {name: g0, gpu: l4, node: NODE}\n"


@pytest.mark.parametrize(("text", "where"), [
    (CLUSTER.replace("NODE", '"box\\npwned"'), "c.yaml:3: devices[0].node: must not contain control characters (got \\x0a"),
    (CLUSTER.replace("name: c", 'name: "c\\e[2J"').replace("NODE", "a"), "c.yaml:1: name: must not contain control characters (got \\x1b"),
    (CLUSTER.replace("NODE", "a") + 'nodes: {"a\\x9b": {address: 1.2.3.4}}\n', "c.yaml:4: nodes: must not contain control characters (got \\x9b"),
    (CLUSTER.replace("NODE", "a") + "nodes: {a: {address: '1.2.3.4;id'}}\n", "c.yaml:4: nodes.a.address: must be an IP address"),
])
def test_load_refuses_control_characters_and_shell_hosts(text: str, where: str, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from partitioner.cli import main

    monkeypatch.chdir(tmp_path)
    Path("c.yaml").write_text(text)
    res = CliRunner().invoke(main, ["plan", str(REPO / "examples/models/llama-3.1-8b.yaml"), "c.yaml"])
    assert res.exit_code == 2 and res.stderr.count("\n") == 1 and f"error: {where}" in res.stderr, res.stderr


def test_a_file_name_with_a_newline_is_refused_by_name(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from partitioner.cli import main

    model = tmp_path / "m\npwned.yaml"
    model.write_text((REPO / "examples/models/llama-3.1-8b.yaml").read_text())
    res = CliRunner().invoke(main, ["plan", str(model), str(REPO / "examples/clusters/l4x8.yaml")])
    assert res.exit_code == 2 and res.stderr.count("\n") == 1
    assert "m\\x0apwned.yaml: the file name must not contain control characters" in res.stderr
