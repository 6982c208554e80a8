"""Per-layer forward times of a PyTorch model on this machine (optional, needs torch).

Forward pre-hooks and forward hooks on the embedding, each decoder layer and the LM head
(`measure_parts.find_parts`) time every module's forward inside the model's real forward pass
with `time.perf_counter`; on CUDA (and MPS) the hooks synchronise the device before each
reading, so the queued kernels are charged to the module that launched them. `warmup` untimed
passes, then `repeats` timed ones; each layer's median is reported with `samples = repeats`.

Phases (the `Work` of docs/costmodel.md): **prefill** is one forward over a (batch, tokens) block of
token ids; **decode at context C** is the one-token forward that follows an untimed prefill of
C - 1 tokens with the KV cache on (Hugging Face-style models only); the cache is copied for each
repeat so every timed step reads exactly C positions. The head computes logits for the last
position only where the model allows it (`logits_to_keep=1`), as vLLM does (docs/costmodel.md).
Token ids are random in [0, vocab): the timing does not depend on their values, nor on the
weights' values. torch is imported inside the functions only, so importing this module is free.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from types import ModuleType
from typing import Any

from partitioner.calibrate.csvio import to_csv
from partitioner.calibrate.measure_parts import MeasureError, ModelParts, find_parts
from partitioner.errors import InputError, PartitionerError

__all__ = [
    "PHASES", "TIMINGS_COLUMNS", "INSTALL_HINT", "MissingDependencyError", "MeasureError",
    "LayerTime", "require", "measure", "check_label", "timings_csv",
]

PHASES = ("prefill", "decode")
#: Columns written (`partitioner.calibrate.timings` reads them; samples is its optional column).
TIMINGS_COLUMNS = ("device", "layer", "phase", "batch", "tokens", "seconds", "samples")
#: How to get torch and transformers. `partitioner` on PyPI is an unrelated package, so the hint
#: names the install from a checkout of this repository (the `measure` extra of pyproject.toml).
INSTALL_HINT = ("from a checkout of the partitioner repository run pip install '.[measure]' (CPU only: "
                "pip install torch --index-url https://download.pytorch.org/whl/cpu first)")
_FORWARD_ERRORS = (RuntimeError, TypeError, ValueError, IndexError)


class MissingDependencyError(PartitionerError):
    """An optional package (torch, transformers) is not installed; the message says how to get it."""


@dataclass(frozen=True)
class LayerTime:
    """One row of the timings CSV: a layer's median forward time for one micro-batch."""

    layer: str  # "embed", "lm_head" or a decoder-layer index
    phase: str  # "prefill" or "decode"
    batch: int  # sequences per micro-batch
    tokens: int  # prefill: prompt tokens per sequence; decode: context length C
    seconds: float  # median of `samples` timed forward passes
    samples: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def require(name: str, purpose: str = "`partition calibrate measure`") -> ModuleType:
    """Import an optional package, or MissingDependencyError telling how to install it."""
    try:
        return importlib.import_module(name)
    except ImportError:
        raise MissingDependencyError(f"{name} is not installed; {purpose} needs it: {INSTALL_HINT}") from None


