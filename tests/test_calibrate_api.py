"""The calibrate package's public names resolve lazily, and importing it stays cheap."""

from __future__ import annotations

import subprocess
import sys

import partitioner.calibrate as calibrate


def test_every_exported_name_resolves() -> None:
    for name in calibrate.__all__:
        assert getattr(calibrate, name) is not None, name
    assert sorted(calibrate.__all__) == dir(calibrate)


def test_importing_the_package_loads_neither_numpy_nor_pydantic() -> None:
    code = "import sys, partitioner.calibrate; print(sorted(m for m in ('numpy', 'pydantic', 'torch') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
