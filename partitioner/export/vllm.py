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
- The multiprocessing executor across hosts (`--nnodes`) is not used: it asserts
  `world_size % nnodes_within_dp == 0` and gives every node `local_world_size` consecutive
  ranks (`vllm/v1/executor/multiproc_executor.py::MultiprocExecutor._get_parallel_sizes`),
  i.e. the same number of GPUs on every node, which heterogeneous plans rarely have.
- Minimum compute capability 7.0 (docs/getting_started/installation/gpu.cuda.inc.md,
  "GPU: compute capability 7.0 or higher", v0.14 docs).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

from partitioner.export.base import Export, ends_cannot_express, plan_warnings, unsupported_gpus
from partitioner.export.devices import cuda_ordinals, interleaved_nodes, rank_comments
from partitioner.export.shell import Step, is_host_name, listing
from partitioner.export.view import PlanView
from partitioner.export.workload import launchable

__all__ = ["MIN_CC", "RAY_PORT", "validate_partition", "ray_rank_order", "ray_realises", "render_vllm", "vllm_flags"]

MIN_CC = (7, 0)
RAY_PORT = 6379


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


def ray_rank_order(workers: Sequence[tuple[str, int]], driver_ip: str) -> list[tuple[str, int]]:
    """(ip, GPU id) of rank 0, 1, ... for Ray workers created as `workers` (ip, GPU id).

    A pure replay of `RayDistributedExecutor._init_workers_ray`: stable sort by
    (ip != driver_ip, workers on that ip, ip), then the k-th worker of an ip gets the k-th
    smallest GPU id of that ip.
    """
    counts: dict[str, int] = {}
    for ip, _ in workers:
        counts[ip] = counts.get(ip, 0) + 1
    ranked = sorted(workers, key=lambda w: (0 if w[0] == driver_ip else 1, counts[w[0]], w[0]))
    gpus = {ip: sorted(g for i, g in workers if i == ip) for ip in counts}
    seen: dict[str, int] = {}
    out = []
    for ip, _ in ranked:
        k = seen.get(ip, 0)
        seen[ip] = k + 1
        out.append((ip, gpus[ip][k]))
    return out


def ray_realises(stages: Sequence[tuple[str, int]], address: Mapping[str, str]) -> bool:
    """Whether Ray, driven from stage 0's node, ranks (node, ordinal) `stages` in this order."""
    ips = [(address.get(n, n), g) for n, g in stages]
    return ray_rank_order(ips, ips[0][0]) == ips


def _assumed_ties(view: PlanView) -> list[str]:
    """Non-driver nodes with equal stage counts whose order rests on an assumed address."""
    head = view.stages[0].node
    count = {n: sum(1 for st in view.stages if st.node == n) for n in view.nodes}
    out = []
    others = [n for n in view.nodes if n != head]
    for a, b in itertools.pairwise(others):
        if count[a] == count[b] and (view.address(a) is None or view.address(b) is None):
            out.append(f"{a!r} before {b!r}")
    return out


def vllm_flags(view: PlanView) -> tuple[list[str], list[str]]:
    """Workload flags of `vllm serve` (vllm/engine/arg_utils.py names) and warnings."""
    w = launchable(view)
    flags: list[str] = []
    warn: list[str] = []
    if w.dtype:
        flags += ["--dtype", w.dtype]
    if w.weights == "fp8":
        flags += ["--quantization", "fp8"]
    elif w.weights not in (None, "bf16", "fp16"):
        warn.append(f"weights are {w.weights}: add --quantization for your checkpoint's method (awq, gptq, ...)")
    if w.kv_cache == "fp8":
        flags += ["--kv-cache-dtype", "fp8"]
    elif w.kv_cache not in (None, "bf16", "fp16"):
        warn.append(f"vLLM has no {w.kv_cache} KV cache; it will use the model dtype")
    if w.context:
        flags += ["--max-model-len", str(w.context)]
    if w.max_sequences:
        flags += ["--max-num-seqs", str(w.max_sequences)]
    if not w.model_known:
        warn.append("the plan has no model id (hf_id:); replace MODEL with the model to serve")
    return flags, warn


def render_vllm(view: PlanView, ordinals: Mapping[str, int] | None = None) -> Export:
    """The vLLM launch: one `vllm serve` on one host, else `ray start` per host then `vllm serve`."""
    ords, warnings = cuda_ordinals(view, ordinals)
    warnings = plan_warnings(view) + warnings
    cannot = ends_cannot_express(view, "vLLM")
    unsupported, cc_warn = unsupported_gpus(view, "vLLM", MIN_CC, "vLLM installation docs")
    warnings += cc_warn
    partition = ",".join(str(c) for c in view.decoder_counts)
    validate_partition(partition, view.S, view.num_decoder_layers)
    flags, flag_warn = vllm_flags(view)
    warnings += flag_warn
    model = launchable(view).model
    serve = ["vllm", "serve", model, "--pipeline-parallel-size", str(view.S), "--tensor-parallel-size", "1"]
    head = view.stages[0].node
    header = [f"vLLM: pipeline rank k runs stage k ({view.S} ranks, tensor parallel 1)"]
    header += [line[2:] for line in rank_comments(view)]
    steps: list[Step] = []
    if len(view.nodes) == 1:
        visible = ",".join(str(ords[st.device]) for st in view.stages)
        env = (("CUDA_VISIBLE_DEVICES", visible), ("VLLM_PP_LAYER_PARTITION", partition))
        steps.append(Step(head, tuple(serve + flags), env, "serve (rank k = k-th visible GPU)"))
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


def _ray_steps(view: PlanView, ords: Mapping[str, int], serve: list[str], partition: str) -> tuple[list[Step], tuple[list[str], list[str]]]:
    """`ray start` on the driver's node, then on each other node in rank order, then `vllm serve`."""
    warnings: list[str] = []
    cannot = [f"vLLM cannot return to node {n!r}: its stages must be consecutive ranks" for n in interleaved_nodes(view)]
    head = view.stages[0].node
    address = {n: view.address(n) or n for n in view.nodes}
    planned = [(st.node, ords[st.device]) for st in view.stages]
    if not cannot and not ray_realises(planned, address):
        actual = ray_rank_order([(address[n], g) for n, g in planned], address[head])
        back = {v: k for k, v in address.items()}
        cannot.append(
            "vLLM's Ray executor ranks GPUs by (driver node first, nodes with fewer workers, IP) and by "
            f"ascending GPU id within a node: it would run {[(back[ip], g) for ip, g in actual]} instead of the "
            f"plan's {planned}; re-plan with `partition plan --engine vllm`"
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
    steps = []
    for n in view.nodes:
        gpus = sorted(ords[st.device] for st in view.stages if st.node == n)
        argv = ["ray", "start"] + (["--head", "--port", str(RAY_PORT)] if n == head else ["--address", f"{head_addr}:{RAY_PORT}"])
        argv += ["--num-gpus", str(len(gpus))]
        if view.address(n):
            argv += ["--node-ip-address", address[n]]
        env = (("CUDA_VISIBLE_DEVICES", ",".join(map(str, gpus))),)
        steps.append(Step(n, tuple(argv), env, "join the Ray cluster with this node's stage GPUs" if n != head else "start the Ray head (the vLLM driver's node)"))
    env2 = [("VLLM_PP_LAYER_PARTITION", partition)] + ([("VLLM_HOST_IP", address[head])] if view.address(head) else [])
    steps.append(Step(head, tuple(serve), tuple(env2), "serve, once every node has joined (`ray status`)"))
    return steps, (warnings, cannot)
