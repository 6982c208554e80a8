"""TensorRT-LLM: `trtllm-serve MODEL --pp_size S --extra_llm_api_options pp.yaml` with `pp_partition`.

Rules, read from NVIDIA/TensorRT-LLM (main, after PR #9003):
- Layer split: `tensorrt_llm/mapping.py::Mapping.pp_layers` uses `pp_partition` when given:
  ValueError unless `len(pp_partition) == pp_size` and `sum(pp_partition) == num_layers`,
  then `torch.arange(num_layers).split(pp_partition)[pp_rank]` (a 0 entry is a legal
  split size); without it, `torch.tensor_split` (first ranks get the extra layers). The LLM
  API takes it as `pp_partition` (`llmapi/llm_args.py`, passed to `_ParallelConfig`), so
  `--extra_llm_api_options` YAML carries it.
- Ranks: `pp_rank = rank // (tp_size * cp_size)`, `node_rank = rank // gpus_per_node`,
  `local_rank = rank % gpus_per_node`: every node holds gpus_per_node consecutive ranks,
  local rank k on the k-th visible GPU; one host: `CUDA_VISIBLE_DEVICES` in stage order.
- Tensor parallelism (`--tp_size`, one int for every stage: `Mapping.tp_size`): rank =
  pp_rank * tp_size + tp_rank (`tp_rank = rank % tp_size`, `pp_rank = rank // (tp_size * cp_size)`;
  checked in `tests/unittest/others/test_mapping.py::TestMapping.test_mapping` at commit 2a9abd9: tp 2, pp 4,
  rank 6 has tp_group [6, 7] and pp_group [0, 2, 4, 6]); world size = pp_size * tp_size MPI
  ranks, so each node's CUDA_VISIBLE_DEVICES lists its stages' groups in stage order.
- Minimum compute capability 8.0: the lowest architecture on the supported-hardware list
  (Ampere A100; docs "Supported Hardware", TensorRT-LLM 1.x); older GPUs are community-only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from partitioner.export.base import Export, ends_cannot_express, plan_warnings, uniform_tp, unsupported_gpus
from partitioner.export.devices import cuda_ordinals, interleaved_nodes, rank_comments, rank_devices, single_node
from partitioner.export.shell import Step, listing
from partitioner.export.versions import version_line
from partitioner.export.view import PlanView, node_runs
from partitioner.export.workload import launchable
from partitioner.models.engines import resolve_engine

__all__ = ["MIN_CC", "OPTIONS_FILE", "validate_pp_partition", "render"]

MIN_CC = resolve_engine("trtllm").min_cc  # presets/engines.yaml (the docs cited above)
OPTIONS_FILE = "pp_partition.yaml"
SERVE_PORT = 8000  # trtllm-serve's default --port
TP_SOURCE = "tensorrt_llm/mapping.py Mapping.tp_size"


def validate_pp_partition(pp_partition: Sequence[int], pp_size: int, num_layers: int) -> list[int]:
    """`Mapping.pp_layers`'s checks, with its messages."""
    parts = [int(x) for x in pp_partition]
    if len(parts) != pp_size:
        raise ValueError(f"len(self.pp_partition)={len(parts)} does not match self.pp_size={pp_size}.")
    if sum(parts) != num_layers:
        raise ValueError(f"sum(self.pp_partition)={sum(parts)} does not match num_layers={num_layers}.")
    return parts


def render(view: PlanView, ordinals: Mapping[str, int] | None = None) -> Export:
    """The options YAML and `trtllm-serve` (one host; across hosts under mpirun, one rank per GPU)."""
    ords, warnings = cuda_ordinals(view, ordinals)
    warnings = plan_warnings(view) + warnings
    cannot = ends_cannot_express(view, "TensorRT-LLM")
    tp, tp_cannot = uniform_tp(view, "TensorRT-LLM", "trtllm", TP_SOURCE)
    cannot += tp_cannot
    unsupported, cc_warn = unsupported_gpus(view, "TensorRT-LLM", MIN_CC, "supported-hardware list")
    warnings += cc_warn
    parts = validate_pp_partition(view.decoder_counts, view.S, view.num_decoder_layers)
    w = launchable(view)
    options: dict[str, object] = {"pp_partition": parts}
    if w.kv_cache == "fp8":
        options["kv_cache_config"] = {"dtype": "fp8"}
    yaml_text = "\n".join(f"{k}: {json.dumps(v)}" for k, v in options.items()) + "\n"
    argv = ["trtllm-serve", w.model, "--pp_size", str(view.S), "--tp_size", str(tp)]
    if w.context:
        argv += ["--max_seq_len", str(w.context)]
    if w.max_sequences:
        argv += ["--max_batch_size", str(w.max_sequences)]
    if view.replica is not None:
        argv += ["--port", str(SERVE_PORT + view.replica)]
    options_file = OPTIONS_FILE if view.replica is None else f"pp_partition-r{view.replica}.yaml"
    argv += ["--extra_llm_api_options", options_file]
    if not w.model_known:
        warnings.append("the plan has no model id (hf_id:); replace MODEL with the model to serve")
    if 0 in parts:
        warnings.append("a stage has 0 decoder layers: Mapping.pp_layers accepts a 0 entry (torch split size 0)")
    head = view.stages[0].node
    if single_node(view):
        env = (("CUDA_VISIBLE_DEVICES", rank_devices(view, ords)),)
        steps = [Step(head, tuple(argv), env, "serve (rank k = k-th visible GPU)", (options_file, yaml_text))]
    else:
        per_node = [sum(view.stages[s].tp for s in idx) for _, idx in node_runs(view)]  # MPI ranks per node
        if len(set(per_node)) > 1 or interleaved_nodes(view):
            cannot.append(
                f"TensorRT-LLM places gpus_per_node consecutive ranks on each node, but the plan has "
                f"{per_node} consecutive ranks (GPUs) on nodes {[n for n, _ in node_runs(view)]}"
            )
        hosts = ",".join(f"{view.address(n) or n}:{k}" for n, k in zip(view.nodes, per_node, strict=True))
        warnings.append("multi-node TensorRT-LLM runs under MPI: the mpirun line assumes passwordless ssh and the same paths on every host")
        mpi = ["mpirun", "-H", hosts, "-n", str(view.world_size), "trtllm-llmapi-launch", *argv]
        steps = [Step(head, tuple(mpi), (), "serve from the first node (MPI starts one rank per GPU, node by node)", (options_file, yaml_text))]
        for n, idx in node_runs(view):
            devs = rank_devices(view, ords, idx)
            warnings.append(f"on node {n!r} set CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES={devs} for the MPI ranks (stage order)")
    header = [version_line("trtllm", view.engine_version)]
    header += [f"TensorRT-LLM: pipeline rank k runs stage k (tensor parallel {tp}"
              + (f": rank = pp_rank * {tp} + tp_rank" if tp > 1 else "") + ")", *[line[2:] for line in rank_comments(view)]]
    return Export("trtllm", listing(header, steps), tuple(warnings), tuple(cannot), tuple(unsupported), tuple(steps), not view.feasible)
