"""SGLang: `python -m sglang.launch_server` per node with `SGLANG_PP_LAYER_PARTITION`.

Rules, read from sgl-project/sglang (main, `python/sglang/srt/entrypoints/engine.py`):
- Layer split: `python/sglang/srt/distributed/utils.py::get_pp_indices` reads
  `SGLANG_PP_LAYER_PARTITION` with vLLM's checks (count == pp_size, sum == layers); the
  embedding is on pp rank 0, the LM head on the last.
- Ranks per node: `_calculate_rank_ranges` gives node `--node-rank r` the pp ranks
  [r * ppn, (r + 1) * ppn) with ppn = max(pp_size // nnodes, 1), so every node must hold
  the same number of consecutive stages (`node_ranks`); with pp_size % nnodes != 0 the last
  ranks are never launched. Within a node the scheduler of pp rank p uses
  `gpu_id = base_gpu_id + (p % ppn) * tp_size_per_node + tp_rank * gpu_id_step`, an index
  into `CUDA_VISIBLE_DEVICES`, so listing the node's devices in stage order places them.
- Tensor parallelism (`--tp-size`, one int for every stage: `python/sglang/srt/server_args.py`
  `ServerArgs.tp_size`): with nnodes <= pp_size, `_calculate_rank_ranges` gives each node
  tp_size_per_node = tp_size (nnodes_per_tp_group = max(nnodes // pp_size, 1) = 1) and the
  scheduler of (pp_rank, tp_rank) takes `gpu_id = base_gpu_id + (pp_rank % pp_size_per_node) *
  tp_size_per_node + (tp_rank % tp_size_per_node) * gpu_id_step` (`_launch_scheduler_processes`,
  `python/sglang/srt/entrypoints/engine.py`, main with pipeline parallelism, i.e. with the
  `_calculate_rank_ranges` helper; older engine.py without PP used base_gpu_id + tp_rank): the node's CUDA_VISIBLE_DEVICES lists its
  stages' groups in stage order, each group in TP-rank order.
- Data parallelism (`--dp-size`, identical replicas): `DataParallelController.launch_dp_schedulers`
  (`python/sglang/srt/managers/data_parallel_controller.py`, main) starts DP rank d at
  base_gpu_id + d * tp_size * pp_size * gpu_id_step (older releases without PP stepped by
  tp_size only), so on one host DP rank d takes visible devices [d * W, (d+1) * W), W = pp * tp
  (`gpu_id`, `partitioner.export.replicas`).
- Minimum compute capability: no documented minimum was found in the source; not checked.
"""

from __future__ import annotations

from collections.abc import Mapping

from partitioner.export.base import Export, ends_cannot_express, plan_warnings, uniform_tp
from partitioner.export.devices import cuda_ordinals, interleaved_nodes, rank_comments, rank_devices
from partitioner.export.shell import Step, is_host_name, listing
from partitioner.export.versions import version_line
from partitioner.export.view import PlanView, node_runs
from partitioner.export.vllm import validate_partition
from partitioner.export.workload import SGLANG_FLAGS, launchable, workload_flags
from partitioner.models.engines import resolve_engine

__all__ = ["MIN_CC", "DIST_PORT", "SERVE_PORT", "node_ranks", "gpu_id", "sglang_flags", "render"]

MIN_CC: tuple[int, int] | None = resolve_engine("sglang").min_cc  # none documented (module doc)
DIST_PORT = 5000
SERVE_PORT = 30000  # launch_server's default --port (server_args.py)
NCCL_PORT = 29500  # a fixed --nccl-port per replica (else SGLang picks a free one per node)
TP_SOURCE = "python/sglang/srt/server_args.py ServerArgs.tp_size"


