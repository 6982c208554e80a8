"""serving.capacity._stage_max: the largest n with fits(n), in O(1) `fits` tests however many
sequences fit (it counted them one at a time), checked against counting on small cases and at the
boundary on tiny and huge valid numbers, with the number of `fits` tests counted (no clock)."""

from __future__ import annotations

import importlib
import random

import pytest

from partitioner.serving.capacity import MAX_FIT_PROBES, MAX_SEQUENCES, _stage_max, fits

cap_mod = importlib.import_module("partitioner.serving.capacity")  # the package re-exports a function of this name


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]
    real = cap_mod.fits

    def counted(*args: float) -> bool:
        calls[0] += 1
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(cap_mod, "fits", counted)
    return calls


def test_small_cases_equal_counting_one_at_a_time() -> None:
    rng = random.Random(25)
    for _ in range(400):
        w, kv, c = rng.uniform(0, 20), rng.choice([0.1, 0.25, 1 / 3, rng.uniform(0.01, 5)]), rng.uniform(0, 24)
        n = 0
        if fits(w, kv, c, 0):
            while fits(w, kv, c, n + 1):
                n += 1
        assert _stage_max(w, kv, c) == n, (w, kv, c)


@pytest.mark.parametrize(("w", "kv", "c"), [
    (1.0, 1e-21, 80.0),        # kv_cache 1e-12 bytes per element: ~1e23 sequences
    (1.0, 1e-9 * 4096 / 1e9, 80.0),  # kv_bytes_per_token 1e-9 at context 4096
    (70.0, 0.5, 1e15),        # memory_gb 1e15
    (0.0, 2.2e-308, 1e18),    # the extremes the loaders accept
    (5.0, 1e-12, 5.0),        # weights fill the device exactly: only the tolerance is left
    (3.0, 1.0, 2.0),          # weights do not fit: 0
])
def test_tiny_and_huge_valid_numbers_answer_at_the_boundary(w: float, kv: float, c: float,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting(monkeypatch)
    n = _stage_max(w, kv, c)
    assert n is not None and calls[0] <= MAX_FIT_PROBES
    if n > 0:
        assert fits(w, kv, c, n)
    assert n == MAX_SEQUENCES or not fits(w, kv, c, n + 1) or not fits(w, kv, c, 0)
    assert n < MAX_SEQUENCES or kv < 1e-14  # the cap is reached only by absurdly small KV sizes


def test_no_kv_model_is_unbounded() -> None:
    assert _stage_max(10.0, 0.0, 80.0) is None
