"""Exports of a deployment (several pipelines, `partitioner.deploy.deployment.Deployment`).

A deployment JSON ("partitioner.deployment/1") holds `replicas`, each a plan as
"partitioner.plan/1" plus its router `weight`, and the totals in `serving`. Each replica is
exported by its target's own rules (`partitioner.export.render`), as replica r
(`PlanView.replica`), so that replicas sharing a host do not collide: its own server port
(the engine's default + r), vLLM Ray head port 6379 + r, SGLang `--dist-init-addr` port
5000 + r and `--nccl-port` 29500 + r, TensorRT-LLM options file `pp_partition-rR.yaml`,
llama.cpp rpc-server ports 50052 + 100 r + k. Scripts are named `NN-rR-host.sh`.

What cannot share a host: vLLM's Ray executor joins a host's GPUs to one Ray cluster
(`ray start` per host), so two replicas that both use Ray on one host are not expressible.

The router weights (request share of replica r = its tokens/s over the total, as the planner
computed them) are written as ROUTER_FILE beside the scripts, each with the replica's endpoint.

Data parallelism, when every replica is identical (same GPUs, TP degrees and layer ranges):
- vLLM `--data-parallel-size N`: on one host, local DP rank d takes visible devices
  [d * world_size, (d+1) * world_size), world_size = pp * tp (`Worker.init_device` in
  `vllm/v1/worker/gpu_worker.py`; older: `vllm/v1/engine/utils.py::get_device_indices`), so
  listing each replica's rank order one after the other places every replica on its GPUs;
  printed as an alternative launch. Across hosts, when every replica sits on one host: the
  first host runs `vllm serve ... --data-parallel-size N --data-parallel-size-local n_0
  --data-parallel-address IP_0 --data-parallel-rpc-port P` (the API server and its n_0 local
  ranks), every other host `--headless` with its local count and `--data-parallel-start-rank`
  (the ranks before it), so rank r = start + local index (`EngineArgs.create_engine_config` in
  `vllm/engine/arg_utils.py`, vllm-project/vllm 99d7eb5: `data_parallel_rank =
  data_parallel_start_rank or 0`, and a start rank without `--headless` would switch the head
  to hybrid load balancing; `run_headless` in `vllm/entrypoints/cli/serve.py`, 00a5fdd: the
  headless engines hand-shake with data_parallel_address:data_parallel_rpc_port). Each host's
  CUDA_VISIBLE_DEVICES lists its replicas one after the other, as on one host. A replica that
  spans hosts is only noted (the per-replica launches follow).
- SGLang `--dp-size N`: `DataParallelController.launch_dp_schedulers`
  (`python/sglang/srt/managers/data_parallel_controller.py`, main) starts DP rank d at GPU
  d * tp_size * pp_size (times gpu_id_step), so the same listing places them on one host
  (`partitioner.export.sglang.gpu_id`); printed as an alternative launch too.
Across hosts the output says the replicas are identical and launches each one.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from partitioner.errors import ConfigError
from partitioner.export.base import Export
from partitioner.export.shell import Step, comment, listing
from partitioner.export.view import PlanView

__all__ = ["DEPLOYMENT_FORMAT", "ROUTER_FORMAT", "ROUTER_FILE", "DeploymentView", "is_deployment", "parse_deployment", "load_export_input",
           "render_deployment", "serve_port"]

DEPLOYMENT_FORMAT = "partitioner.deployment/1"  # = partitioner.deploy.deployment.DEPLOYMENT_FORMAT
ROUTER_FORMAT = "partitioner.router/1"
ROUTER_FILE = "router-weights.json"
DP_RPC_PORT = 13345  # vLLM's data-parallel handshake port, passed explicitly on every host


@dataclass(frozen=True)
class DeploymentView:
    """The replicas (each a PlanView numbered `replica`), their router weights and the totals."""

    replicas: tuple[PlanView, ...]
    weights: tuple[float, ...]
    identical: bool
    serving: Mapping[str, Any]
    unused: tuple[str, ...]
    document: Mapping[str, Any]


def is_deployment(data: Any) -> bool:
    """A deployment dict, or a `Deployment` object (duck-typed: replicas and to_dict)."""
    if isinstance(data, Mapping):
        return data.get("format") == DEPLOYMENT_FORMAT
    return hasattr(data, "replicas") and hasattr(data, "to_dict")


def parse_deployment(data: Any, file: str | None = None) -> DeploymentView:
    """Validate a deployment dict (`Deployment.to_dict()`); errors name `replicas[r]...`."""
    from partitioner.export.load import parse_plan

    if not isinstance(data, Mapping):
        data = data.to_dict()
    reps = data.get("replicas")
    if not isinstance(reps, list) or not reps:
        raise ConfigError("a deployment needs a non-empty list of replicas", file=file, location="replicas")
    views: list[PlanView] = []
    weights: list[float] = []
    seen: dict[str, int] = {}
    for r, rep in enumerate(reps):
        if not isinstance(rep, Mapping):
            raise ConfigError(f"must be a plan object (got {type(rep).__name__})", file=file, location=f"replicas[{r}]")
        w = rep.get("weight")
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not 0 <= w <= 1:
            raise ConfigError(f"must be a number in [0, 1] (got {w!r})", file=file, location=f"replicas[{r}].weight")
        try:
            view = parse_plan({k: v for k, v in rep.items() if k != "weight"}, file=file)
        except ConfigError as exc:
            raise ConfigError(exc.message, file=file, location=f"replicas[{r}].{exc.location}" if exc.location else f"replicas[{r}]") from None
        for st in view.stages:
            for dev in st.group:
                if dev in seen:
                    raise ConfigError(f"device {dev!r} is also in replica {seen[dev]}", file=file, location=f"replicas[{r}].stages")
                seen[dev] = r
        views.append(dataclasses.replace(view, replica=r))
        weights.append(float(w))
    return DeploymentView(tuple(views), tuple(weights), bool(data.get("identical_replicas")),
                          dict(data.get("serving") or {}), tuple(data.get("unused_devices") or ()), dict(data))


def serve_port(target: str, replica: int) -> int | None:
    from partitioner.models.engines import engine_ids, resolve_engine

    base = resolve_engine(target).serve_port if target in engine_ids() else None  # presets/engines.yaml
    return None if base is None else base + replica


def _only(given: Mapping[str, Any] | None, view: PlanView) -> dict[str, Any]:
    names = {d for st in view.stages for d in st.group}
    return {k: v for k, v in (given or {}).items() if k in names}


def render_deployment(dv: DeploymentView, target: str, ordinals: Mapping[str, int] | None = None,
                      endpoints: Mapping[str, str] | None = None) -> Export:
    """One launch per replica (per host), the router weights file, and the data-parallel alternative."""
    from partitioner.export.single import render_plan as render
    from partitioner.jsonio import dumps
    from partitioner.registry import EXPORT_TARGETS as REGISTRY
    from partitioner.registry import LAUNCH_TARGETS as ENGINES

    if target == "json":
        return Export("json", dumps(dict(dv.document), indent=2) + "\n", infeasible=not all(v.feasible for v in dv.replicas))
    given = {**(ordinals or {}), **(endpoints or {})}
    known = {d for v in dv.replicas for st in v.stages for d in st.group}
    unknown = sorted(set(given) - known)
    if unknown:
        from partitioner.errors import InputError

        raise InputError(f"--device-id/--rpc-endpoint name devices in no replica: {', '.join(map(repr, unknown))}")
    takes_eps = REGISTRY[target][3]
    outs = []
    for v in dv.replicas:
        kw: dict[str, Any] = {"ordinals": _only(ordinals, v)}
        if takes_eps:
            kw["endpoints"] = _only(endpoints, v)
        outs.append(render(v, target, **kw))
    warnings, cannot, unsupported, steps, text = [], [], [], [], []
    header = [f"{len(dv.replicas)} replicas of {dv.replicas[0].model or 'the model'}: one launch each; "
              f"route requests by the weights in {ROUTER_FILE}"]
    routes = []
    for v, w, out in zip(dv.replicas, dv.weights, outs, strict=True):
        r = v.replica or 0
        port = serve_port(target, r)
        head = v.stages[0].node
        url = f"http://{v.address(head) or head}:{port}" if port is not None and target in ENGINES else None
        tps = (v.serving or {}).get("tokens_per_s")
        routes.append({"replica": r, "weight": w, "url": url, "tokens_per_s": tps,
                       "devices": [d for st in v.stages for d in st.group]})
        text.append(comment(f"=== replica {r}: router weight {w:.4f}" + (f", {url}" if url else "") + " ===") + "\n" + out.text)
        warnings += [f"replica {r}: {m}" for m in out.warnings]
        cannot += [f"replica {r}: {m}" for m in out.cannot_express]
        unsupported += [f"replica {r}: {m}" for m in out.unsupported]
        steps += [dataclasses.replace(s, tag=f"r{r}") for s in out.steps]
    cannot += _shared_ray_hosts(dv, outs) if target == "vllm" else []
    dp_text, dp_notes = _data_parallel(dv, target, ordinals)
    header += dp_notes
    router = {"format": ROUTER_FORMAT, "target": target, "identical_replicas": dv.identical,
              "data_parallel_size": len(dv.replicas) if dv.identical else None, "replicas": routes}
    head = json.dumps({k: v for k, v in router.items() if k != "replicas"})[:-1]
    router_text = head + ', "replicas": [\n' + ",\n".join("  " + json.dumps(x) for x in routes) + "\n]}\n"
    body = listing(header, []) + "".join(text) + dp_text
    body += f"# the router weights ({ROUTER_FILE}; `--write-scripts DIR` writes it beside the scripts):\n"
    body += "".join(comment(line) + "\n" for line in router_text.splitlines())
    return Export(target, body, tuple(warnings), tuple(cannot), tuple(unsupported), tuple(steps),
                  not all(v.feasible for v in dv.replicas), files=((ROUTER_FILE, router_text),))


def _shared_ray_hosts(dv: DeploymentView, outs: list[Export]) -> list[str]:
    """Hosts on which two replicas each `ray start` (vLLM's Ray executor: one Ray cluster per host)."""
    users: dict[str, list[int]] = {}
    for v, out in zip(dv.replicas, outs, strict=True):
        for s in out.steps:
            if s.argv[:2] == ("ray", "start"):
                users.setdefault(s.host, []).append(v.replica or 0)
    return [f"replicas {rs} each start Ray on host {h!r}: a host joins one Ray cluster (vLLM's Ray executor takes the "
            "GPUs of the cluster it is driven from); give each multi-host replica its own hosts"
            for h, rs in users.items() if len(rs) > 1]


def _data_parallel(dv: DeploymentView, target: str, ordinals: Mapping[str, int] | None) -> tuple[str, list[str]]:
    """The engine's data-parallel launch for identical replicas on one host (module doc), and notes."""
    from partitioner.models.engines import engine_ids, resolve_engine

    flag = resolve_engine(target).data_parallel_flag if target in engine_ids() else None  # presets/engines.yaml
    if not dv.identical or flag is None:
        return "", []
    n = len(dv.replicas)
    hosts = {st.node for v in dv.replicas for st in v.stages}
    if len(hosts) > 1:
        if target == "vllm" and all(len({st.node for st in v.stages}) == 1 for v in dv.replicas):
            return _vllm_hosts(dv, ordinals)
        return "", [f"the replicas are identical: {target} {flag} {n} can express them; across hosts its rank "
                    "placement is not printed here, so one launch per replica follows"]
    dp = _local_launch(list(dv.replicas), target, ordinals, (flag, str(n)),
                       f"alternative to the launches above: all {n} replicas as one {target} launch, DP rank d on "
                       "the d-th block of visible GPUs")
    return listing([f"=== the replicas are identical: {flag} {n} ==="], [dp]), [
        f"the replicas are identical: {flag} {n} runs them as one launch (printed last)"]


def _local_launch(views: list[PlanView], target: str, ordinals: Mapping[str, int] | None, extra: tuple[str, ...],
                  comment: str) -> Step:
    """The serve step of `views[0]` (replicas on one host) launching all of `views`: their GPUs one
    after the other in CUDA_VISIBLE_DEVICES (local DP rank d on the d-th block) and `extra` flags."""
    from partitioner.export.devices import cuda_ordinals, rank_devices
    from partitioner.export.single import render_plan as render

    visible = []
    for v in views:
        ords, _ = cuda_ordinals(v, _only(ordinals, v))
        visible.append(rank_devices(v, ords))
    serve = render(dataclasses.replace(views[0], replica=None), target, ordinals=_only(ordinals, views[0])).steps[-1]
    env = tuple((k, ",".join(visible) if k == "CUDA_VISIBLE_DEVICES" else val) for k, val in serve.env)
    return Step(serve.host, (*serve.argv, *extra), env, comment)


def _vllm_hosts(dv: DeploymentView, ordinals: Mapping[str, int] | None) -> tuple[str, list[str]]:
    """vLLM data parallelism over hosts, each replica on one host (module doc): the first host is
    the head with the API server, the others join it headless from their start rank."""
    n = len(dv.replicas)
    by_host: dict[str, list[PlanView]] = {}
    for v in dv.replicas:
        by_host.setdefault(v.stages[0].node, []).append(v)
    head = next(iter(by_host))
    address = dv.replicas[0].address(head)
    notes = [f"the replicas are identical: --data-parallel-size {n} over {len(by_host)} hosts runs them as one "
             f"deployment behind {head}'s API server (printed last)"]
    if address is None:
        notes.append(f"no address for host {head!r} in the cluster: --data-parallel-address uses its name")
    steps, start = [], 0
    for host, views in by_host.items():
        common = ("--data-parallel-size", str(n), "--data-parallel-size-local", str(len(views)),
                  "--data-parallel-address", address or head, "--data-parallel-rpc-port", str(DP_RPC_PORT))
        extra = common if host == head else (*common, "--headless", "--data-parallel-start-rank", str(start))
        role = "the head: API server and DP ranks" if host == head else "headless: DP ranks"
        steps.append(_local_launch(views, "vllm", ordinals, extra,
                                   f"alternative to the launches above: {role} {start}..{start + len(views) - 1}"))
        start += len(views)
    return listing([f"=== the replicas are identical: --data-parallel-size {n} across hosts ==="], steps), notes


def load_export_input(path: str | Path) -> Any:
    """plan.json as a PlanView, or a deployment JSON ("partitioner.deployment/1", several
    replicas) as a `DeploymentView` (moved from partitioner.export.load, which this module imports)."""
    from partitioner.export.load import _read_json, parse_plan

    p = Path(path)
    data = _read_json(p)
    if is_deployment(data):
        return parse_deployment(data, file=str(p))
    return parse_plan(data, file=str(p))
