"""Safe writes: an exact header with a checksum, atomic renames, all of a command's files or none."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from partitioner.cli import main
from partitioner.cli._output import check_writable, safe_write, with_header
from partitioner.errors import InputError

REPO = Path(__file__).resolve().parents[1]
MODEL, CLUSTER = str(REPO / "examples/models/qwen2.5-14b.yaml"), str(REPO / "examples/clusters/seed.yaml")


def test_header_is_the_first_line_with_a_checksum_of_the_rest(tmp_path) -> None:
    out = safe_write(tmp_path / "c.yaml", "# written by me; more\nx: 1\n", marker="written by me")
    first, body = out.read_text().split("\n", 1)
    assert first.startswith("# written by me; more sha256=") and body == "x: 1\n"
    safe_write(out, "x: 2\n", marker="written by me")  # its own, unedited file: replaced
    assert out.read_text().endswith("\nx: 2\n") and out.read_text().startswith("# written by me sha256=")


def test_marker_elsewhere_in_a_file_is_not_a_header(tmp_path) -> None:
    source = tmp_path / "test_x.py"
    source.write_text('x = 1\nMARK = "# written by me sha256=' + "0" * 64 + '"\n')
    with pytest.raises(InputError, match="was not written by partitioner"):
        safe_write(source, "y: 1\n", marker="written by me")
    assert source.read_text().startswith("x = 1")


def test_hand_edited_file_needs_force(tmp_path) -> None:
    out = safe_write(tmp_path / "c.yaml", "links: {}\n", marker="m")
    out.write_text(out.read_text() + "# my note\n")
    with pytest.raises(InputError, match=r"was edited since partitioner wrote it.*--force"):
        safe_write(out, "links: {}\n", marker="m")
    assert out.read_text().endswith("# my note\n")
    safe_write(out, "links: {a: 1}\n", marker="m", force=True)
    assert out.read_text().endswith("links: {a: 1}\n")


def test_json_marker_is_the_exact_format_field(tmp_path) -> None:
    out = tmp_path / "p.json"
    out.write_text('{"note": "partitioner.plan/1"}\n')
    with pytest.raises(InputError, match="not written by partitioner"):
        safe_write(out, '{"format": "partitioner.plan/1"}\n', marker="partitioner.plan/1")
    out.write_text('{"format": "partitioner.plan/1", "x": 1}\n')  # ours, from before checksums: replaced
    safe_write(out, '{"format": "partitioner.plan/1"}\n', marker="partitioner.plan/1")
    data = json.loads(out.read_text())  # JSON: no header line; the checksum is a last key
    assert list(data) == ["format", "sha256"] and len(data["sha256"]) == 64


def test_hand_edited_json_needs_force(tmp_path) -> None:
    out = safe_write(tmp_path / "p.json", '{"format": "partitioner.plan/1", "M": 8}\n', marker="partitioner.plan/1")
    safe_write(out, '{"format": "partitioner.plan/1", "M": 9}\n', marker="partitioner.plan/1")  # unedited: replaced
    out.write_text(out.read_text().replace('"M": 9', '"M": 10'))
    with pytest.raises(InputError, match=r"was edited since partitioner wrote it.*--force"):
        safe_write(out, '{"format": "partitioner.plan/1", "M": 1}\n', marker="partitioner.plan/1")
    assert json.loads(out.read_text())["M"] == 10
    safe_write(out, '{"format": "partitioner.plan/1", "M": 1}\n', marker="partitioner.plan/1", force=True)
    assert json.loads(out.read_text())["M"] == 1


def test_html_header_follows_the_doctype() -> None:
    text = with_header("r.html", "<!DOCTYPE html>\n<html></html>\n", "partitioner.report/1")
    lines = text.splitlines()
    assert lines[0] == "<!DOCTYPE html>" and lines[1].startswith("<!-- partitioner.report/1 sha256=")
    assert lines[1].endswith(" -->")

def test_script_header_follows_the_shebang_and_rewrites_stay_possible(tmp_path) -> None:
    """A launch script stays executable (#! on line 1), its header is recognised on a re-run, and a
    hand edit is still protected."""
    out = safe_write(tmp_path / "01-a.sh", "#!/usr/bin/env bash\necho hi\n", marker="written by me", mode=0o755)
    lines = out.read_text().splitlines()
    assert lines[0] == "#!/usr/bin/env bash" and lines[1].startswith("# written by me sha256=")
    assert os.stat(out).st_mode & 0o777 == 0o755
    safe_write(out, "#!/usr/bin/env bash\necho again\n", marker="written by me", mode=0o755)
    assert out.read_text().endswith("echo again\n")
    out.write_text(out.read_text() + "echo mine\n")
    with pytest.raises(InputError, match="was edited since partitioner wrote it"):
        safe_write(out, "#!/usr/bin/env bash\n", marker="written by me")



@pytest.mark.parametrize("device", ["/dev/full", "/dev/zero", "/dev/null"])
def test_devices_are_refused_without_reading(device) -> None:
    if not os.path.exists(device):
        pytest.skip(f"{device} absent")
    with pytest.raises(InputError, match="not a regular file"):
        check_writable(device, marker="m")


def test_fifo_and_input_and_directory_are_refused(tmp_path) -> None:
    fifo = tmp_path / "f.yaml"
    if sys.platform != "win32":
        os.mkfifo(fifo)
        with pytest.raises(InputError, match="not a regular file"):
            check_writable(fifo, marker="m")
    with pytest.raises(InputError, match="is a directory"):
        check_writable(tmp_path, marker="m")
    src = tmp_path / "in.yaml"
    src.write_text("x: 1\n")
    with pytest.raises(InputError, match="input file"):
        check_writable(tmp_path / "." / "in.yaml", inputs=[src], marker="m")


def test_symlink_loop_is_one_line(tmp_path) -> None:
    loop = tmp_path / "loop.json"
    loop.symlink_to(loop)
    with pytest.raises(InputError, match="cannot write"):
        check_writable(loop, marker="m")


def test_no_temporary_files_are_left(tmp_path) -> None:
    safe_write(tmp_path / "a.csv", "x\n1\n", marker="m")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv"]


def test_report_writes_all_files_or_none(tmp_path) -> None:
    md, html = tmp_path / "ok.md", tmp_path / "missing-dir" / "x.html"
    res = CliRunner().invoke(main, ["report", MODEL, CLUSTER, "--M", "8", "--pareto-max-M", "2",
                                    "--md", str(md), "--html", str(html)])
    assert res.exit_code == 2, res.output
    assert not md.exists() and sorted(p.name for p in tmp_path.iterdir()) == []
    assert res.stderr.strip().splitlines()[-1].startswith("error: ")


def test_plan_out_dash_is_stdout_and_force_flag_anywhere(tmp_path) -> None:
    res = CliRunner().invoke(main, ["plan", MODEL, CLUSTER, "--out", "-", "--json"])
    assert res.exit_code == 0 and not Path("-").exists()
    assert res.stdout.count('"format": "partitioner.plan/1"') == 1  # once, not once per option
    assert json.loads(res.stdout)["format"] == "partitioner.plan/1"
    out = tmp_path / "plan.json"
    assert CliRunner().invoke(main, ["plan", MODEL, CLUSTER, "--out", str(out)]).exit_code == 0
    assert CliRunner().invoke(main, ["--force", "plan", MODEL, CLUSTER, "--out", str(out)]).exit_code == 0


def test_calibrate_gateway_keeps_a_hand_edited_cluster(tmp_path) -> None:
    csv = tmp_path / "stats.csv"
    csv.write_text("model,node,n,dur_min,dur_p5,dur_p50,dur_p95,dur_mean,tot_p50,q_p50,q_frac\n"
                   "m,a,20,1,1,1,1,1,1,0,0\nm,b,20,2,2,2,2,2,2,0,0\n")
    out = tmp_path / "cluster.yaml"
    args = ["calibrate", "gateway", str(csv), "--model", "m", "--gpu", "a=rtx-3090,b=rtx-3090",
            "--write-cluster", str(out)]
    assert CliRunner().invoke(main, args).exit_code == 0
    assert CliRunner().invoke(main, args).exit_code == 0  # unedited: replaced
    out.write_text(out.read_text().replace("links:", "links:  # mine"))
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2 and "--force" in res.stderr and "# mine" in out.read_text()
    assert CliRunner().invoke(main, [*args, "--force"]).exit_code == 0 and "# mine" not in out.read_text()


def test_a_nul_byte_in_a_path_is_one_line(tmp_path) -> None:
    with pytest.raises(InputError, match="cannot write"):
        safe_write(tmp_path / "a\x00b.yaml", "x: 1\n", marker="m")
