"""Tensor-parallel stages in every launch target: each engine's rank rule replayed on what the
exporter emits (vLLM's Ray order with pp_rank * tp + tp_rank, SGLang's gpu_id, TensorRT-LLM's
Mapping), llama.cpp's row split, mixed TP degrees refused, and plan.json's TP fields checked."""

from __future__ import annotations

import json
import random

import pytest
from test_export_launch import plan_of, simulate_vllm

from partitioner.errors import ConfigError
from partitioner.export import render
from partitioner.export import sglang as sg
from partitioner.export.load import parse_plan


def tp_plan(groups: list[tuple[list[str], str]], n_dec: int = 12, hosts: dict[str, str | None] | None = None,
            meta: dict | None = None, gpus: dict[str, str] | None = None) -> dict:
    """A plan dict whose stage s runs on the TP group groups[s] = (members, node); every node lists
    its devices in name order (the CUDA ordinal when the plan is exported without --device-id)."""
    names = ["+".join(members) for members, _ in groups]  # a group's `device` joins its members (deploy.groups)
    doc = plan_of([(name, node) for name, (_, node) in zip(names, groups, strict=True)], n_dec=n_dec, hosts=hosts,
                  meta=meta, gpus=gpus)
    for st, (members, _) in zip(doc["stages"], groups, strict=True):
        if len(members) > 1:
            st["devices"], st["tp"] = list(members), len(members)
    by_node: dict[str, list[str]] = {}
    for members, node in groups:
        by_node.setdefault(node, []).extend(members)
    listed = {n: sorted(ds) for n, ds in by_node.items()}
    for st, (members, _) in zip(doc["stages"], groups, strict=True):
        st["ordinal"] = listed[st["node"]].index(members[0])
    doc["hosts"] = [{"node": n, "address": (hosts or {}).get(n), "address_assumed": (hosts or {}).get(n) is None,
                     "devices": listed[n]} for n in by_node]
    return doc


def _env(step, key: str) -> str:  # type: ignore[no-untyped-def]
    return dict(step.env)[key]


def _arg(argv, flag: str) -> str:  # type: ignore[no-untyped-def]
    return argv[list(argv).index(flag) + 1]


# -- vLLM ----------------------------------------------------------------------------------------
def test_vllm_one_host_lists_each_group_in_rank_order() -> None:
    doc = tp_plan([(["g2", "g3"], "box"), (["g0", "g1"], "box")])
    out = render(doc, "vllm")
    (serve,) = out.steps
    assert _arg(serve.argv, "--tensor-parallel-size") == "2" and _arg(serve.argv, "--pipeline-parallel-size") == "2"
    # rank = pp_rank * 2 + tp_rank: ranks 0, 1 (stage 0) are GPUs 2, 3; ranks 2, 3 (stage 1) GPUs 0, 1
    assert _env(serve, "CUDA_VISIBLE_DEVICES") == "2,3,0,1"
    assert out.cannot_express == ()


def _pp_tp_workers(ranks: list[tuple[str, int]], pp: int, tp: int) -> list[set[tuple[str, int]]]:
    """RayDistributedExecutor: pp_tp_workers[pp_rank] = workers[pp_rank * tp + tp_rank]."""
    return [set(ranks[p * tp:(p + 1) * tp]) for p in range(pp)]


@pytest.mark.parametrize("seed", range(30))
def test_vllm_ray_with_tp_places_every_group_on_its_gpus(seed: int) -> None:
    """Random clusters of 2-5 hosts, TP 2 or 4: Ray's ranking of the emitted `ray start`s, cut into
    pp_tp_workers, gives each stage exactly its planned GPUs iff the export says expressible."""
    rng = random.Random(seed)
    tp = rng.choice([2, 4])
    n_hosts = rng.randint(2, 5)
    hosts = {f"h{i}": f"10.0.0.{rng.randint(1, 60)}" for i in range(n_hosts)}
    if len(set(hosts.values())) < n_hosts:
        hosts = {h: f"10.0.0.{i + 1}" for i, h in enumerate(hosts)}
    groups: list[tuple[list[str], str]] = []
    ords: dict[str, int] = {}
    shaped = rng.random() < 0.6  # often in vLLM's order: groups of consecutive GPU ids, nodes in Ray's order
    for h in hosts:
        gpus = list(range(tp * rng.randint(1, 2)))
        if not shaped:
            rng.shuffle(gpus)
        for k in range(0, len(gpus), tp):
            members = [f"{h}-g{g}" for g in gpus[k:k + tp]]
            ords.update({f"{h}-g{g}": g for g in gpus[k:k + tp]})
            groups.append((members, h))
    rng.shuffle(groups)
    if shaped:  # the driver's node, then (fewer GPUs, IP); groups by GPU id
        head = groups[0][1]
        count = {h: sum(len(m) for m, n in groups if n == h) for h in hosts}
        rank = {h: (h != head, count[h], hosts[h]) for h in hosts}
        groups.sort(key=lambda x: (rank[x[1]], min(ords[d] for d in x[0])))
    doc = tp_plan(groups, n_dec=3 * len(groups), hosts=hosts)
    out = render(doc, "vllm", ordinals=ords)
    assert _arg(out.steps[-1].argv, "--tensor-parallel-size") == str(tp)
    planned = [{(node, ords[d]) for d in members} for members, node in groups]
    placed = [_pp_tp_workers(simulate_vllm(out.steps, rng), len(groups), tp) for _ in range(20)]  # 20 node-id draws
    assert all(len(p) == len(groups) and sum(map(len, p)) == tp * len(groups) for p in placed)
    ray_rule = [c for c in out.cannot_express if "Ray executor" in c or "cannot return" in c]
    assert all(p == planned for p in placed) == (not ray_rule), (planned, placed[0], out.cannot_express)


