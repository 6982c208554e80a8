"""`partition calibrate measure`: time each layer of a PyTorch model here; write a timings CSV.

    partition calibrate measure --hf-config config.json --batch 1,4 --tokens 128,512 --out t.csv
    partition calibrate measure --factory mymodels.py:build --phase decode --label rtx-3090 --out t.csv

Optional (needs torch, and transformers for --hf-config; from a checkout of this repository, `pip install '.[measure]'`).
The model is built here, `partitioner.calibrate.measure` times it, and the rows are written in
the timings CSV format that `partition calibrate profile` reads. torch is imported inside the
command only, so `partition --help` and `partition calibrate --help` never load it.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import click

import partitioner.calibrate.measure as timer
from partitioner.errors import ConfigError, InputError, PartitionerError

__all__ = ["measure"]

_DTYPES = ("float32", "bfloat16", "float16")


@click.command("measure")
@click.option("--hf-config", type=click.Path(dir_okay=False, path_type=Path),
              help="A Hugging Face config.json: the model is built with AutoModelForCausalLM.from_config "
                   "with random weights (nothing is downloaded; the timing is the same as with real weights).")
@click.option("--factory", help="module:callable or path/to/file.py:callable returning a torch.nn.Module "
                                "(called with no arguments; the current folder is on the import path).")
@click.option("--phase", type=click.Choice(timer.PHASES), default="prefill", show_default=True,
              help="prefill: one forward over batch x tokens; decode: one token at context length tokens.")
@click.option("--batch", "batch_text", default="1", show_default=True, help="Micro-batch sizes, comma-separated.")
@click.option("--tokens", "tokens_text", default="128", show_default=True,
              help="Prompt tokens (prefill) or context lengths (decode), comma-separated; every batch x tokens is timed.")
@click.option("--device", "device_text", default="cpu", show_default=True, help="torch device: cpu, cuda:0, mps.")
@click.option("--dtype", type=click.Choice(_DTYPES), default="float32", show_default=True,
              help="Weight and activation type (use bfloat16 or float16 on a GPU to match serving).")
@click.option("--repeats", type=int, default=5, show_default=True, help="Timed passes per cell; the median is written.")
@click.option("--warmup", type=int, default=2, show_default=True, help="Untimed passes before the timed ones.")
@click.option("--label", help="The device column: a cluster.yaml device name or a GPU catalogue id "
                              "(e.g. rtx-3090) so `calibrate profile` can use the rows. Default: the torch device.")
@click.option("--layers", "layers_path", help="Dotted path of the decoder layers' ModuleList (default: detected).")
@click.option("--embed", "embed_path", help="Dotted path of the token embedding (default: detected).")
@click.option("--head", "head_path", help="Dotted path of the LM head (default: detected).")
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path), help="Timings CSV to write.")
def measure(*, hf_config: Path | None, factory: str | None, phase: str, batch_text: str, tokens_text: str,
            device_text: str, dtype: str, repeats: int, warmup: int, label: str | None,
            layers_path: str | None, embed_path: str | None, head_path: str | None, out: Path) -> None:
    """Time each layer of a PyTorch model on this machine and write a timings CSV.

    Rows: embed, each decoder layer, lm_head, for every --batch x --tokens; the median of
    --repeats forward passes. Feed the file to `partition calibrate profile`.
    """
    from partitioner.calibrate import CALIBRATE_MARKER
    from partitioner.calibrate.measure_parts import find_parts
    from partitioner.cli._output import check_writable, safe_write
    from partitioner.cli._parse import parse_ints

    if (hf_config is None) == (factory is None):
        raise InputError("give exactly one of --hf-config config.json or --factory module:callable")
    batches, tokens = parse_ints("--batch", batch_text), parse_ints("--tokens", tokens_text)
    torch = timer.require("torch")
    device = _device(torch, device_text)
    name = label if label is not None else str(device)
    timer.check_label(name)
    inputs = [hf_config] if hf_config else _factory_files(str(factory))
    check_writable(out, inputs=inputs, marker=CALIBRATE_MARKER)  # refuse before a long timing run
    model, source = _hf_model(torch, hf_config, device) if hf_config else _factory_model(torch, str(factory))
    model = model.to(device=device, dtype=getattr(torch, dtype))
    parts = find_parts(model, layers=layers_path, embed=embed_path, head=head_path)
    rows = timer.measure(model, phase=phase, batches=batches, tokens=tokens, repeats=repeats,
                         warmup=warmup, parts=parts, on_cell=_progress)
    comments = (
        f"{CALIBRATE_MARKER} measure: per-layer forward times for `partition calibrate profile`",
        f"torch {torch.__version__}, device {device} ({_device_name(torch, device)}), dtype {dtype}",
        f"model: {source}; {parts.describe()}",
        f"seconds: median of {repeats} timed forward passes after {warmup} warm-up passes",
    )
    written = safe_write(out, timer.timings_csv(rows, name, comments), inputs=inputs, marker=CALIBRATE_MARKER)
    for line in _summary(rows):
        click.echo(line)
    click.echo(f"wrote {len(rows)} rows to {written}")
    if label is None:
        click.echo(f"note: the rows are labelled device {name!r}; pass --label with a cluster.yaml device "
                   "name or a GPU catalogue id (e.g. rtx-3090) so `partition calibrate profile` can use them")


def _progress(phase: str, batch: int, tokens: int) -> None:
    click.echo(f"timing {phase}: batch {batch}, tokens {tokens}", err=True)


def _device(torch: Any, text: str) -> Any:
    """A torch.device that exists on this machine, or InputError quoting `text`."""
    try:
        device = torch.device(text)
    except RuntimeError:
        raise InputError(f"--device: not a torch device (got {text!r}); e.g. cpu, cuda:0, mps") from None
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if (device.index or 0) >= count:
            raise InputError(f"--device {text!r}: this torch ({torch.__version__}) sees {count} CUDA device(s)")
    elif device.type == "mps" and not torch.backends.mps.is_available():
        raise InputError(f"--device {text!r}: MPS is not available to this torch ({torch.__version__})")
    return device


def _device_name(torch: Any, device: Any) -> str:
    if device.type == "cuda":
        return str(torch.cuda.get_device_name(device))
    return device.type


def _first_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0]}"


def _read_config(path: Path) -> dict[str, Any]:
    """A config.json object with a string `model_type` (ConfigError located in the file)."""
    from partitioner.userfiles import read_user_text

    try:
        data = json.loads(read_user_text(path))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"invalid JSON: {exc.msg}", file=str(path), line=exc.lineno) from None
    if not isinstance(data, dict):
        raise ConfigError(f"must be a JSON object (got {type(data).__name__})", file=str(path))
    if not isinstance(data.get("model_type"), str):
        raise ConfigError(f"must be a string naming the architecture, e.g. 'llama' (got {data.get('model_type')!r})",
                          file=str(path), location="model_type")
    return data


def _hf_model(torch: Any, path: Path, device: Any) -> tuple[Any, str]:
    """A causal LM built from a config.json with random weights, directly on `device`."""
    config = _read_config(path)
    transformers = timer.require("transformers", "--hf-config")
    transformers.logging.set_verbosity_error()
    model_type = config.pop("model_type")
    where = f"model_type {model_type!r} (transformers {transformers.__version__})"
    try:
        hf_config = transformers.AutoConfig.for_model(model_type, **config)
        with device:
            model = transformers.AutoModelForCausalLM.from_config(hf_config)
    except (ValueError, KeyError, TypeError, RuntimeError) as exc:
        raise ConfigError(f"{where}: cannot build a causal LM: {_first_line(exc)}", file=str(path)) from exc
    return model, f"{type(model).__name__} from {path} (random weights)"


def _split_factory(spec: str) -> tuple[str, str]:
    module, sep, attr = spec.rpartition(":")
    if not sep or not module or not attr.isidentifier():
        raise InputError(f"--factory must be module:callable or path/to/file.py:callable (got {spec!r})")
    return module, attr


def _factory_files(spec: str) -> list[Path]:
    """The factory's .py file (an input that --out must not overwrite), if it names one."""
    module, _ = _split_factory(spec)
    return [Path(module)] if module.endswith(".py") else []


