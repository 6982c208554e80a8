"""Hypothesis strategies over the input grammars of `partition`: model.yaml, cluster.yaml, the
calibrate CSVs, plan JSON, and the value of every CLI option.

Each strategy mixes three kinds of case: a small *valid* document (so the command gets past its
parser and exercises the solvers, writers and renderers on tiny, fast instances), the same
document with one value or line *mutated* into something hostile, and raw *garbage* text.
Shared by tests/fuzz/test_fuzz.py (fixed seed, CI budget) and benchmarks/fuzz.py (longer runs).
"""

from __future__ import annotations

import functools
import json

from hypothesis import strategies as st

GPUS = ("rtx-3090", "a100-40gb", "gtx-1070")

# Scalars that broke, or could break, a reader: huge, tiny, non-finite, wrong type, control bytes.
HOSTILE_SCALARS = (
    "0", "-1", "1e-320", "1e308", "1.0e+40", "-0.0", ".nan", ".inf", "-.inf", "nan", "inf", "9" * 30, "9" * 400,
    "9" * 5000, "0x7fffffffffffffff", "1_000_000", "true", "null", "~", "''", '"\\x00"', "[]", "{}", "[1, 2]",
    "a\x00b", "\x1b[31m", "\ufeff", "!!python/object:os.system {}", "*undefined", "&a [*a]", "100000000",
    "2147483648", "-9223372036854775809", "1e-9", "4.85", "bf16", "node-03;touch PWNED;", "a\nb",
    # tiny and huge *valid* numbers (they must answer promptly: capacity counts in closed form)
    "1e-12", "1e15", "1e17", "1e18", "2.3e-308", "1e-300",
    # names that are code: a newline ending a script comment, ESC/OSC/CSI, C1, bidi, DEL
    "\"h1\\npwned H1\"", "\"evil\\e[2J\"", "\"x\\e]8;;http://a\\e\\\\y\"", "\"c1\\x9b31m\"",
    "\"bidi\\u202e\"", "\"del\\x7f\"", "\"1.2.3.4;id\"",
)
#: Device, node and model names a hostile case may use (YAML double-quoted: the escapes are real).
HOSTILE_NAMES = ("h1\npwned H1", "evil\x1b[2J", "c1\x9b31m", "bidi\u202e", "tab\tname", "$(pwned)", "a;pwned;",
                 "1.2.3.4;id", "del\x7f")

NUMBER_TEXTS = ("0", "1", "2.5", "-1", "1e308", "1e-320", "nan", "inf", "-inf", "9" * 30, "9" * 400, "", " ",
                "1,2", "0.5,1,1,5", "4.6,0.1,0.1", "1e308,1e308", "1,,2", "x", "1e18", "1e19")


@st.composite
def _model_dict(draw: st.DrawFn, clean: bool = False, hostile: bool = False) -> dict[str, object]:
    form = draw(st.sampled_from(["layers", "layers", "architecture", "preset"]))
    if form == "preset":
        workload: dict[str, object] = {"batch": draw(st.integers(1, 4)), "context": draw(st.sampled_from([512, 4096]))}
        if draw(st.integers(0, 3)) == 0:  # tiny valid KV sizes: capacity counts must stay O(1)
            workload["kv_cache"] = draw(st.sampled_from([1e-12, 1e-300, "bf16", 0.5]))
        out: dict[str, object] = {"preset": draw(st.sampled_from(["llama-3.2-1b", "llama-3.1-8b", "qwen2.5-7b", "nope"])),
                                  "workload": workload}
        if hostile:
            out["name"] = draw(st.sampled_from(HOSTILE_NAMES))
        return out
    if form == "architecture":
        return {"architecture": {"num_hidden_layers": draw(st.integers(1, 6)), "hidden_size": 256,
                                 "intermediate_size": 512, "num_attention_heads": 4, "vocab_size": 1000}}
    n = draw(st.integers(1, 4))
    layers = []
    for i in range(n):
        keys = GPUS if clean else draw(st.sets(st.sampled_from(GPUS), min_size=1))
        cost = {g: draw(st.sampled_from([1e-4, 2e-3, 0.01, 0.05])) for g in keys}
        layers.append({"name": f"l{i}", "cost": cost, "memory_gb": draw(st.sampled_from([0.1, 1.0, 6.0])),
                       "repeat": draw(st.integers(1, 3)), "out_bytes": 1024})
        if draw(st.integers(0, 4)) == 0:
            layers[-1]["kv_bytes_per_token"] = draw(st.sampled_from([1e-9, 1e-300, 1e3, 0.0]))
        if hostile and i == 0:
            layers[-1]["name"] = draw(st.sampled_from(HOSTILE_NAMES))
    return {"layers": layers}