def measure(model: Any, *, phase: str = "prefill", batches: Sequence[int] = (1,),
            tokens: Sequence[int] = (128,), repeats: int = 5, warmup: int = 2,
            parts: ModelParts | None = None, seed: int = 0,
            on_cell: Callable[[str, int, int], None] | None = None) -> list[LayerTime]:
    """Median forward time of each part of `model` at every (batch, tokens) of the grid.

    The model is put in eval mode and run under `torch.inference_mode()` on the device of its
    parameters. Rows come per grid cell (batches outer, tokens inner): embed, 0 .. L-1, lm_head.
    `on_cell(phase, batch, tokens)` is called before each cell (progress reporting).
    """
    _check_grid(phase, batches, tokens, repeats, warmup)
    torch = require("torch")
    parts = parts if parts is not None else find_parts(model)
    calling = _Calling.of(model)
    if phase == "decode" and not calling.decodes:
        raise MeasureError(
            f"decode needs a model whose forward takes use_cache and past_key_values (or cache), "
            f"as a Hugging Face causal LM does; {type(model).__name__}.forward does not: use --phase prefill")
    device = _device_of(model)
    clock = _Clock(parts.named(), _synchronizer(torch, device))
    rows: list[LayerTime] = []
    model.eval()
    with clock.attached(), torch.inference_mode():
        for batch in batches:
            for n in tokens:
                if on_cell is not None:
                    on_cell(phase, batch, n)
                ids = _token_ids(torch, parts.vocab, batch, n, device, seed=seed)
                where = f"{phase}, batch {batch}, tokens {n}"
                run = _runner(model, calling, phase, ids, where)
                medians = _time_cell(run, clock, warmup, repeats, where)
                rows.extend(LayerTime(name, phase, batch, n, medians[name], repeats) for name in clock.names)
    return rows


def timings_csv(timings: Sequence[LayerTime], device: str, comments: Sequence[str] = ()) -> str:
    """The timings CSV text (columns `TIMINGS_COLUMNS`), `device` being the label of every row."""
    check_label(device)
    rows = ((device, t.layer, t.phase, t.batch, t.tokens, t.seconds, t.samples) for t in timings)
    return to_csv(TIMINGS_COLUMNS, rows, comments)


def check_label(device: str) -> None:
    """InputError unless `device` can be a timings CSV `device` cell (non-empty, no comma)."""
    if not device.strip() or "," in device:
        raise InputError(f"device label must be a non-empty name without commas (got {device!r})")


def _check_grid(phase: str, batches: Sequence[int], tokens: Sequence[int], repeats: int, warmup: int) -> None:
    """InputError quoting the value for an unknown phase or a count out of range."""
    if phase not in PHASES:
        raise InputError(f"phase must be one of {', '.join(PHASES)} (got {phase!r})")
    for what, values in (("batch", batches), ("tokens", tokens)):
        if not values or any(not isinstance(v, int) or v < 1 for v in values):
            raise InputError(f"{what} sizes must be integers >= 1 (got {list(values)!r})")
    if repeats < 1:
        raise InputError(f"repeats must be >= 1 (got {repeats})")
    if warmup < 0:
        raise InputError(f"warmup must be >= 0 (got {warmup})")


@dataclass(frozen=True)
class _Calling:
    """How the model's forward takes a KV cache and a logits limit (Hugging Face conventions)."""

    cache_kw: str | None  # "past_key_values" (transformers 4.x) or "cache" (5.x)
    keep_kw: str | None  # "logits_to_keep" or the older "num_logits_to_keep"
    use_cache: bool  # forward takes use_cache

    @classmethod
    def of(cls, model: Any) -> _Calling:
        try:
            params = inspect.signature(model.forward).parameters
        except (TypeError, ValueError):
            params = {}  # type: ignore[assignment]
        cache_kw = next((k for k in ("past_key_values", "cache") if k in params), None)
        keep_kw = next((k for k in ("logits_to_keep", "num_logits_to_keep") if k in params), None)
        return cls(cache_kw, keep_kw, "use_cache" in params)

    @property
    def decodes(self) -> bool:
        return self.cache_kw is not None and self.use_cache

    def kwargs(self, cache: Any = None) -> dict[str, Any]:
        """Keyword arguments of a forward: cache on, logits at the last position, past KV if any."""
        out: dict[str, Any] = {"use_cache": True} if self.use_cache else {}
        if self.keep_kw is not None:
            out[self.keep_kw] = 1
        if cache is not None and self.cache_kw is not None:
            out[self.cache_kw] = cache
        return out

    def returned_cache(self, output: Any) -> Any:
        """The KV cache a forward with use_cache=True returned."""
        for key in (self.cache_kw, "past_key_values", "cache"):
            value = output.get(key) if hasattr(output, "get") and key else None
            if value is not None:
                return value
        raise MeasureError(f"forward with use_cache=True returned no KV cache ({type(output).__name__})")


