"""The reproducers of the hardening pass, minimal, as fuzz cases that must fail cleanly.

Each entry: (id, Case). Paths starting with ``@`` are made in the run's directory by the harness
(``@fifo``, ``@loop``, ``@dir``, ``@missing``); a file whose content is ``"@real"`` gets a real
plan JSON (`grammar.real_plan_json`). `OTHER_BRANCHES` lists the reproducers whose fix
lives in another part of the project (the export's argument validation); they must pass too.
"""

from __future__ import annotations

from fuzz.grammar import _bomb
from fuzz.harness import Case

_CLUSTER = "devices:\n  - {name: g0, gpu: rtx-3090, node: n0}\n  - {name: g1, gpu: a100-40gb, node: n1}\n"
_MODEL = "layers:\n  - {name: l, cost: {rtx-3090: 0.01, a100-40gb: 0.004}, memory_gb: 1.0, repeat: 4}\n"
_ARCH = ("architecture: {num_hidden_layers: %s, hidden_size: 64, intermediate_size: 128, num_attention_heads: 4, "
         "vocab_size: %s}\n")
_TIMINGS = "device,layer,phase,batch,tokens,seconds\n"
_GATEWAY = "model,node,n,dur_min,dur_p5,dur_p50,dur_p95,dur_mean,tot_p50,q_p50,q_frac\n"


def _plan(model: str) -> Case:
    return Case(["plan", "m.yaml", "c.yaml"], {"m.yaml": model, "c.yaml": _CLUSTER})


CORPUS: list[tuple[str, Case]] = [
    ("alias-bomb", _plan(_bomb(9))),
    ("self-alias", _plan("name: &a [*a]\n")),
    ("nested-5000", _plan("x: " + "[" * 5000 + "]" * 5000 + "\n")),
    ("int-400-digits", _plan(_ARCH % ("9" * 400, 100))),
    ("int-5000-digits", _plan(_ARCH % ("9" * 5000, 100))),
    ("vocab-1e40", _plan(_ARCH % (2, "1.0e+40"))),
    ("repeat-1e8", _plan("layers:\n  - {name: l, cost: {rtx-3090: 0.01}, memory_gb: 1, repeat: 100000000}\n")),
    ("layers-1e8", _plan(_ARCH % (100000000, 100))),
    ("hf-config-dev-zero", _plan("hf_config: /dev/zero\n")),
    ("hf-config-fifo", Case(["plan", "m.yaml", "c.yaml"], {"m.yaml": "hf_config: fifo\n", "c.yaml": _CLUSTER})),
    ("nul-byte", _plan("layers:\n  - {name: a\x00b, cost: {rtx-3090: 0.01}, memory_gb: 1}\n")),
    ("esc-byte", _plan("layers:\n  - {name: a\x1bb, cost: {rtx-3090: 0.01}, memory_gb: 1}\n")),
    ("weights-1e-320", _plan("preset: llama-3.2-1b\nworkload: {weights: 1e-320}\n")),
    ("out-dev-full", Case(["plan", "m.yaml", "c.yaml", "--out", "/dev/full"], {"m.yaml": _MODEL, "c.yaml": _CLUSTER})),
    ("out-dev-zero", Case(["plan", "m.yaml", "c.yaml", "--out", "/dev/zero"], {"m.yaml": _MODEL, "c.yaml": _CLUSTER})),
    ("out-marker-in-source", Case(["plan", "m.yaml", "c.yaml", "--out", "src.py"],
                                  {"m.yaml": _MODEL, "c.yaml": _CLUSTER,
                                   "src.py": 'FORMAT = "partitioner.plan/1"  # "format": "partitioner.plan/1"\n'})),
    ("report-symlink-loop", Case(["report", "@loop", "c.yaml"], {"c.yaml": _CLUSTER})),
    ("report-md-ok-html-missing-dir", Case(["report", "m.yaml", "c.yaml", "--M", "8", "--pareto-max-M", "2",
                                            "--md", "ok.md", "--html", "nodir/x.html"],
                                           {"m.yaml": _MODEL, "c.yaml": _CLUSTER})),
    ("export-binary-plan", Case(["export", "p.json", "--to", "vllm"], {"p.json": b"\x00\xff\xfe\x00garbage"})),
    ("export-utf16-plan", Case(["export", "p.json", "--to", "vllm"],
                               {"p.json": '{"format": "partitioner.plan/1"}'.encode("utf-16")})),
    ("export-fifo", Case(["export", "@fifo", "--to", "vllm"])),
    ("export-deep-json", Case(["export", "p.json", "--to", "vllm"], {"p.json": "[" * 100000})),
    ("overlap-1e300", Case(["calibrate", "overlap", "--tau", "4,5", "--d", "2", "--measure", "2:16.5",
                            "--measure", "10:1e300"])),
    ("profile-tokens-1e308", Case(["calibrate", "profile", "t.csv"],
                                  {"t.csv": _TIMINGS + "rtx-3090,0,decode,1,1e308,0.001\n"})),
    ("profile-seconds-1e-320", Case(["calibrate", "profile", "t.csv"],
                                    {"t.csv": _TIMINGS + "rtx-3090,0,decode,1,128,1e-320\n"})),
    ("profile-contradictory-rows", Case(["calibrate", "profile", "t.csv"],
                                        {"t.csv": _TIMINGS + "rtx-3090,0,decode,1,128,0.002\n"
                                                             "rtx-3090,0,decode,1,128,0.003\n"})),
    ("gateway-1e300", Case(["calibrate", "gateway", "g.csv", "--model", "m"],
                           {"g.csv": _GATEWAY + "m,a,20,1e300,1e300,1e300,1e300,1e300,1e300,0,0\n"
                                                "m,b,20,1e300,1e300,1e300,1e300,1e300,1e300,0,0\n"})),
    ("gateway-binary", Case(["calibrate", "gateway", "g.csv", "--model", "m"], {"g.csv": b"\xff\xfe\x00\x00"})),
    ("analyze-fsum-overflow", Case(["analyze", "--tau", "1e308,1e308"])),
    ("analyze-fsum-overflow-json", Case(["analyze", "--tau", "1e308,1e308", "--json"])),
    ("analyze-huge-M", Case(["analyze", "--tau", "1,2", "--M", "9" * 5000])),
    ("group-unknown-option", Case(["--bogus"])),
    ("calibrate-measure-no-torch-or-args", Case(["calibrate", "measure", "--out", "t.csv"])),
]

