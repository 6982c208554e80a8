"""`partition calibrate profile TIMINGS.csv [--model model.yaml] [--cluster cluster.yaml]`.

Measured per-layer timings (format: partitioner.calibrate.timings) -> per-GPU efficiency factors
of the roofline cost model, predicted against measured time for every row; optionally a copy of
the cluster with the fitted factors (`--write-cluster`) or a `layers:` profile model.yaml that
the planner uses directly (`--write-profile`). Without --model it checks and summarises the file.
"""

from __future__ import annotations

from typing import Any

import click

from partitioner.errors import InputError

__all__ = ["profile"]

_ROOFLINE = "a preset, architecture or hf_config model.yaml"


@click.command("profile")
@click.argument("timings_file", metavar="TIMINGS.csv", type=click.Path(dir_okay=False))
@click.option("--model", "model_file", type=click.Path(dir_okay=False), default=None,
              help=f"The timed model ({_ROOFLINE}); needed for the fit and --write-*.")
@click.option("--cluster", "cluster_file", type=click.Path(dir_okay=False), default=None,
              help="Resolve device names of the CSV to their GPUs; needed for --write-cluster.")
@click.option("--write-cluster", "write_cluster", type=click.Path(dir_okay=False), default=None,
              help="Write a copy of --cluster with the fitted factors in its gpu: entries.")
@click.option("--write-profile", "write_profile", type=click.Path(dir_okay=False), default=None,
              help="Write a layers: model.yaml of the measured times at one workload point.")
@click.option("--phase", type=click.Choice(["decode", "prefill"]), default=None, help="--write-profile: the point's phase.")
@click.option("--batch", type=click.IntRange(min=1), default=None, help="--write-profile: the point's batch.")
@click.option("--tokens", type=click.IntRange(min=1), default=None, help="--write-profile: the point's tokens.")
@click.option("--no-fill", "no_fill", is_flag=True,
              help="--write-profile: require a timing for every layer (no fill from the fitted model).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")
def profile(*, timings_file: str, model_file: str | None, cluster_file: str | None, write_cluster: str | None,
            write_profile: str | None, phase: str | None, batch: int | None, tokens: int | None,
            no_fill: bool, as_json: bool) -> None:
    """Fit cost-model efficiencies per GPU to TIMINGS.csv, or write a layers: profile from it."""
    from partitioner.calibrate.fit import fit_efficiencies
    from partitioner.calibrate.timings import read_timings
    from partitioner.cli import _calibrate_profile_view as view

    _check_options(model_file, cluster_file, write_cluster, write_profile, bool(phase or batch or tokens or no_fill))
    model, cluster = _load(model_file, cluster_file)
    valid, shown = _device_names(cluster)
    num_layers = model.arch.num_hidden_layers if model is not None else None
    timings = read_timings(timings_file, num_layers=num_layers, valid=valid, shown=shown)
    if model is None:
        view.show_summary(timings_file, timings, as_json)
        return
    from partitioner.costs.roofline import Shape, Work

    work = Work.of(model.workload)
    fit = fit_efficiencies(timings, _specs(timings, cluster), Shape.of(model.arch), (work.b_w, work.b_kv, work.b_a))
    outputs: list[tuple[str, str, dict[str, Any]]] = []  # everything is built before anything is written
    if write_cluster and cluster_file:  # checked above: --write-cluster needs --cluster
        outputs.append(_cluster_text(write_cluster, cluster_file, cluster, fit, timings_file))
    if write_profile:
        outputs.append(_profile_text(write_profile, timings, model, fit, (phase, batch, tokens), no_fill=no_fill,
                                     timings_file=timings_file, cluster=cluster))
    view.show_fit(timings_file, model.name, fit, _write(outputs, (timings_file, model_file, cluster_file)), as_json)


def _check_options(model_file: str | None, cluster_file: str | None, write_cluster: str | None,
                   write_profile: str | None, point_given: bool) -> None:
    if point_given and not write_profile:
        raise InputError("--phase, --batch, --tokens and --no-fill apply to --write-profile; give --write-profile PATH")
    if write_cluster and not cluster_file:
        raise InputError("--write-cluster needs --cluster (the cluster.yaml to copy with the fitted factors)")
    if write_cluster and not model_file:
        raise InputError(f"--write-cluster needs --model ({_ROOFLINE}): the fit computes each row's FLOPs "
                         "and bytes from the model's architecture")
    if write_profile and not model_file:
        raise InputError(f"--write-profile needs --model ({_ROOFLINE}): a profile's memory_gb, out_bytes, "
                         "params and layer kinds come from the model's architecture")


def _load(model_file: str | None, cluster_file: str | None) -> tuple[Any, Any]:
    from partitioner.models import load_cluster, load_model

    model = load_model(model_file) if model_file else None
    if model is not None and model.is_profile:
        raise InputError(f"{model_file}: a measured profile (layers:) has no architecture to fit the "
                         f"timings against; give {_ROOFLINE}")
    return model, (load_cluster(cluster_file) if cluster_file else None)