class _Clock:
    """Sums each named module's forward time within one pass, from forward (pre-)hooks."""

    def __init__(self, named: list[tuple[str, Any]], sync: Callable[[], None]) -> None:
        self._named = named
        self._sync = sync
        self.names = [name for name, _ in named]
        self._start: dict[str, float] = {}
        self.total: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self.reset()

    def reset(self) -> None:
        self._start.clear()
        self.total = dict.fromkeys(self.names, 0.0)
        self.calls = dict.fromkeys(self.names, 0)

    def _pre(self, name: str) -> Callable[..., None]:
        def hook(module: Any, args: Any) -> None:
            self._sync()
            self._start[name] = time.perf_counter()
        return hook

    def _post(self, name: str) -> Callable[..., None]:
        def hook(module: Any, args: Any, output: Any) -> None:
            self._sync()
            self.total[name] += time.perf_counter() - self._start.pop(name)
            self.calls[name] += 1
        return hook

    @contextmanager
    def attached(self) -> Iterator[_Clock]:
        """Hooks registered on every named module for the duration of the block."""
        handles = []
        try:
            for name, module in self._named:
                handles.append(module.register_forward_pre_hook(self._pre(name)))
                handles.append(module.register_forward_hook(self._post(name)))
            yield self
        finally:
            for handle in handles:
                handle.remove()


def _synchronizer(torch: Any, device: Any) -> Callable[[], None]:
    """Waits for the device's queued kernels (CUDA, MPS); a no-op on the CPU."""
    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    if device.type == "mps":
        return torch.mps.synchronize
    return lambda: None


def _device_of(model: Any) -> Any:
    try:
        return next(model.parameters()).device
    except StopIteration:
        raise MeasureError(f"{type(model).__name__} has no parameters; nothing to time") from None


def _token_ids(torch: Any, vocab: int, batch: int, tokens: int, device: Any, *, seed: int) -> Any:
    """Random token ids in [0, vocab), shape (batch, tokens), reproducible from `seed`."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (batch, tokens), generator=generator).to(device)


@contextmanager
def _forward_errors(where: str) -> Iterator[None]:
    """A failing forward (out of memory, unsupported dtype, bad shapes) as one MeasureError line."""
    try:
        yield
    except PartitionerError:
        raise
    except _FORWARD_ERRORS as exc:
        first = (str(exc).strip().splitlines() or [""])[0]
        raise MeasureError(f"forward pass failed ({where}): {type(exc).__name__}: {first}") from exc


def _runner(model: Any, calling: _Calling, phase: str, ids: Any, where: str) -> Callable[[], Any]:
    """The forward to time: the whole block (prefill) or the last token after a cached prefix (decode)."""
    if phase == "prefill":
        kwargs = calling.kwargs()
        return lambda: model(ids, **kwargs)
    cache = None
    if ids.shape[1] > 1:
        with _forward_errors(where + ", untimed prefill"):
            cache = calling.returned_cache(model(ids[:, :-1], **calling.kwargs()))
    step = ids[:, -1:]
    # the copy runs before the embedding's pre-hook, so it is never timed
    return lambda: model(step, **calling.kwargs(copy.deepcopy(cache)))


def _time_cell(run: Callable[[], Any], clock: _Clock, warmup: int, repeats: int, where: str) -> dict[str, float]:
    """`warmup` untimed passes, then the median of `repeats` timed passes, per named module."""
    for _ in range(warmup):
        with _forward_errors(where):
            run()
    samples: dict[str, list[float]] = {name: [] for name in clock.names}
    for _ in range(repeats):
        clock.reset()
        with _forward_errors(where):
            run()
        silent = [name for name in clock.names if clock.calls[name] == 0]
        if silent:
            raise MeasureError(f"{where}: {', '.join(silent)} did not run during the forward pass; "
                               "check the --embed/--layers/--head paths")
        for name in clock.names:
            samples[name].append(clock.total[name])
    return {name: statistics.median(values) for name, values in samples.items()}