def test_vllm_ray_groups_out_of_gpu_order_on_a_node_are_not_expressible() -> None:
    # on node B stage 1 holds GPUs 2, 3 and stage 2 GPUs 0, 1: Ray gives B's first ranks GPUs 0, 1
    hosts = {"A": "10.0.0.1", "B": "10.0.0.2"}
    groups = [(["a0", "a1"], "A"), (["b2", "b3"], "B"), (["b0", "b1"], "B")]
    ords = {"a0": 0, "a1": 1, "b0": 0, "b1": 1, "b2": 2, "b3": 3}
    out = render(tp_plan(groups, hosts=hosts), "vllm", ordinals=ords)
    assert any("Ray executor" in c for c in out.cannot_express)
    good = [(["a0", "a1"], "A"), (["b0", "b1"], "B"), (["b2", "b3"], "B")]
    ok = render(tp_plan(good, hosts=hosts), "vllm", ordinals=ords)
    assert ok.cannot_express == ()
    assert [(s.host, _env(s, "CUDA_VISIBLE_DEVICES")) for s in ok.steps[:2]] == [("A", "0,1"), ("B", "0,1,2,3")]


# -- SGLang --------------------------------------------------------------------------------------
def test_sglang_gpu_id_rule() -> None:
    # engine.py: gpu_id = base + (pp_rank % pp_per_node) * tp_per_node + (tp_rank % tp_per_node) * step
    assert [sg.gpu_id(p, t, pp_size=4, tp_size=2, nnodes=2) for p in range(4) for t in range(2)] == [0, 1, 2, 3, 0, 1, 2, 3]
    assert sg.gpu_id(1, 1, pp_size=2, tp_size=2, nnodes=1, base_gpu_id=4, gpu_id_step=2) == 4 + 2 + 2


def test_sglang_tp_each_scheduler_lands_on_its_planned_gpu() -> None:
    hosts = {"A": "10.0.0.1", "B": "10.0.0.2"}
    groups = [(["a2", "a3"], "A"), (["a0", "a1"], "A"), (["b1", "b0"], "B"), (["b2", "b3"], "B")]
    ords = {d: int(d[1]) for members, _ in groups for d in members}
    out = render(tp_plan(groups, n_dec=16, hosts=hosts), "sglang", ordinals=ords)
    assert out.cannot_express == ()
    S, tp = 4, 2
    for step in out.steps:
        assert _arg(step.argv, "--tp-size") == "2" and _arg(step.argv, "--pp-size") == "4"
        node_rank, nnodes = int(_arg(step.argv, "--node-rank")), int(_arg(step.argv, "--nnodes"))
        visible = [int(x) for x in _env(step, "CUDA_VISIBLE_DEVICES").split(",")]
        for p in sg.node_ranks(S, nnodes, node_rank):
            got = {visible[sg.gpu_id(p, t, S, tp, nnodes)] for t in range(tp)}
            assert got == {ords[d] for d in groups[p][0]}, (p, got)
            assert groups[p][1] == step.host


# -- TensorRT-LLM ----------------------------------------------------------------------------------
def test_trtllm_tp_mapping_rank_rule_on_two_hosts() -> None:
    hosts = {"A": "10.0.0.1", "B": "10.0.0.2"}
    groups = [(["a0", "a1"], "A"), (["a2", "a3"], "A"), (["b0", "b1"], "B"), (["b2", "b3"], "B")]
    ords = {d: int(d[1]) for members, _ in groups for d in members}
    out = render(tp_plan(groups, n_dec=16, hosts=hosts), "trtllm", ordinals=ords)
    assert out.cannot_express == ()
    mpi = out.steps[0].argv
    assert _arg(mpi, "-n") == "8" and _arg(mpi, "-H") == "10.0.0.1:4,10.0.0.2:4" and _arg(mpi, "--tp_size") == "2"
    visible = {w.split("'")[1]: [int(x) for x in w.rsplit("=", 1)[1].split()[0].split(",")]
               for w in out.warnings if w.startswith("on node")}
    gpus_per_node, tp = 4, 2
    for rank in range(8):  # Mapping: tp_rank = rank % tp, pp_rank = rank // tp; node = rank // gpus_per_node
        pp_rank, node = rank // tp, ["A", "B"][rank // gpus_per_node]
        assert visible[node][rank % gpus_per_node] in {ords[d] for d in groups[pp_rank][0]}
        assert groups[pp_rank][1] == node


