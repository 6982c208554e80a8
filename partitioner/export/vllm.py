"""vLLM: `vllm serve` with `VLLM_PP_LAYER_PARTITION`, on one host or across hosts.

Rules, read from vllm-project/vllm 0.33.0 (the wheel on PyPI; V1 engine):
- Layer split: `vllm/distributed/utils.py::get_pp_indices` reads `VLLM_PP_LAYER_PARTITION`
  and raises ValueError unless every entry parses as int, `len == pp_size` and
  `sum == num_hidden_layers` (`validate_partition`); entries may be 0. Rank k takes decoder
  layers [sum(p[:k]), sum(p[:k+1])); the embedding is on rank 0, the LM head on the last.
- One host (multiprocessing executor): rank k uses the k-th device of `CUDA_VISIBLE_DEVICES`,
  so any stage order is expressible.
- Across hosts, multiprocessing (`--nnodes N --node-rank r --master-addr --master-port`, the
  other nodes `--headless`): `MultiprocExecutor._get_parallel_sizes` asserts
  `world_size % nnodes_within_dp == 0`, every node runs `local_world_size = world_size // nnodes`
  workers and node r's global ranks start at `local_world_size * node_rank_within_dp`
  (`vllm/v1/executor/multiproc_executor.py::MultiprocExecutor._init_executor`); local rank k
  uses the k-th visible device (`ParallelConfig.get_local_gpu_index` returns the local rank
  when nnodes > 1). Deterministic, so it is used whenever every node holds the same number of
  ranks and the nodes' ranks are consecutive.
- Across hosts, Ray (`--distributed-executor-backend ray`, `RayExecutorV2` in
  `vllm/v1/executor/ray_executor_v2.py::_init_executor`): ranks follow
  `vllm/v1/executor/ray_utils.py::get_bundles_sorted_by_node`, which sorts the placement
  group's bundles by (not on the driver's node, Ray node id); node ids are random hex
  strings, so only the driver's node is placed first for sure. Within a node the k-th worker
  gets the node's k-th smallest physical GPU id (`node_physical_gpu_ids[node] = sorted(...)`,
  `local_rank = node_workers[node].index(i)`). `ray_rank_order` replays this for given node
  ids; the Ray launch is deterministic only for two hosts (the driver's and one other).
  `VLLM_RAY_BUNDLE_INDICES` only picks bundles, and Ray decides which node holds a bundle
  (`ray.util.placement_group(..., strategy="PACK")` in `initialize_ray_cluster`), so it cannot
  fix the order. Plans over 3 or more hosts with unequal GPU counts per host are therefore
  marked not expressible. `ray_realises` says whether the export's launch places every rank.
- Tensor parallelism (`--tensor-parallel-size`): one degree for every stage
  (`vllm/config/parallel.py::ParallelConfig.tensor_parallel_size`, a single int). Global rank
  = pp_rank * tp + tp_rank (`vllm/distributed/parallel_state.py::initialize_model_parallel`
  reshapes `arange(world_size)` to (-1, dp, pp, tp)), so the TP group of stage s is ranks
  [s*tp, (s+1)*tp): `CUDA_VISIBLE_DEVICES` lists stage 0's group, then stage 1's, ...; under
  Ray a node's consecutive ranks take its GPUs in ascending id, so each node's groups, in
  stage order, must hold ascending GPU ids.
- Data parallelism (`--data-parallel-size N`, identical replicas): on one host, local DP rank d
  runs on visible devices [d * world_size, (d+1) * world_size), world_size = pp * tp: current
  main offsets each worker's device index (`vllm/v1/worker/gpu_worker.py::Worker.init_device`,
  local_rank += dp_local_rank * pp * tp); older V1 releases set CUDA_VISIBLE_DEVICES per DP
  rank to the same block (`vllm/v1/engine/utils.py::get_device_indices`);
  `partitioner.export.deployment` prints that launch beside the per-replica ones.
- Older releases (`--engine-version`, rules per version in presets/engines.yaml `versions`):
  vLLM 0.11.0 has no multi-node multiprocessing launch (no `nnodes` in `vllm/config/parallel.py`)
  and its V1 engine runs `RayDistributedExecutor` (`vllm/v1/executor/abstract.py`), which sorts
  workers by (not driver, workers on the node, IP string) (`_init_workers_ray`,
  `sort_by_driver_then_worker_ip`); `ray_rank_order(rule="ip")` replays it, and every host count
  is then deterministic.
- Minimum compute capability 7.0 (docs/getting_started/installation/gpu.cuda.inc.md,
  "GPU: compute capability 7.0 or higher", v0.14 docs).
"""

from __future__ import annotations

from collections.abc import Mapping

from partitioner.export.base import Export, ends_cannot_express, plan_warnings, uniform_tp, unsupported_gpus
from partitioner.export.devices import cuda_ordinals, group_ordinals, interleaved_nodes, rank_comments, rank_devices
from partitioner.export.shell import Step, is_host_name, listing
from partitioner.export.versions import release, version_line
from partitioner.export.view import PlanView
from partitioner.export.workload import VLLM_FLAGS, launchable, workload_flags
from partitioner.models.engines import resolve_engine
from partitioner.solvers.engine_ray import multiproc_nodes, ray_rank_order, ray_realises, runs