#: Reproducers fixed in the export command's argument validation (another branch of this pass).
OTHER_BRANCHES: list[tuple[str, Case]] = [
    ("export-rpc-endpoint-without-port", Case(["export", "plan.json", "--to", "llamacpp",
                                               "--rpc-endpoint", "g1=host"], {"plan.json": "@real"})),
    ("export-device-id-negative", Case(["export", "plan.json", "--to", "vllm", "--device-id", "g0=-1"],
                                       {"plan.json": "@real"})),
    ("export-port-99999", Case(["export", "plan.json", "--to", "llamacpp", "--rpc-endpoint", "g1=host:99999"],
                               {"plan.json": "@real"})),
]

# Found by benchmarks/fuzz.py (seed 11): the unwritable --out was refused only after the solve.
CORPUS.append(("out-dev-full-after-cpsat", Case(
    ["plan", "m.yaml", "c.yaml", "--solver", "cpsat", "--out", "/dev/full", "--export", "sglang"],
    {"m.yaml": _MODEL, "c.yaml": _CLUSTER + "order: free\n"})))
CORPUS.append(("report-md-dev-full", Case(["report", "m.yaml", "c.yaml", "--md", "/dev/full"],
                                          {"m.yaml": _MODEL, "c.yaml": _CLUSTER})))
CORPUS.append(("report-md-marker-in-source", Case(
    ["report", "m.yaml", "c.yaml", "--md", "notes.md"],
    {"m.yaml": _MODEL, "c.yaml": _CLUSTER, "notes.md": "my notes mention partitioner.report/1\n"})))
# Found by benchmarks/fuzz.py (seed 23): M = 10^30 reached CP-SAT as a float coefficient.
CORPUS.append(("plan-huge-M-cpsat", Case(["plan", "m.yaml", "c.yaml", "--M", "9" * 30, "--solver", "cpsat"],
                                         {"m.yaml": _MODEL, "c.yaml": _CLUSTER})))
