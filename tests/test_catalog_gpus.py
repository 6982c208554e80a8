"""The GPU catalogue covers the cards people mix, each with the figures the cost model needs."""

from __future__ import annotations

import pytest

from partitioner.models import catalog
from partitioner.models.cluster import resolve_gpu

# every GPU the cost-model issue lists, by catalogue id (Apple has no M4 Ultra: the M3 Ultra is
# Apple's Ultra of that generation)
WANTED = [
    "rtx-2080-ti", "rtx-3060-12gb", "rtx-3060-ti", "rtx-3070", "rtx-3080-ti", "rtx-4060-ti-16gb", "rtx-4070",
    "rtx-4070-ti", "rtx-4070-ti-super", "rtx-4080", "rtx-4080-super", "rtx-5070-ti", "rtx-5080", "rtx-5090",
    "rtx-a4000", "rtx-a5000", "rtx-a6000", "rtx-4000-ada", "rtx-5000-ada", "rtx-6000-ada", "rtx-pro-6000",
    "a40", "a10", "v100-pcie-16gb", "v100-pcie-32gb", "v100-sxm2-16gb", "v100-sxm2-32gb", "p100-pcie-16gb",
    "a100-80gb-pcie", "a100-80gb", "h100-sxm", "h100-pcie", "h200", "b200", "mi250x", "mi300x", "rx-7900-xtx",
    "apple-m1-max", "apple-m1-ultra", "apple-m2-max", "apple-m2-ultra", "apple-m3-max", "apple-m3-ultra",
    "apple-m4-max",
]
# ids that existed before the catalogue grew stay valid
EARLIER = ["rtx-5090", "rtx-5090-laptop", "rtx-4090", "rtx-3090", "rtx-3080", "gtx-1070", "p40", "t4", "l4", "l40s",
           "a10g", "a100-40gb", "a100-80gb", "h100-sxm", "h100-pcie", "h200", "mi300x"]


@pytest.mark.parametrize("gid", sorted(set(WANTED + EARLIER)))
def test_entry_has_every_figure_and_a_source(gid):
    raw = catalog.require("gpus", gid)
    for key in ("name", "memory_type", "memory_gb", "bandwidth_gb_s", "fp32_tflops", "source"):
        assert raw.get(key), (gid, key)
    assert "tensor_tflops" in raw and "compute_capability" in raw  # null only when there is none
    spec = resolve_gpu(gid)
    nvidia = not (gid.startswith(("apple-", "mi", "rx-")))
    assert (spec.compute_capability is not None) == nvidia, gid
    if spec.mem_type == "unified":
        assert gid.startswith("apple-") and spec.tensor_tflops is None and spec.compute_kind == "fp32"
    if spec.tensor_tflops is not None:
        assert spec.tensor_tflops > spec.fp32_tflops * 0.9  # dense tensor rate above the FP32 ALUs
    assert 0 < spec.factors()[1] <= 1 and 0 < spec.factors()[0] <= 1


def test_memory_types_and_classes_of_known_cards():
    kinds = {g: (resolve_gpu(g).mem_type, resolve_gpu(g).compute_kind) for g in ("rtx-4090", "l40s", "l4", "t4",
                                                                                "a100-80gb-pcie", "p100-pcie-16gb",
                                                                                "apple-m3-max", "mi250x")}
    assert kinds == {"rtx-4090": ("gddr", "tensor"), "l40s": ("gddr", "tensor"), "l4": ("gddr", "inference"),
                     "t4": ("gddr", "inference"), "a100-80gb-pcie": ("hbm", "tensor"),
                     "p100-pcie-16gb": ("hbm", "fp32"), "apple-m3-max": ("unified", "fp32"),
                     "mi250x": ("hbm", "tensor")}
    # the PCIe A100 80GB is its own entry (1935 GB/s) beside the SXM one (2039 GB/s)
    assert resolve_gpu("a100-80gb-pcie").bandwidth_gb_s == 1935 and resolve_gpu("a100-80gb").bandwidth_gb_s == 2039
