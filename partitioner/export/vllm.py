"""vLLM: `vllm serve` with `VLLM_PP_LAYER_PARTITION`, on one host or over Ray across hosts.

Rules, read from vllm-project/vllm (main, V1 engine; `vllm/v1/executor/ray_executor.py` at
commit 016b964):
- Layer split: `vllm/distributed/utils.py::get_pp_indices` reads `VLLM_PP_LAYER_PARTITION`
  and raises ValueError unless every entry parses as int, `len == pp_size` and
  `sum == num_hidden_layers` (`validate_partition`); entries may be 0. Rank k takes decoder
  layers [sum(p[:k]), sum(p[:k+1])); the embedding is on rank 0, the LM head on the last.
- One host (multiprocessing executor): rank k uses the k-th device of `CUDA_VISIBLE_DEVICES`,
  so any stage order is expressible.
- Across hosts (Ray executor): `RayDistributedExecutor._init_workers_ray` sorts the workers
  by `sort_by_driver_then_worker_ip` = (not on the driver's node, number of workers on the
  node, IP string) and gives the k-th worker of a node its k-th smallest GPU id
  (`node_gpus[node_id] = sorted(gpu_ids)`, `local_rank = node_workers[node_id].index(rank)`);
  a per-node `CUDA_VISIBLE_DEVICES` order is lost. `ray_rank_order` replays this; a plan is
  expressible iff the replay equals its stage order (`ray_realises`). Rank = pp_rank * tp + tp_rank.
  The IP string is the node's `address:` from cluster.yaml; where it is missing the node
  name stands in for it, and every tie it breaks is reported as an assumption.
- Tensor parallelism (`--tensor-parallel-size`): one degree for every stage
  (`vllm/config/parallel.py::ParallelConfig.tensor_parallel_size`, a single int). Global rank
  = pp_rank * tp + tp_rank: `vllm/distributed/parallel_state.py::initialize_model_parallel`
  reshapes `arange(world_size)` to (-1, dp, pp, tp), and `RayDistributedExecutor._init_workers_ray`
  builds `pp_tp_workers[pp_rank]` from `workers[pp_rank * tp + tp_rank]` (ray_executor.py at
  commit ff583b3, which also sets each worker's CUDA_VISIBLE_DEVICES to all of its node's
  sorted GPU ids and indexes it by local_rank). So the TP group of
  stage s is ranks [s*tp, (s+1)*tp): on one host `CUDA_VISIBLE_DEVICES` lists stage 0's group,
  then stage 1's, ...; over Ray a node's consecutive ranks take its GPUs in ascending id, so a
  plan is expressible iff on every node the groups, in stage order, hold ascending GPU ids
  (`ray_realises` on the expanded rank list; each group listed in ascending id).
- Data parallelism (`--data-parallel-size N`, identical replicas): on one host, local DP rank d
  runs on visible devices [d * world_size, (d+1) * world_size), world_size = pp * tp: current
  main offsets each worker's device index (`vllm/v1/worker/gpu_worker.py::Worker.init_device`,
  local_rank += dp_local_rank * pp * tp); older V1 releases set CUDA_VISIBLE_DEVICES per DP
  rank to the same block (`vllm/v1/engine/utils.py::get_device_indices`);
  `partitioner.export.deployment` prints that launch beside the per-replica ones.
- The multiprocessing executor across hosts (`--nnodes`) is not used: it asserts
  `world_size % nnodes_within_dp == 0` and gives every node `local_world_size` consecutive
  ranks (`vllm/v1/executor/multiproc_executor.py::MultiprocExecutor._get_parallel_sizes`),
  i.e. the same number of GPUs on every node, which heterogeneous plans rarely have.
- Minimum compute capability 7.0 (docs/getting_started/installation/gpu.cuda.inc.md,
  "GPU: compute capability 7.0 or higher", v0.14 docs).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from partitioner.export.base import Export, ends_cannot_express, plan_warnings, uniform_tp, unsupported_gpus
from partitioner.export.devices import cuda_ordinals, group_ordinals, interleaved_nodes, rank_comments, rank_devices
from partitioner.export.shell import Step, is_host_name, listing
from partitioner.export.view import PlanView
from partitioner.export.workload import VLLM_FLAGS, launchable, workload_flags
from partitioner.models.engines import resolve_engine
from partitioner.solvers.engine_ray import ray_rank_order, ray_realises

__all__ = ["MIN_CC", "RAY_PORT", "SERVE_PORT", "validate_partition", "ray_rank_order", "ray_realises", "render_vllm", "vllm_flags",
           "ray_port"]

MIN_CC = resolve_engine("vllm").min_cc  # presets/engines.yaml (the docs cited above)
RAY_PORT = 6379
SERVE_PORT = 8000  # vllm serve's default --port (vllm/entrypoints/openai/cli_args.py)
TP_SOURCE = "vllm/config/parallel.py ParallelConfig.tensor_parallel_size"


def validate_partition(partition_str: str, pp_size: int, num_hidden_layers: int) -> list[int]:
    """vLLM's (and SGLang's) own check of the env var, with the same ValueError messages."""
    try:
        partitions = [int(layer) for layer in partition_str.split(",")]
    except ValueError as err:
        raise ValueError(f"Invalid partition string: {partition_str}") from err
    if len(partitions) != pp_size:
        raise ValueError(f"len(partitions)={len(partitions)} does not match pp_size={pp_size}.")
    if sum(partitions) != num_hidden_layers:
        raise ValueError(f"sum(partitions)={sum(partitions)} does not match num_hidden_layers={num_hidden_layers}.")
    return partitions


def _assumed_ties(view: PlanView) -> list[str]:
    """Non-driver nodes with equal stage counts whose order rests on an assumed address."""
    head = view.stages[0].node
    count = {n: sum(st.tp for st in view.stages if st.node == n) for n in view.nodes}  # Ray workers per node
    out = []
    others = [n for n in view.nodes if n != head]
    for a, b in itertools.pairwise(others):
        if count[a] == count[b] and (view.address(a) is None or view.address(b) is None):
            out.append(f"{a!r} before {b!r}")
    return out


def vllm_flags(view: PlanView) -> tuple[list[str], list[str]]:
    """Workload flags of `vllm serve` (`workload.VLLM_FLAGS`) and warnings."""
    return workload_flags(view, VLLM_FLAGS)


def render_vllm(view: PlanView, ordinals: Mapping[str, int] | None = None) -> Export:
    """The vLLM launch: one `vllm serve` on one host, else `ray start` per host then `vllm serve`."""
    ords, warnings = cuda_ordinals(view, ordinals)
    warnings = plan_warnings(view) + warnings
    cannot = ends_cannot_express(view, "vLLM")
    tp, tp_cannot = uniform_tp(view, "vLLM", "vllm", TP_SOURCE)
    cannot += tp_cannot
    unsupported, cc_warn = unsupported_gpus(view, "vLLM", MIN_CC, "vLLM installation docs")
    warnings += cc_warn
    partition = ",".join(str(c) for c in view.decoder_counts)
    validate_partition(partition, view.S, view.num_decoder_layers)
    flags, flag_warn = vllm_flags(view)
    warnings += flag_warn
    if view.replica is not None:
        flags += ["--port", str(SERVE_PORT + view.replica)]
    model = launchable(view).model
    serve = ["vllm", "serve", model, "--pipeline-parallel-size", str(view.S), "--tensor-parallel-size", str(tp)]
    head = view.stages[0].node
    header = [f"vLLM: pipeline rank k runs stage k ({view.S} ranks, tensor parallel {tp}"
              + (f": global rank = pp_rank * {tp} + tp_rank" if tp > 1 else "") + ")"]
    header += [line[2:] for line in rank_comments(view)]
    steps: list[Step] = []
    if len(view.nodes) == 1:
        env = (("CUDA_VISIBLE_DEVICES", rank_devices(view, ords)), ("VLLM_PP_LAYER_PARTITION", partition))
        note = "serve (rank k = k-th visible GPU" + (f"; stage s = ranks {tp}s..{tp}s+{tp - 1})" if tp > 1 else ")")
        steps.append(Step(head, tuple(serve + flags), env, note))
    else:
        steps, more = _ray_steps(view, ords, [*serve, "--distributed-executor-backend", "ray", *flags], partition)
        warnings += more[0]
        cannot += more[1]
    for s, c in enumerate(view.decoder_counts):
        if c == 0:
            warnings.append(
                f"stage {s} ({view.stages[s].device!r}) has 0 decoder layers: VLLM_PP_LAYER_PARTITION accepts a 0 "
                "entry (only the count and the sum are checked), the rank then holds only the embedding/LM head"
            )
    text = listing(header, steps)
    return Export("vllm", text, tuple(warnings), tuple(cannot), tuple(unsupported), tuple(steps), not view.feasible)


def ray_port(view: PlanView) -> int:
    """The Ray head's port: one Ray cluster per replica of a deployment."""
    return RAY_PORT + (view.replica or 0)


