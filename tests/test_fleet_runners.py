"""The same fleet sweep on this process, a local process pool and a local Ray instance: identical JSON."""

from __future__ import annotations

import pytest
from fleet_cases import PRICES, tiny_model

from partitioner.fleets import fleet
from partitioner.jsonio import dumps

MODEL = tiny_model()
PRICES_SPEC = {g: {"on_demand_usd_h": p} for g, p in PRICES.items()}
SWEEP = {"market": {"t4": 2, "gtx-1070": 2, "l4": 1}, "budget_per_hour": 1.0, "tpot_ms": 20.0,
         "prices": PRICES_SPEC, "max_batch": 8}


def _json(**kw) -> str:
    return dumps(fleet(MODEL, **SWEEP, **kw).to_dict(), indent=2)


@pytest.fixture(scope="module")
def serial() -> str:
    return _json(workers=1)


def test_process_pool_equals_serial(serial):
    assert _json(workers=2) == serial
    assert '"proven": true' in serial


def test_ray_equals_process_pool(serial, monkeypatch):
    ray = pytest.importorskip("ray", reason="Ray is the optional extra: pip install '.[ray]' (CI installs it)")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        assert ray.is_initialized()
        assert _json(ray="local") == serial  # joins the instance this test started
    finally:
        ray.shutdown()


def test_ray_missing_is_a_clear_error(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_ray(name, *a, **k):
        if name == "ray":
            raise ImportError("no ray")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    from partitioner.errors import InputError

    with pytest.raises(InputError, match=r"--ray needs Ray: pip install"):
        fleet(MODEL, **SWEEP, ray="127.0.0.1:6379")