def test_trtllm_one_host_tp() -> None:
    out = render(tp_plan([(["g0", "g1"], "box"), (["g2", "g3"], "box")]), "trtllm")
    (serve,) = out.steps
    assert _arg(serve.argv, "--tp_size") == "2" and _env(serve, "CUDA_VISIBLE_DEVICES") == "0,1,2,3"


# -- mixed TP degrees and snippet targets -------------------------------------------------------
MIXED = [(["g0", "g1"], "box"), (["g2"], "box")]


@pytest.mark.parametrize("target", ["vllm", "sglang", "trtllm", "megatron"])
def test_mixed_tp_is_not_expressible_for_uniform_tp_engines(target: str) -> None:
    out = render(tp_plan(MIXED), target)
    assert any("one tensor-parallel size for every pipeline stage" in c and "2/1" in c for c in out.cannot_express)


@pytest.mark.parametrize("target", ["vllm", "sglang", "trtllm", "llamacpp", "deepspeed", "torchgpipe", "megatron"])
def test_mixed_tp_rejected_by_strict_export(target: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from click.testing import CliRunner

    from partitioner.cli import main
    from partitioner.export import STRICT_EXIT_CODES

    path = tmp_path / "plan.json"
    path.write_text(json.dumps(tp_plan(MIXED)))
    res = CliRunner().invoke(main, ["export", str(path), "--to", target, "--strict"])
    assert res.exit_code == STRICT_EXIT_CODES["cannot_express"], res.output
    assert "cannot express" in res.output and "Traceback" not in res.output


def test_uniform_tp_megatron_flag() -> None:
    out = render(tp_plan([(["g0", "g1"], "box"), (["g2", "g3"], "box")]), "megatron")
    assert "--tensor-model-parallel-size 2" in out.text and out.cannot_express == ()


# -- llama.cpp ---------------------------------------------------------------------------------
def test_llamacpp_one_stage_tp_is_a_row_split() -> None:
    out = render(tp_plan([(["g1", "g0"], "box")]), "llamacpp")
    (serve,) = out.steps
    assert _arg(serve.argv, "--split-mode") == "row" and _arg(serve.argv, "--tensor-split") == "1,1"
    assert _arg(serve.argv, "--device") == "CUDA0,CUDA1" and out.cannot_express == ()


def test_llamacpp_tp_inside_a_layer_split_is_not_expressible() -> None:
    hosts = {"A": "10.0.0.1", "B": "10.0.0.2"}
    out = render(tp_plan([(["a0", "a1"], "A"), (["b0", "b1"], "B")], n_dec=12, hosts=hosts), "llamacpp")
    assert any("tensor parallelism inside stages" in c for c in out.cannot_express)
    serve = out.steps[-1].argv
    # each group's 6 decoder layers over its 2 members; the last also the output layer
    assert _arg(serve, "--tensor-split") == "3,3,3,4" and _arg(serve, "--device") == "CUDA0,CUDA1,RPC0,RPC1"
    assert [s.argv[0] for s in out.steps] == ["ggml-rpc-server", "ggml-rpc-server", "llama-server"]


# -- plan.json -------------------------------------------------------------------------------------
def test_plan_json_tp_fields_checked() -> None:
    doc = tp_plan([(["g0", "g1"], "box"), (["g2", "g3"], "box")])
    view = parse_plan(doc)
    assert [st.group for st in view.stages] == [("g0", "g1"), ("g2", "g3")] and view.world_size == 4
    bad = json.loads(json.dumps(doc))
    bad["stages"][0]["tp"] = 3
    with pytest.raises(ConfigError, match=r"stages\[0\]\.devices.*tp = 3"):
        parse_plan(bad, file="p.json")
    bad = json.loads(json.dumps(doc))
    bad["stages"][1]["devices"] = ["g2", "g1"]
    with pytest.raises(ConfigError, match="'g1' appears in two stages"):
        parse_plan(bad, file="p.json")
    bad = json.loads(json.dumps(doc))
    del bad["stages"][1]["devices"]
    with pytest.raises(ConfigError, match="tp 2 needs the group's devices"):
        parse_plan(bad, file="p.json")