__all__ = ["MIN_CC", "RAY_PORT", "SERVE_PORT", "validate_partition", "ray_rank_order", "ray_realises", "multiproc_nodes",
           "render_vllm", "vllm_flags", "ray_port"]

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
    rules = release("vllm", view.engine_version)[1]
    header = [version_line("vllm", view.engine_version)]
    header += [f"vLLM: pipeline rank k runs stage k ({view.S} ranks, tensor parallel {tp}"
              + (f": global rank = pp_rank * {tp} + tp_rank" if tp > 1 else "") + ")"]
    header += [line[2:] for line in rank_comments(view)]
    steps: list[Step] = []
    if len(view.nodes) == 1:
        env = (("CUDA_VISIBLE_DEVICES", rank_devices(view, ords)), ("VLLM_PP_LAYER_PARTITION", partition))
        note = "serve (rank k = k-th visible GPU" + (f"; stage s = ranks {tp}s..{tp}s+{tp - 1})" if tp > 1 else ")")
        steps.append(Step(head, tuple(serve + flags), env, note))
    elif rules.get("multiproc_nodes") and _mp_launch(view, ords):
        steps = _mp_steps(view, ords, [*serve, *flags], partition)
        header.append(f"multiprocessing over {len(view.nodes)} hosts: node rank r runs global ranks "
                      f"[r*{view.S * tp // len(view.nodes)}, (r+1)*{view.S * tp // len(view.nodes)})")
    else:
        steps, more = _ray_steps(view, ords, [*serve, "--distributed-executor-backend", "ray", *flags], partition,
                                 str(rules.get("ray_order", "node_id")))
        warnings += more[0]
        cannot += more[1]
    bad_hosts = [n for n in view.nodes if len(view.nodes) > 1 and view.address(n) is None and not is_host_name(n)]
    if bad_hosts:
        warnings.append(f"node names {bad_hosts!r} are not host names: set nodes: NAME: address: in cluster.yaml")
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


def _ray_steps(view: PlanView, ords: Mapping[str, int], serve: list[str], partition: str,
               rule: str = "node_id") -> tuple[list[Step], tuple[list[str], list[str]]]:
    """`ray start` on the driver's node, then on each other node in rank order, then `vllm serve`."""
    warnings: list[str] = []
    cannot = [f"vLLM cannot return to node {n!r}: its stages must be consecutive ranks" for n in interleaved_nodes(view)]
    head = view.stages[0].node
    address = {n: view.address(n) or n for n in view.nodes}
    groups = group_ordinals(view, ords)
    planned = [(st.node, g) for st, grp in zip(view.stages, groups, strict=True) for g in grp]  # global rank order
    if not cannot and rule == "ip" and not ray_realises(planned, address, rule="ip"):
        actual = ray_rank_order([(address[n], g) for n, g in planned], address[head], rule="ip")
        back = {v: k for k, v in address.items()}
        cannot.append(
            "vLLM's Ray executor (this release) ranks GPUs by (driver node first, nodes with fewer workers, IP) and by "
            f"ascending GPU id within a node: it would run {[(back[ip], g) for ip, g in actual]} instead of the "
            f"plan's {planned} (rank order); re-plan with `partition plan --engine vllm`"
        )
    elif not cannot and rule == "ip":
        pass
    elif not cannot and len(view.nodes) > 2:
        cannot.append(
            f"vLLM's Ray executor puts the driver's node first and orders the other {len(view.nodes) - 1} nodes by their "
            "random Ray node id (vllm/v1/executor/ray_utils.py::get_bundles_sorted_by_node), and its multiprocessing "
            "launch needs the same number of GPUs on every node: no launch places these ranks for certain; "
            "re-plan with `partition plan --engine vllm`"
        )
    elif not cannot and not ray_realises(planned, address):
        actual = ray_rank_order(planned, head)
        cannot.append(
            "vLLM's Ray executor hands a node's GPUs to its ranks in ascending GPU id: it would run "
            f"{actual} instead of the plan's {planned} (rank order); re-plan with `partition plan --engine vllm`"
        )
    missing = [n for n in view.nodes if view.address(n) is None]
    if missing:
        warnings.append(f"no address: for nodes {missing} in cluster.yaml: their node names are used as host names")
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


MASTER_PORT = 29501  # ParallelConfig.master_port's default (vllm/config/parallel.py)


def _mp_launch(view: PlanView, ords: Mapping[str, int]) -> bool:
    """Whether the multiprocessing multi-node launch applies: consecutive nodes, equal rank counts."""
    groups = group_ordinals(view, ords)
    return multiproc_nodes([(st.node, g) for st, grp in zip(view.stages, groups, strict=True) for g in grp])


def _mp_steps(view: PlanView, ords: Mapping[str, int], serve: list[str], partition: str) -> list[Step]:
    """`vllm serve --nnodes N --node-rank r --headless` on every other node, then node rank 0 (the
    API server) on stage 0's node; each node's CUDA_VISIBLE_DEVICES lists its ranks' GPUs in order."""
    order = runs([st.node for st in view.stages])
    head = order[0]
    mp = ["--nnodes", str(len(order)), "--master-addr", view.address(head) or head,
          "--master-port", str(MASTER_PORT + (view.replica or 0))]
    steps = []
    for r, node in [*list(enumerate(order))[1:], (0, head)]:
        idx = [s for s, st in enumerate(view.stages) if st.node == node]
        env = (("CUDA_VISIBLE_DEVICES", rank_devices(view, ords, idx)), ("VLLM_PP_LAYER_PARTITION", partition))
        argv = [*serve, *mp, "--node-rank", str(r)] + (["--headless"] if r else [])
        note = (f"node rank {r} (headless workers), before or with node rank 0" if r
                else "node rank 0: the API server (the other nodes' headless workers join it)")
        steps.append(Step(node, tuple(argv), env, note))
    return steps