def _ray_steps(view: PlanView, ords: Mapping[str, int], serve: list[str], partition: str) -> tuple[list[Step], tuple[list[str], list[str]]]:
    """`ray start` on the driver's node, then on each other node in rank order, then `vllm serve`."""
    warnings: list[str] = []
    cannot = [f"vLLM cannot return to node {n!r}: its stages must be consecutive ranks" for n in interleaved_nodes(view)]
    head = view.stages[0].node
    address = {n: view.address(n) or n for n in view.nodes}
    groups = group_ordinals(view, ords)
    planned = [(st.node, g) for st, grp in zip(view.stages, groups, strict=True) for g in grp]  # global rank order
    if not cannot and not ray_realises(planned, address):
        actual = ray_rank_order([(address[n], g) for n, g in planned], address[head])
        back = {v: k for k, v in address.items()}
        cannot.append(
            "vLLM's Ray executor ranks GPUs by (driver node first, nodes with fewer workers, IP) and by "
            f"ascending GPU id within a node: it would run {[(back[ip], g) for ip, g in actual]} instead of the "
            f"plan's {planned} (rank order); re-plan with `partition plan --engine vllm`"
        )
    missing = [n for n in view.nodes if view.address(n) is None]
    if missing:
        warnings.append(
            f"no address: for nodes {missing} in cluster.yaml: their node names are used as host names and as the "
            "IP strings vLLM orders ranks by" + (f" (this decides {', '.join(_assumed_ties(view))})" if _assumed_ties(view) else "")
        )
    bad_hosts = [n for n in missing if not is_host_name(n)]
    if bad_hosts:
        warnings.append(f"node names {bad_hosts!r} are not host names: set nodes: NAME: address: in cluster.yaml")
    head_addr = address[head]
    port = ray_port(view)
    steps = []
    for n in view.nodes:
        gpus = sorted(g for st, grp in zip(view.stages, groups, strict=True) if st.node == n for g in grp)
        argv = ["ray", "start"] + (["--head", "--port", str(port)] if n == head else ["--address", f"{head_addr}:{port}"])
        argv += ["--num-gpus", str(len(gpus))]
        if view.address(n):
            argv += ["--node-ip-address", address[n]]
        env = (("CUDA_VISIBLE_DEVICES", ",".join(map(str, gpus))),)
        steps.append(Step(n, tuple(argv), env, "join the Ray cluster with this node's stage GPUs" if n != head else "start the Ray head (the vLLM driver's node)"))
    env2 = [("VLLM_PP_LAYER_PARTITION", partition)] + ([("VLLM_HOST_IP", address[head])] if view.address(head) else [])
    env2 += [("RAY_ADDRESS", f"{head_addr}:{port}")] if view.replica is not None else []
    steps.append(Step(head, tuple(serve), tuple(env2), "serve, once every node has joined (`ray status`)"))
    return steps, (warnings, cannot)