def node_ranks(pp_size: int, nnodes: int, node_rank: int) -> range:
    """The pp ranks SGLang launches on `node_rank` (for nnodes <= pp_size, any tp_size):
    `_calculate_rank_ranges`."""
    ppn = max(pp_size // nnodes, 1)
    per_rank = max(nnodes // pp_size, 1)
    return range(ppn * (node_rank // per_rank), ppn * (node_rank // per_rank + 1))


def gpu_id(pp_rank: int, tp_rank: int, pp_size: int, tp_size: int, nnodes: int, base_gpu_id: int = 0,
           gpu_id_step: int = 1, dp_rank: int = 0) -> int:
    """The CUDA_VISIBLE_DEVICES index SGLang's scheduler of (pp_rank, tp_rank) of DP rank
    `dp_rank` uses on its node (`_calculate_rank_ranges` + `_launch_scheduler_processes`; the DP
    offset from `DataParallelController.launch_dp_schedulers`)."""
    pp_per_node = max(pp_size // nnodes, 1)
    tp_per_node = tp_size // max(nnodes // pp_size, 1)
    dp_offset = dp_rank * tp_size * pp_size * gpu_id_step
    return base_gpu_id + dp_offset + (pp_rank % pp_per_node) * tp_per_node + (tp_rank % tp_per_node) * gpu_id_step


def sglang_flags(view: PlanView) -> tuple[list[str], list[str]]:
    """Workload flags of `sglang.launch_server` (`workload.SGLANG_FLAGS`) and warnings."""
    return workload_flags(view, SGLANG_FLAGS)


def render(view: PlanView, ordinals: Mapping[str, int] | None = None) -> Export:
    """One `launch_server` per node in node-rank order (node 0 is stage 0's node)."""
    ords, warnings = cuda_ordinals(view, ordinals)
    warnings = plan_warnings(view) + warnings
    cannot = ends_cannot_express(view, "SGLang")
    tp, tp_cannot = uniform_tp(view, "SGLang", "sglang", TP_SOURCE)
    cannot += tp_cannot
    partition = ",".join(str(c) for c in view.decoder_counts)
    validate_partition(partition, view.S, view.num_decoder_layers)
    flags, more = sglang_flags(view)
    warnings += more
    runs = node_runs(view)
    nnodes = len(runs)
    cannot += [f"SGLang cannot return to node {n!r}: its stages must be consecutive ranks" for n in interleaved_nodes(view)]
    if not interleaved_nodes(view):
        for r, (node, idx) in enumerate(runs):
            if list(node_ranks(view.S, nnodes, r)) != idx:
                cannot.append(
                    f"SGLang launches pp ranks {list(node_ranks(view.S, nnodes, r))} on node rank {r} ({node!r}), "
                    f"but the plan puts stages {idx} there (every node needs {view.S}/{nnodes} consecutive stages)"
                )
                break
    head = runs[0][0]
    head_addr = view.address(head) or head
    if nnodes > 1 and view.address(head) is None:
        warnings.append(f"no address: for node {head!r}: --dist-init-addr uses its node name as the host name")
        if not is_host_name(head):
            warnings.append(f"node name {head!r} is not a host name: set nodes: NAME: address: in cluster.yaml")
    model = launchable(view).model
    k = view.replica or 0
    ports = [] if view.replica is None else ["--port", str(SERVE_PORT + k), "--nccl-port", str(NCCL_PORT + k)]
    steps = []
    for r, (node, idx) in enumerate(runs):
        argv = ["python", "-m", "sglang.launch_server", "--model-path", model, "--pp-size", str(view.S), "--tp-size", str(tp)]
        if nnodes > 1:
            argv += ["--nnodes", str(nnodes), "--node-rank", str(r), "--dist-init-addr", f"{head_addr}:{DIST_PORT + k}"]
        env = (
            ("CUDA_VISIBLE_DEVICES", rank_devices(view, ords, idx)),
            ("SGLANG_PP_LAYER_PARTITION", partition),
        )
        steps.append(Step(node, tuple(argv + flags + ports), env, f"node rank {r}: pp ranks {idx[0]}-{idx[-1]}"))
    header = [version_line("sglang", view.engine_version)]
    header += [f"SGLang: pipeline rank k runs stage k ({view.S} ranks, tensor parallel {tp}, {nnodes} node(s))"]
    header += [line[2:] for line in rank_comments(view)]
    return Export("sglang", listing(header, steps), tuple(warnings), tuple(cannot), (), tuple(steps), not view.feasible)
