"""`load_model` and `load_cluster`: user files to validated, immutable specs (issue 3)."""

from __future__ import annotations

from pathlib import Path

from partitioner.models.cluster import ClusterSpec
from partitioner.models.hf import load_hf_config
from partitioner.models.llm import ModelSpec
from partitioner.models.loader import read_yaml, validate

__all__ = ["load_model", "load_cluster"]


def load_model(path: str | Path) -> ModelSpec:
    """Read and validate a model.yaml; `hf_config:` is resolved relative to the file."""
    data, source = read_yaml(path)
    spec = validate(ModelSpec, data, source, context={"stem": Path(path).stem})
    if spec.hf_config is not None:
        target = Path(path).parent / spec.hf_config
        shown = str(Path(str(path)).parent / spec.hf_config)
        spec._arch = load_hf_config(target, shown=shown)
    spec._source = source
    return spec


def load_cluster(path: str | Path) -> ClusterSpec:
    """Read and validate a cluster.yaml."""
    data, source = read_yaml(path)
    return validate(ClusterSpec, data, source)

