"""`load_model` and `load_cluster`: user files to validated, immutable specs.

Sizes that multiply into the cost tables are capped (partitioner.limits): a model has at most
MAX_LAYERS layers (``num_hidden_layers``, or the sum of ``repeat`` of a profile) and a cluster at
most MAX_DEVICES devices; beyond them the error names the field, its line and the limit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from partitioner.errors import ConfigError
from partitioner.limits import exceeded, limit
from partitioner.models.cluster import ClusterSpec
from partitioner.models.hf import load_hf_config
from partitioner.models.llm import ModelSpec
from partitioner.models.loader import Source, read_yaml, validate

__all__ = ["load_model", "load_cluster"]


def load_model(path: str | Path) -> ModelSpec:
    """Read and validate a model.yaml; `hf_config:` is resolved relative to the file."""
    data, source = read_yaml(path)
    spec = validate(ModelSpec, data, source, context={"stem": Path(path).stem})
    if spec.hf_config is not None:
        target = Path(path).parent / spec.hf_config
        shown = str(Path(str(path)).parent / spec.hf_config)
        spec._arch = load_hf_config(target, shown=shown)
    _check_layers(spec, source)
    spec._source = source
    return spec


def _check_layers(spec: ModelSpec, source: Source) -> None:
    cap = limit("MAX_LAYERS")
    if spec.layers is not None:
        total = 0
        for i, entry in enumerate(spec.layers):
            total += entry.repeat
            if total > cap:
                loc = ("layers", i, "repeat")
                raise ConfigError(exceeded("MAX_LAYERS", f"the profile's layer count ({total:,} so far)"),
                                  file=source.file, location=f"layers[{i}].repeat", line=source.line(loc))
        return
    arch = spec.arch
    if arch is not None and arch.num_hidden_layers > cap:
        where = "hf_config" if spec.hf_config is not None else "architecture.num_hidden_layers"
        path: tuple[str | int, ...] = tuple(where.split("."))
        raise ConfigError(exceeded("MAX_LAYERS", f"num_hidden_layers = {arch.num_hidden_layers:,}"),
                          file=source.file, location=where, line=source.line(path))


def load_cluster(path: str | Path) -> ClusterSpec:
    """Read and validate a cluster.yaml."""
    data, source = read_yaml(path)
    _check_devices(data, source)
    return validate(ClusterSpec, data, source)


def _check_devices(data: dict[str, Any], source: Source) -> None:
    """Before validation, which is quadratic in the devices for pairs and names."""
    devices = data.get("devices")
    if isinstance(devices, list) and len(devices) > limit("MAX_DEVICES"):
        raise ConfigError(exceeded("MAX_DEVICES", f"{len(devices):,} devices"), file=source.file,
                          location="devices", line=source.line(("devices",)))
