"""`partition calibrate engine-log LOG`: the memory an engine held besides weights and KV cache.

    partition calibrate engine-log vllm.log
    partition calibrate engine-log vllm.log --cluster cluster.yaml --write-cluster calibrated.yaml
    partition calibrate engine-log sglang.log --cluster cluster.yaml --devices g0,g1 --json

Reads a vLLM or SGLang start-up log (`partitioner.calibrate.engine_log`), prints the weights, KV
pool and non-KV memory it logged, and with --write-cluster writes a copy of --cluster whose devices
(all, or --devices) carry `non_kv_gib`: costs/kvpool.py then sizes their KV pool from that measured
share instead of the modelled activation, non-torch and sampler memory, so one launch calibrates
the next plan. The file is written by the safe path of `partition calibrate profile` (never over
the inputs or a file the user wrote).
"""

from __future__ import annotations

import json
from typing import Any

import click

from partitioner.errors import InputError

__all__ = ["engine_log"]


@click.command("engine-log")
@click.argument("log_file", metavar="LOG", type=click.Path(dir_okay=False))
@click.option("--cluster", "cluster_file", type=click.Path(dir_okay=False), default=None,
              help="The cluster the engine ran on: its GPUs' memory where the log has none; needed for --write-cluster.")
@click.option("--write-cluster", "write_cluster", type=click.Path(dir_okay=False), default=None,
              help="Write a copy of --cluster with non_kv_gib on its devices.")
@click.option("--devices", "devices", default=None, help="Comma-separated device names to calibrate (default: all).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def engine_log(*, log_file: str, cluster_file: str | None, write_cluster: str | None, devices: str | None,
               as_json: bool) -> None:
    """Read a vLLM or SGLang start-up LOG; write its non-KV memory into a cluster.yaml."""
    from partitioner.calibrate.engine_log import parse_engine_log

    if write_cluster and not cluster_file:
        raise InputError("--write-cluster needs --cluster (the cluster.yaml to copy)")
    from partitioner.userfiles import read_user_bytes

    # bounded and regular files only (a FIFO or /dev/zero is refused, not read forever); a log may
    # hold stray bytes, so they are replaced rather than refused
    text = read_user_bytes(log_file).decode("utf-8", errors="replace")
    log = parse_engine_log(text, log_file)
    cluster = _load(cluster_file)
    names = _names(cluster, devices)
    non_kv = _non_kv(log, cluster, names, log_file)
    out: dict[str, Any] = {"engine": log.engine, "weights_gib": log.weights_gib, "kv_gib": log.kv_gib,
                           "kv_tokens": log.kv_tokens, "non_kv_gib": non_kv}
    if write_cluster and cluster_file:
        out["written"] = {"path": write_cluster, "devices": names}
        _write(write_cluster, cluster_file, log_file, names, non_kv)
    if as_json:
        click.echo(json.dumps(out, indent=2))
        return
    tokens = "" if log.kv_tokens is None else f" ({log.kv_tokens:,} tokens)"
    click.echo(f"{log.engine}: weights {log.weights_gib:.2f} GiB, KV pool {log.kv_gib:.2f} GiB{tokens}, "
               f"non-KV {non_kv:.2f} GiB per GPU")
    if "written" in out:
        click.echo(f"wrote {write_cluster}: non_kv_gib {non_kv:.2f} on {', '.join(names)}")


def _load(cluster_file: str | None) -> Any:
    if cluster_file is None:
        return None
    from partitioner.models import load_cluster

    return load_cluster(cluster_file)


def _names(cluster: Any, devices: str | None) -> list[str]:
    if cluster is None:
        return []
    valid = [d.name for d in cluster.devices]
    if devices is None:
        return valid
    from partitioner.cli._parse import parse_names
    from partitioner.models import catalog

    names = parse_names("--devices", devices)
    for n in names:
        if n not in valid:
            raise InputError("--devices: " + catalog.unknown_message("device", n, tuple(valid)))
    return names


def _non_kv(log: Any, cluster: Any, names: list[str], log_file: str) -> float:
    """The log's non-KV share; a log without u·M takes them from the cluster's first named device
    and its engine settings."""
    if log.non_kv_gib:
        return round(max(log.non_kv_gib), 2)
    if cluster is None:
        raise InputError(f"{log_file}: the log has no total_gpu_memory / gpu_memory_utilization line; "
                         "pass --cluster so the GPU's memory and the engine's settings supply them")
    from partitioner.models.engines import resolve_settings

    dev = next(d for d in cluster.devices if d.name == names[0])
    st = resolve_settings(log.engine, cluster.engine_settings or {})
    return round(log.non_kv_for(dev.spec.engine_visible_bytes / 2**30, st.fraction()), 2)


def _write(path: str, cluster_file: str, log_file: str, names: list[str], non_kv: float) -> None:
    import yaml

    from partitioner.calibrate import CALIBRATE_MARKER
    from partitioner.cli._output import safe_write
    from partitioner.models import ClusterSpec
    from partitioner.models.loader import Source, read_yaml, validate

    data, _ = read_yaml(cluster_file)
    new = dict(data)
    new["devices"] = [{**d, "non_kv_gib": non_kv} if str(d.get("name")) in names else d for d in data["devices"]]
    validate(ClusterSpec, new, Source(path))
    head = "".join(f"# {line}\n" for line in [f"{CALIBRATE_MARKER} engine-log",
                                              f"{cluster_file} with the non-KV memory logged in {log_file} "
                                              "(its comments are not kept)"])
    safe_write(path, head + yaml.safe_dump(new, sort_keys=False), inputs=[cluster_file, log_file],
               marker=CALIBRATE_MARKER)
