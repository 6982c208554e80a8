"""`partitioner.calibrate.measure` on tiny pure-torch models on the CPU (skipped without torch).

Covers part detection and its errors, the per-layer rows (each layer once per grid cell,
seconds > 0, samples = repeats), decode with a copied KV cache (context C each repeat), decode on
a model without a cache (error), forward failures, and the CSV round trip through
`partitioner.calibrate.timings`. No timing assertions beyond > 0.
"""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

from partitioner.calibrate import timings as timings_io  # noqa: E402
from partitioner.calibrate.measure import (  # noqa: E402
    TIMINGS_COLUMNS,
    LayerTime,
    MeasureError,
    measure,
    timings_csv,
)
from partitioner.calibrate.measure_parts import find_parts  # noqa: E402
from partitioner.errors import InputError  # noqa: E402

VOCAB, H, L = 32, 8, 3


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(H, H)

    def forward(self, x: Any) -> Any:
        return torch.relu(self.fc(x)) + x


class Tiny(torch.nn.Module):
    """Embedding, a ModuleList of blocks, a vocab-sized Linear head (no `lm_head` attribute)."""

    def __init__(self, blocks: int = L) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(VOCAB, H)
        self.blocks = torch.nn.ModuleList(Block() for _ in range(blocks))
        self.out = torch.nn.Linear(H, VOCAB)

    def forward(self, ids: Any) -> Any:
        x = self.emb(ids)
        for block in self.blocks:
            x = block(x)
        return self.out(x)