@st.composite
def _cluster_dict(draw: st.DrawFn, hostile: bool = False) -> dict[str, object]:
    n = draw(st.integers(1, 4))
    devices: list[dict[str, object]] = [
        {"name": f"g{i}", "gpu": draw(st.sampled_from(GPUS)), "node": f"n{draw(st.integers(0, 1))}"} for i in range(n)]
    for dev in devices:  # valid but extreme memory: 1e15 GB must answer as fast as 24 GB
        if draw(st.integers(0, 5)) == 0:
            dev["memory_gb"] = draw(st.sampled_from([1e15, 1e-3, 0.5, 1e18]))
    if hostile:
        dev = devices[draw(st.integers(0, n - 1))]
        dev[draw(st.sampled_from(["name", "node"]))] = draw(st.sampled_from(HOSTILE_NAMES))
    out: dict[str, object] = {"devices": devices, "order": draw(st.sampled_from(["fixed", "free"]))}
    if draw(st.booleans()):
        out["links"] = {"intra_node": "pcie4", "inter_node": draw(st.sampled_from(["10gbe", "nope"]))}
    if draw(st.integers(0, 3)) == 0:
        out["tp"] = draw(st.sampled_from([[1], [1, 2], [2], [3], [16], []]))
    if hostile and draw(st.booleans()):
        out["nodes"] = {"n0": {"address": draw(st.sampled_from(["10.0.0.1", "1.2.3.4;id", "h\nx", "::1"]))}}
    return out


def _dump_yaml(data: object) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False)


@st.composite
def _mutated(draw: st.DrawFn, text: str) -> str:
    """`text` with one line's value, or the line itself, replaced by something hostile."""
    lines = text.splitlines() or [""]
    i = draw(st.integers(0, len(lines) - 1))
    kind = draw(st.sampled_from(["value", "line", "duplicate", "delete", "truncate"]))
    if kind == "value" and ":" in lines[i]:
        head = lines[i].rsplit(":", 1)[0]
        lines[i] = f"{head}: {draw(st.sampled_from(HOSTILE_SCALARS))}"
    elif kind == "line":
        lines[i] = draw(st.sampled_from((*HOSTILE_SCALARS, "  - ", ": :", "\t- x", "- [", "? x")))
    elif kind == "duplicate":
        lines.insert(i, lines[i])
    elif kind == "delete":
        del lines[i]
    else:
        return text[: draw(st.integers(0, len(text)))]
    return "\n".join(lines) + "\n"


def _bomb(levels: int) -> str:
    text = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n"
    for i in range(1, levels + 1):
        text += f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]\n"
    return text


HOSTILE_DOCUMENTS = (
    "", "\n", "---\n", "[1, 2]\n", "42\n", "name: &a [*a]\n", "x: " + "[" * 5000 + "]" * 5000 + "\n",
    _bomb(9), "preset: llama-3.1-8b\nname: a\x00b\n", "preset: llama-3.1-8b\nname: a\x1bb\n",
    "preset: llama-3.1-8b\nworkload: {batch: " + "9" * 400 + "}\n", "hf_config: /dev/zero\n",
    "hf_config: /dev/stdin\n", "hf_config: .\n", "layers:\n  - {name: l, cost: {rtx-3090: 1e-3}, memory_gb: 1, "
    "repeat: 100000000}\n", "architecture: {num_hidden_layers: 100000000, hidden_size: 64, intermediate_size: 64, "
    "num_attention_heads: 4, vocab_size: 100}\n", "preset: llama-3.1-8b\nworkload: {weights: 1e-320}\n",
    "devices:\n" + "".join(f"  - {{name: d{i}, gpu: rtx-3090}}\n" for i in range(1500)),
    "a: 1\na: 2\n", "--- {a: 1}\n--- {b: 2}\n", "!!python/object/apply:os.system ['true']\n",
)