def _import(module: str) -> ModuleType:
    """A .py file by path, or a module by name with the current folder on the import path."""
    if module.endswith(".py"):
        path = Path(module)
        if not path.is_file():
            raise InputError(f"--factory: file not found (got {module!r})")
        spec = importlib.util.spec_from_file_location(f"_partition_factory_{path.stem}", path)
        if spec is None or spec.loader is None:
            raise InputError(f"--factory: cannot import {module!r} as a Python file")
        loaded = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = loaded
        spec.loader.exec_module(loaded)
        return loaded
    sys.path.insert(0, str(Path.cwd()))
    try:
        return importlib.import_module(module)
    finally:
        sys.path.remove(str(Path.cwd()))


def _factory_model(torch: Any, spec: str) -> tuple[Any, str]:
    """The torch.nn.Module returned by calling `module:callable` with no arguments."""
    module, attr = _split_factory(spec)
    try:
        build = getattr(_import(module), attr, None)
        if not callable(build):
            raise InputError(f"--factory {spec!r}: {module} has no callable {attr!r}")
        model = build()
    except PartitionerError:
        raise
    except Exception as exc:  # the user's code: one line here, the traceback with --debug
        raise InputError(f"--factory {spec!r}: {_first_line(exc)}") from exc
    if not isinstance(model, torch.nn.Module):
        raise InputError(f"--factory {spec!r}: {attr}() returned a {type(model).__name__}, not a torch.nn.Module")
    return model, f"{type(model).__name__} from {spec}"


def _summary(rows: Sequence[timer.LayerTime]) -> list[str]:
    """One line per grid cell: embed, the layers' mean and range, lm_head, total."""
    from partitioner.cli._output import fmt_time

    cells: dict[tuple[str, int, int], dict[str, float]] = {}
    for t in rows:
        cells.setdefault((t.phase, t.batch, t.tokens), {})[t.layer] = t.seconds
    lines = []
    for (phase, batch, tokens), by_layer in cells.items():
        layers = [s for name, s in by_layer.items() if name not in ("embed", "lm_head")]
        lines.append(
            f"{phase} batch {batch} tokens {tokens}: embed {fmt_time(by_layer['embed'])}, "
            f"{len(layers)} layers mean {fmt_time(statistics.mean(layers))} "
            f"({fmt_time(min(layers))} .. {fmt_time(max(layers))}), lm_head {fmt_time(by_layer['lm_head'])}, "
            f"total {fmt_time(sum(by_layer.values()))}")
    return lines