class CachedTiny(Tiny):
    """HF-style forward: use_cache, past_key_values and logits_to_keep; the cache is mutated in
    place (as transformers' DynamicCache is), and each call records the context it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[int, int, int]] = []  # (cached positions, new tokens, logits kept)

    def forward(self, input_ids: Any, past_key_values: Any = None, use_cache: bool = False,
                logits_to_keep: int = 0) -> dict[str, Any]:
        cache = past_key_values if past_key_values is not None else []
        self.seen.append((len(cache), input_ids.shape[1], logits_to_keep))
        cache.extend([0] * input_ids.shape[1])
        logits = super().forward(input_ids[:, -logits_to_keep:] if logits_to_keep else input_ids)
        return {"logits": logits, "past_key_values": cache if use_cache else None}


def layer_names(blocks: int = L) -> list[str]:
    return ["embed", *map(str, range(blocks)), "lm_head"]


# --- part detection ----------------------------------------------------------------------


def test_detects_embedding_layers_and_vocab_sized_head() -> None:
    parts = find_parts(Tiny())
    assert (parts.embed_path, parts.layers_path, parts.head_path) == ("emb", "blocks", "out")
    assert len(parts.layers) == L and parts.vocab == VOCAB
    assert [name for name, _ in parts.named()] == layer_names()
    assert parts.describe() == "layers blocks (3 x Block), embed emb, head out"


def test_lm_head_attribute_wins_over_last_vocab_linear() -> None:
    model = Tiny()
    model.lm_head = torch.nn.Linear(H, 5)  # registered after `out`, not vocab-sized: still the head
    assert find_parts(model).head_path == "lm_head"


def test_head_is_the_last_vocab_sized_linear_outside_the_layers() -> None:
    model = Tiny()
    model.extra = torch.nn.Linear(H, VOCAB)
    assert find_parts(model).head_path == "extra"


def test_largest_uniform_module_list_is_the_layers() -> None:
    model = Tiny(blocks=4)
    model.small = torch.nn.ModuleList(Block() for _ in range(2))
    model.mixed = torch.nn.ModuleList([Block(), torch.nn.ReLU(), Block(), Block(), Block(), Block()])
    parts = find_parts(model)
    assert parts.layers_path == "blocks" and len(parts.layers) == 4


def test_dotted_path_overrides() -> None:
    model = Tiny()
    model.spare = torch.nn.ModuleList(Block() for _ in range(5))
    parts = find_parts(model, layers="blocks", embed="emb", head="out")
    assert (parts.layers_path, len(parts.layers)) == ("blocks", 3) and parts.head is model.out
    assert find_parts(model, layers="spare").layers_path == "spare"


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"layers": "model.layers"}, r"layers path 'model.layers': Tiny has no such submodule \(its children: emb, blocks, out\)"),
    ({"layers": "out"}, r"layers path 'out' is a Linear, not a non-empty torch.nn.ModuleList"),
    ({"embed": "out"}, r"embed path 'out' is a Linear without num_embeddings"),
    ({"head": "blocks.0"}, r"the same module is timed as '0' and 'lm_head'"),
    ({"head": "nope.x"}, r"head path 'nope.x'"),
])
def test_override_errors(kwargs: dict[str, str], match: str) -> None:
    with pytest.raises(MeasureError, match=match):
        find_parts(Tiny(), **kwargs)


def test_no_module_list_lists_the_mixed_ones() -> None:
    model = Tiny()
    model.blocks = torch.nn.ModuleList([Block(), torch.nn.ReLU()])
    with pytest.raises(MeasureError, match=r"no torch.nn.ModuleList of same-class blocks in Tiny "
                                           r"\(ModuleLists: blocks \(2 mixed\)\); .*--layers"):
        find_parts(model)


def test_no_module_list_at_all() -> None:
    with pytest.raises(MeasureError, match=r"\(ModuleLists: none\)"):
        find_parts(torch.nn.Sequential(torch.nn.Embedding(VOCAB, H), torch.nn.Linear(H, VOCAB)))


def test_ambiguous_layers_name_both_candidates() -> None:
    model = Tiny()
    model.twin = torch.nn.ModuleList(Block() for _ in range(L))
    with pytest.raises(MeasureError, match=r"ambiguous decoder layers: blocks, twin all hold 3 blocks"):
        find_parts(model)


def test_no_embedding() -> None:
    model = Tiny()
    model.emb = torch.nn.Linear(1, H)
    with pytest.raises(MeasureError, match=r"no torch.nn.Embedding outside 'blocks' in Tiny; .*--embed"):
        find_parts(model)


def test_no_head_lists_the_linears() -> None:
    model = Tiny()
    model.out = torch.nn.Linear(H, 7)
    with pytest.raises(MeasureError, match=r"no LM head in Tiny: .*vocab 32 \(Linears: out \(7 out\)\); .*--head"):
        find_parts(model)


# --- timing ------------------------------------------------------------------------------


def test_rows_cover_every_layer_once_per_grid_cell() -> None:
    model = Tiny()
    rows = measure(model, batches=[1, 2], tokens=[4, 6], repeats=3, warmup=1)
    cells = [(b, t) for b in (1, 2) for t in (4, 6)]
    assert [(r.batch, r.tokens, r.layer) for r in rows] == [(b, t, n) for b, t in cells for n in layer_names()]
    assert all(r.phase == "prefill" and r.samples == 3 and r.seconds > 0 for r in rows)
    for module in (model.emb, *model.blocks, model.out):  # hooks are removed afterwards
        assert not module._forward_hooks and not module._forward_pre_hooks
    assert not model.training


def test_progress_callback_once_per_cell() -> None:
    calls: list[tuple[str, int, int]] = []
    measure(Tiny(), batches=[1, 3], tokens=[2], repeats=1, warmup=0, on_cell=lambda *a: calls.append(a))
    assert calls == [("prefill", 1, 2), ("prefill", 3, 2)]


def test_decode_reads_context_c_every_repeat() -> None:
    model = CachedTiny()
    rows = measure(model, phase="decode", batches=[2], tokens=[1, 5], repeats=3, warmup=1)
    assert [(r.phase, r.tokens, r.layer) for r in rows] == [("decode", c, n) for c in (1, 5) for n in layer_names()]
    # C = 1: no prefix, 4 one-token steps on an empty cache; C = 5: a 4-token prefix, then 4 steps at 4 cached
    assert model.seen == [(0, 1, 1)] * 4 + [(0, 4, 1)] + [(4, 1, 1)] * 4


def test_prefill_asks_for_last_position_logits_only() -> None:
    model = CachedTiny()
    measure(model, tokens=[6], repeats=1, warmup=0)
    assert model.seen == [(0, 6, 1)]


def test_decode_without_cache_support_is_an_error() -> None:
    with pytest.raises(MeasureError, match=r"decode needs a model whose forward takes use_cache .*"
                                           r"Tiny.forward does not: use --phase prefill"):
        measure(Tiny(), phase="decode")


def test_module_that_never_runs_is_an_error() -> None:
    model = Tiny()
    model.spare = torch.nn.ModuleList(Block() for _ in range(2))
    parts = find_parts(model, layers="spare")
    with pytest.raises(MeasureError, match=r"prefill, batch 1, tokens 2: 0, 1 did not run during the forward pass"):
        measure(model, tokens=[2], parts=parts, repeats=1, warmup=0)


def test_failing_forward_is_one_line() -> None:
    model = Tiny().to(torch.float64)
    model.out = torch.nn.Linear(H, VOCAB)  # float32 head after float64 layers
    with pytest.raises(MeasureError, match=r"^forward pass failed \(prefill, batch 1, tokens 3\): RuntimeError: [^\n]*$"):
        measure(model, tokens=[3], repeats=1, warmup=0)


def test_model_without_parameters() -> None:
    parts = find_parts(Tiny())
    with pytest.raises(MeasureError, match=r"ReLU has no parameters; nothing to time"):
        measure(torch.nn.ReLU(), parts=parts)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"phase": "train"}, r"phase must be one of prefill, decode \(got 'train'\)"),
    ({"batches": [1, 0]}, r"batch sizes must be integers >= 1 \(got \[1, 0\]\)"),
    ({"tokens": []}, r"tokens sizes must be integers >= 1 \(got \[\]\)"),
    ({"repeats": 0}, r"repeats must be >= 1 \(got 0\)"),
    ({"warmup": -1}, r"warmup must be >= 0 \(got -1\)"),
])
def test_grid_errors(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(InputError, match=match):
        measure(Tiny(), **kwargs)


# --- the CSV -----------------------------------------------------------------------------


def test_csv_round_trips_through_the_timings_reader(tmp_path) -> None:
    rows = measure(Tiny(), batches=[1, 2], tokens=[3], repeats=2, warmup=0)
    path = tmp_path / "t.csv"
    path.write_text(timings_csv(rows, "rtx-3090", ["a comment"]), encoding="utf-8")
    back = timings_io.read_timings(path, num_layers=L)
    assert [(t.device, t.layer, t.phase, t.batch, t.tokens, t.seconds, t.samples) for t in back] == \
        [("rtx-3090", r.layer, r.phase, r.batch, r.tokens, r.seconds, r.samples) for r in rows]
    assert path.read_text().startswith("# a comment\ndevice,layer,phase,batch,tokens,seconds,samples\n")


def test_written_columns_are_the_readers() -> None:
    assert set(timings_io.COLUMNS) | {"samples"} == set(TIMINGS_COLUMNS)


@pytest.mark.parametrize("label", ["", "  ", "a,b"])
def test_bad_device_label(label: str) -> None:
    with pytest.raises(InputError, match="device label must be a non-empty name without commas"):
        timings_csv([LayerTime("embed", "prefill", 1, 1, 0.1, 1)], label)