def yaml_documents(kind: str, clean: bool = False) -> st.SearchStrategy[str]:
    """model.yaml (`kind` "model") or cluster.yaml ("cluster") text; `clean`: a valid document
    (models then have a cost for every GPU the clusters use, so plans get solved)."""
    valid = (_model_dict(clean) if kind == "model" else _cluster_dict()).map(_dump_yaml)
    if clean:
        return valid
    named = (_model_dict(hostile=True) if kind == "model" else _cluster_dict(hostile=True)).map(_dump_yaml)
    return st.one_of(valid, valid.flatmap(_mutated), named, st.sampled_from(HOSTILE_DOCUMENTS),
                     st.text(max_size=200))


# -- CSV ----------------------------------------------------------------------------------------
TIMINGS_HEADER = "device,layer,phase,batch,tokens,seconds"
GATEWAY_HEADER = "model,node,n,dur_min,dur_p5,dur_p50,dur_p95,dur_mean,tot_p50,q_p50,q_frac"


@st.composite
def _timings(draw: st.DrawFn) -> str:
    rows = [TIMINGS_HEADER]
    for _ in range(draw(st.integers(1, 6))):
        rows.append(",".join([draw(st.sampled_from((*GPUS, "g0"))),
                              draw(st.sampled_from(["embed", "lm_head", "0", "1", "0-3", "5"])),
                              draw(st.sampled_from(["decode", "prefill"])), str(draw(st.sampled_from([1, 4]))),
                              str(draw(st.sampled_from([128, 512]))),
                              repr(draw(st.sampled_from([1e-4, 2e-3, 0.01])))]))
    return "\n".join(rows) + "\n"


@st.composite
def _gateway(draw: st.DrawFn) -> str:
    rows = [GATEWAY_HEADER]
    for node in ("a", "b", "c")[: draw(st.integers(1, 3))]:
        base = draw(st.sampled_from([0.5, 1.0, 2.9]))
        rows.append(f"m,{node},{draw(st.integers(1, 30))},{base},{base},{base * 1.1},{base * 2},{base * 1.2},"
                    f"{base * 1.3},0,0")
    return "\n".join(rows) + "\n"


def _measurements() -> st.SearchStrategy[str]:
    return st.lists(st.tuples(st.integers(1, 100), st.sampled_from([10.0, 20.5, 60.0])), min_size=1,
                    max_size=4).map(lambda ps: "M,makespan_s\n" + "".join(f"{m},{t}\n" for m, t in ps))


def csv_documents(kind: str, clean: bool = False) -> st.SearchStrategy[str]:
    """A timings ("timings"), gateway ("gateway") or overlap ("measurements") CSV."""
    valid = {"timings": _timings(), "gateway": _gateway()}.get(kind, _measurements())
    if clean:
        return valid
    garbage = st.sampled_from(("", "\n", "a,b\n1\n", "\x00\x00", "device\n" + "x\n" * 3, '"unterminated\n',
                               TIMINGS_HEADER + "\n", GATEWAY_HEADER + "\nm,a,1,1e300,1,1,1,1,1,0,0\n"))
    return st.one_of(valid, valid.flatmap(_mutated_csv), garbage, st.text(max_size=120))


@st.composite
def _mutated_csv(draw: st.DrawFn, text: str) -> str:
    lines = text.splitlines()
    i = draw(st.integers(0, len(lines) - 1))
    cells = lines[i].split(",")
    j = draw(st.integers(0, len(cells) - 1))
    cells[j] = draw(st.sampled_from(NUMBER_TEXTS + HOSTILE_SCALARS))
    lines[i] = ",".join(cells)
    if draw(st.booleans()):
        lines.append(lines[-1])  # a repeated row, perhaps contradictory after the mutation
    return "\n".join(lines) + "\n"


