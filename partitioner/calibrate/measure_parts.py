"""Which submodules of a PyTorch model are the embedding, the decoder layers and the LM head.

Auto-detection: the decoder layers are the largest
`torch.nn.ModuleList` whose children all share one class; the embedding is the first
`torch.nn.Embedding` outside them; the head is an `lm_head` attribute, else the last
`torch.nn.Linear` outside the layers whose `out_features` equals the embedding's vocabulary.
Any part can instead be named by a dotted path (``model.layers``). Failures raise `MeasureError`
in one line listing the candidates. torch is imported inside the functions only.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from partitioner.errors import InputError

__all__ = ["MeasureError", "ModelParts", "find_parts"]

_SHOWN = 8  # candidates listed in an error message


class MeasureError(InputError):
    """The model cannot be measured as asked (parts not found, decode unsupported, forward failed)."""


@dataclass(frozen=True, eq=False)
class ModelParts:
    """The timed submodules of a model and their dotted paths (`torch.nn.Module` objects)."""

    embed_path: str
    layers_path: str
    head_path: str
    embed: Any
    layers: tuple[Any, ...]
    head: Any

    @property
    def vocab(self) -> int:
        """Token ids are drawn from [0, vocab): the embedding's `num_embeddings`."""
        return int(self.embed.num_embeddings)

    def named(self) -> list[tuple[str, Any]]:
        """(timings-CSV layer name, module): ``embed``, ``0`` .. ``L-1``, ``lm_head``."""
        return [("embed", self.embed), *((str(i), m) for i, m in enumerate(self.layers)), ("lm_head", self.head)]

    def describe(self) -> str:
        """One line naming each part, for the CSV's comment header."""
        kinds = sorted({type(m).__name__ for m in self.layers})
        return (f"layers {self.layers_path} ({len(self.layers)} x {'/'.join(kinds)}), "
                f"embed {self.embed_path}, head {self.head_path}")


def find_parts(model: Any, *, layers: str | None = None, embed: str | None = None,
               head: str | None = None) -> ModelParts:
    """Detect (or resolve the given dotted paths of) the embedding, decoder layers and LM head."""
    layers_path, blocks = _find_layers(model, layers)
    embed_path, emb = _find_embed(model, embed, layers_path)
    head_path, lm_head = _find_head(model, head, layers_path, int(emb.num_embeddings))
    parts = ModelParts(embed_path, layers_path, head_path, emb, blocks, lm_head)
    _check_distinct(parts)
    return parts


def _listing(names: list[str]) -> str:
    """At most `_SHOWN` names, comma-separated, with a count of the rest."""
    shown = ", ".join(names[:_SHOWN])
    more = len(names) - _SHOWN
    return shown + (f", ... ({more} more)" if more > 0 else "") if names else "none"


def _outside(name: str, layers_path: str) -> bool:
    """True unless `name` is the layer list itself or a module inside it."""
    return name != layers_path and not name.startswith(layers_path + ".")


def _resolve(model: Any, path: str, what: str) -> Any:
    """The submodule at a dotted path, or MeasureError listing the model's children."""
    try:
        return model.get_submodule(path) if path else model
    except AttributeError:
        children = [name for name, _ in model.named_children()]
        raise MeasureError(
            f"{what} path {path!r}: {type(model).__name__} has no such submodule "
            f"(its children: {_listing(children)})") from None


def _module_lists(model: Any) -> Iterator[tuple[str, Any]]:
    import torch

    for name, module in model.named_modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) > 0:
            yield name, module


def _uniform(module: Any) -> bool:
    return len({type(child) for child in module}) == 1


def _find_layers(model: Any, path: str | None) -> tuple[str, tuple[Any, ...]]:
    """The decoder layers: the given list, or the largest same-class ModuleList (unique)."""
    import torch

    if path is not None:
        module = _resolve(model, path, "layers")
        if not isinstance(module, (torch.nn.ModuleList, torch.nn.Sequential)) or len(module) == 0:
            raise MeasureError(f"layers path {path!r} is a {type(module).__name__}, not a non-empty "
                               "torch.nn.ModuleList or Sequential of decoder layers")
        return path, tuple(module)
    lists = list(_module_lists(model))
    uniform = [(n, m) for n, m in lists if _uniform(m)]
    if not uniform:
        found = [f"{n} ({len(m)} mixed)" for n, m in lists]
        raise MeasureError(
            f"no torch.nn.ModuleList of same-class blocks in {type(model).__name__} (ModuleLists: "
            f"{_listing(found)}); name the decoder layers with a dotted path (--layers model.layers)")
    size = max(len(m) for _, m in uniform)
    largest = [(n, m) for n, m in uniform if len(m) == size]
    if len(largest) > 1:
        raise MeasureError(
            f"ambiguous decoder layers: {_listing([n for n, _ in largest])} all hold {size} blocks; "
            "name one with a dotted path (--layers ...)")
    name, module = largest[0]
    return name, tuple(module)


def _find_embed(model: Any, path: str | None, layers_path: str) -> tuple[str, Any]:
    """The token embedding: the given module, or the first nn.Embedding outside the layers."""
    import torch

    if path is not None:
        module = _resolve(model, path, "embed")
        if not isinstance(getattr(module, "num_embeddings", None), int):
            raise MeasureError(f"embed path {path!r} is a {type(module).__name__} without num_embeddings; "
                               "it must be the token embedding (token ids are drawn from its vocabulary)")
        return path, module
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Embedding) and _outside(name, layers_path):
            return name, module
    raise MeasureError(f"no torch.nn.Embedding outside {layers_path!r} in {type(model).__name__}; "
                       "name the token embedding with a dotted path (--embed ...)")


def _find_head(model: Any, path: str | None, layers_path: str, vocab: int) -> tuple[str, Any]:
    """The LM head: the given module, an `lm_head` attribute, else the last vocab-sized Linear."""
    import torch

    if path is not None:
        return path, _resolve(model, path, "head")
    if isinstance(getattr(model, "lm_head", None), torch.nn.Module):
        return "lm_head", model.lm_head
    linears = [(n, m) for n, m in model.named_modules()
               if isinstance(m, torch.nn.Linear) and _outside(n, layers_path)]
    matching = [(n, m) for n, m in linears if m.out_features == vocab]
    if matching:
        return matching[-1]
    found = [f"{n} ({m.out_features} out)" for n, m in linears]
    raise MeasureError(
        f"no LM head in {type(model).__name__}: no lm_head attribute and no torch.nn.Linear outside "
        f"{layers_path!r} with out_features = vocab {vocab} (Linears: {_listing(found)}); "
        "name it with a dotted path (--head ...)")


def _check_distinct(parts: ModelParts) -> None:
    """Each timed module once: the embedding and head are neither each other nor a layer."""
    named = parts.named()
    seen: dict[int, str] = {}
    for name, module in named:
        if id(module) in seen:
            raise MeasureError(f"the same module is timed as {seen[id(module)]!r} and {name!r} "
                               f"({parts.describe()}); pass distinct --embed/--layers/--head paths")
        seen[id(module)] = name