def _device_names(cluster: Any) -> tuple[set[str], list[str]]:
    """(accepted device keys, the names an unknown-device error lists): device names win."""
    from partitioner.models import catalog

    ids = list(catalog.ids("gpus"))
    if cluster is None:
        return set(ids), ids
    names = [d.name for d in cluster.devices]
    return set(names) | {d.gpu_id for d in cluster.devices} | set(ids), names


def _gpu_type(dev: Any) -> str:
    """A device's GPU type for the fit: its catalogue id, also for an inline `base:` spec with the
    catalogue's peak rates (only memory or efficiencies changed, e.g. an earlier calibration);
    else the inline spec's name."""
    from partitioner.costs.roofline import Hardware
    from partitioner.models.cluster import resolve_gpu

    if isinstance(dev.gpu, str):
        return str(dev.gpu)
    base = dev.gpu.base
    if base is not None:
        mine, ref = Hardware.of(dev.spec), Hardware.of(resolve_gpu(base))
        if (mine.F, mine.BW) == (ref.F, ref.BW):
            return str(base)
    return str(dev.gpu.name)


def _specs(timings: Any, cluster: Any) -> dict[str, tuple[str, Any]]:
    """CSV device key -> (GPU type, default Hardware): a device name, a cluster GPU, or a catalogue id."""
    from partitioner.costs.roofline import Hardware
    from partitioner.models.cluster import resolve_gpu

    devices = list(cluster.devices) if cluster is not None else []
    out: dict[str, tuple[str, Any]] = {}
    for key in dict.fromkeys(t.device for t in timings):
        dev = next((d for d in devices if d.name == key), None) or next((d for d in devices if d.gpu_id == key), None)
        out[key] = (_gpu_type(dev), Hardware.of(dev.spec)) if dev is not None else (key, Hardware.of(resolve_gpu(key)))
    return out


def _header(lines: list[str]) -> str:
    from partitioner.calibrate import CALIBRATE_MARKER

    return "".join(f"# {line}\n" for line in [f"{CALIBRATE_MARKER} profile", *lines])


def _write(outputs: list[tuple[str, str, dict[str, Any]]], inputs: tuple[str | None, ...]) -> dict[str, Any]:
    """Write each (path, text, summary) without clobbering a user's file; summaries by kind."""
    from partitioner.calibrate import CALIBRATE_MARKER
    from partitioner.cli._output import safe_write

    written = {}
    for path, text, summary in outputs:
        safe_write(path, text, inputs=[p for p in inputs if p], marker=CALIBRATE_MARKER)
        kind = summary.pop("kind")
        written[kind] = {"path": path, **summary}
    return written


def _cluster_text(path: str, cluster_file: str, cluster: Any, fit: Any,
                  timings_file: str) -> tuple[str, str, dict[str, Any]]:
    import yaml

    from partitioner.calibrate.cluster_update import calibrated_cluster
    from partitioner.models import ClusterSpec
    from partitioner.models.loader import Source, read_yaml, validate

    data, _ = read_yaml(cluster_file)
    new, updated = calibrated_cluster(data, fit, {d.name: _gpu_type(d) for d in cluster.devices})
    validate(ClusterSpec, new, Source(path))
    text = _header([f"{cluster_file} with the efficiencies fitted to {timings_file} (its comments are not kept);",
                    f"calibrated devices: {', '.join(updated) or 'none'}"])
    return path, text + yaml.safe_dump(new, sort_keys=False), {"kind": "cluster", "devices": list(updated)}


def _uncovered(keys: list[str], cluster: Any) -> list[str]:
    """Cluster devices a profile with these cost keys has no cost for (neither name nor gpu id)."""
    if cluster is None:
        return []
    return [d.name for d in cluster.devices if d.name not in keys and d.gpu_id not in keys]


def _profile_text(path: str, timings: Any, model: Any, fit: Any, want: tuple[Any, Any, Any], *, no_fill: bool,
                  timings_file: str, cluster: Any) -> tuple[str, str, dict[str, Any]]:
    import yaml

    from partitioner.calibrate.profile import profile_from_timings, select_point
    from partitioner.models import ModelSpec
    from partitioner.models.loader import Source, validate

    point = select_point(timings, *want)
    prof = profile_from_timings(timings, point, model.arch, model.workload, None if no_fill else fit,
                                name=f"{model.name} (measured, {point})", source=timings_file)
    validate(ModelSpec, prof.data, Source(path))
    text = _header([f"{model.name} at {point}, from {timings_file}; cost in seconds per micro-batch",
                    f"filled {len(prof.filled)} of {prof.cells} cells from the fitted cost model"])
    body = yaml.safe_dump(prof.data, sort_keys=False, default_flow_style=None)
    keys = list(prof.data["layers"][0]["cost"])
    return path, text + body, {"kind": "profile", **prof.to_dict(), "uncovered": _uncovered(keys, cluster)}