# -- JSON (plan files, config.json) -------------------------------------------------------------
def _plan(stages: list[tuple[str, int, int]]) -> dict[str, object]:
    return {"format": "partitioner.plan/1", "model": "m", "num_layers": stages[-1][2] if stages else 0, "M": 8,
            "regime": "async", "objective": "balanced", "solver": "dp", "optimal": True, "status": "optimal",
            "feasible": True, "reason": "", "S": len(stages),
            "stages": [{"device": d, "gpu": "rtx-3090", "node": "n0", "start": a, "end": b, "tau": 0.01,
                        "d": 0.0, "sigma": 0.01, "memory_gb": 1.0} for d, a, b in stages]}


@functools.cache
def real_plan_json() -> str:
    """The plan JSON `partition plan` writes for a tiny model on a two-device cluster (solved once)."""
    import partitioner
    from partitioner.models import ClusterSpec, ModelSpec

    model = ModelSpec.model_validate({"layers": [{"name": "l", "cost": {"rtx-3090": 0.01, "a100-40gb": 0.004},
                                                  "memory_gb": 1.0, "repeat": 6, "out_bytes": 1024}]})
    cluster = ClusterSpec.model_validate({"devices": [{"name": "g0", "gpu": "a100-40gb", "node": "n0"},
                                                      {"name": "g1", "gpu": "rtx-3090", "node": "n1"}]})
    return partitioner.plan(model, cluster, M=8).to_json()


@st.composite
def json_documents(draw: st.DrawFn, clean: bool = False) -> str:
    kind = "plan" if clean else draw(st.sampled_from(["plan", "real", "mutated", "garbage"]))
    if clean or kind == "real":
        return real_plan_json()
    plan = _plan([("g0", 0, 3), (draw(st.sampled_from(["g1", "node-03;touch PWNED;", "a\nb", "g0"])), 3, 6)])
    if kind == "plan":
        return json.dumps(plan)
    if kind == "mutated":
        key = draw(st.sampled_from(sorted(plan)))
        plan[key] = draw(st.sampled_from([None, -1, 1e308, "x", [], {}, 10**30, True]))
        return json.dumps(plan)
    return draw(st.sampled_from(("", "{", "[]", "null", '{"format": "partitioner.plan/1"}', "[" * 5000,
                                 '{"a": NaN}', "\xff\xfe{", "1" * 5000)))


# -- option values ------------------------------------------------------------------------------
OPTION_TEXTS = (*NUMBER_TEXTS, "4:27.36,16:87.6", "4:", ":5", "0:1", "4:-20", "2:16.5", "10:1e300", "a=b", "g0=0", "g0=-1", "g0=99999999999", "g0=h", "g0=h:0", "g0=h:99999", "g0=[::1]:8000", "node-03;touch PWNED;", "a\nb", "min", "p50", "bogus", "rtx-3090@n0", "g0:g1=0.05,100", "g0:g1=x", "async", "blocking", "decode", "prefill", "m", "a,b", "a=rtx-3090", "-600", "600steps", "1e3")


def option_values() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(OPTION_TEXTS), st.text(max_size=20))


#: Sensible values by option name, so a clean case reaches the solvers, writers and renderers.
SENSIBLE = {
    "tau": ("0.5,1,1,5", "4,5", "1,1,1,1"), "M": ("8", "1,8", "1"), "Ms": ("1,8", "8"),
    "rho": ("0.8", "1"), "measured": ("4:27.36,16:87.6",), "measures": ("2:16.5", "10:60.5"),
    "model": ("m",), "nodes": ("a,b", "a"), "stat": ("min", "p50"), "gpu": ("a=rtx-3090,b=rtx-3090,c=a100-40gb",),
    "template": ("llama-3.2-1b",), "device_id": ("g0=0", "g1=1"), "rpc_endpoint": ("g1=h:5000",),
    "without": ("g1",), "with_": ("rtx-3090@n0",), "link": ("g0:g1=0.05,100",), "regime": ("blocking", "async"),
    "phase": ("prefill", "decode"), "label": ("rtx-3090",), "batch_text": ("1",), "tokens_text": ("128",),
    "pareto_max_M": ("4",), "time_limit": ("1",), "work": ("1", "40", "600", "100000"), "plan_M": ("8",), "batch": ("1",), "tokens": ("128",),
}
