"""cluster.yaml: the devices a user owns and the links between them (docs/costmodel.md).

Units: GB = 1e9 bytes (memory and bandwidth), latencies in milliseconds.
"""

from __future__ import annotations

import functools
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from partitioner.models import catalog
from partitioner.models.fields import (
    EngineField,
    Fraction,
    Frozen,
    LocatedValueError,
    Name,
    NonNegative,
    Positive,
    PositiveInt,
)
from partitioner.models.prices import PriceSpec

__all__ = ["GpuSpec", "LinkSpec", "Links", "Pair", "Device", "NodeSpec", "ClusterSpec", "resolve_gpu", "resolve_link"]

Family = Literal["datacenter", "geforce", "workstation", "legacy", "radeon", "apple"]
MemoryType = Literal["gddr", "hbm", "unified"]
ComputeClass = Literal["tensor", "inference", "fp32"]


class GpuSpec(Frozen):
    """One GPU type: a catalogue entry or an inline mapping (`base:` inherits a catalogue id)."""

    name: str = "custom"  # display name
    base: str | None = None  # the catalogue id this spec inherits from (`base:`), its GPU id
    family: Family = "datacenter"  # descriptive; the defaults follow memory_type and compute_class
    memory_type: MemoryType | None = None  # None: hbm for a datacenter family, unified for apple, else gddr
    compute_class: ComputeClass | None = None  # None: tensor, or fp32 without tensor cores
    memory_gb: Positive
    bandwidth_gb_s: Positive
    tensor_tflops: Positive | None = None  # dense bf16/fp16 (GeForce: FP32-accumulate); None: no tensor cores
    fp32_tflops: Positive
    eta_compute: Fraction | None = None  # None: the fitted default (gpus.yaml `defaults`)
    eta_memory: Fraction | None = None
    overhead_ms: NonNegative | None = None  # fixed time per layer per micro-batch
    token_overhead_ms: NonNegative | None = None  # fixed time per token (micro-batch step) per pipeline
    compute_capability: str | None = None  # NVIDIA CUDA "major.minor"; None: not a CUDA GPU / unknown
    visible_gib: Positive | None = None  # memory as the engine sees it (torch.cuda.mem_get_info()[1]), GiB; None: derived
    source: str = ""

    @property
    def engine_visible_bytes(self) -> float:
        """Bytes an engine sees (torch.cuda.mem_get_info()[1], vLLM's total_gpu_memory): `visible_gib`
        as logged, else derived from memory_gb read as GiB (the marketing figure is binary): HBM
        cards 0.99 of it (H100 80GB: 79.19 GiB, A100 80GB: 79.2), GDDR cards 0.45 GiB less (RTX 3090:
        23.58, RTX 4090: 23.55 GiB), ECC GDDR datacenter cards (L4, T4, A10) 1/16 less again for
        ECC (L4: 22.05 GiB); tests/data/engine_logs.yaml has the logged values."""
        if self.visible_gib is not None:
            return float(self.visible_gib) * (1 << 30)
        gib = float(self.memory_gb)
        if self.mem_type == "hbm":
            gib *= 0.99
        elif self.family == "datacenter":
            gib = gib * 15 / 16 - 0.45
        else:
            gib -= 0.45
        return gib * (1 << 30)

    @property
    def nvlink(self) -> bool:
        """An HBM card that is not a PCIe card (SXM / NVSwitch boards): NCCL allocates its larger
        NVLink (NVLS) buffers there, so an engine's non-torch memory at TP >= 2 is larger."""
        return self.mem_type == "hbm" and "pcie" not in self.name.lower()

    @field_validator("compute_capability", mode="before")
    @classmethod
    def _cc_format(cls, value: Any) -> Any:
        if value is None:
            return None
        text = str(value)
        major, _, minor = text.partition(".")
        if not (major.isdigit() and minor.isdigit()):
            raise ValueError(f'must be "major.minor", e.g. "8.6" (got {value!r})')
        return text

    @property
    def cc(self) -> tuple[int, int] | None:
        """compute_capability as (major, minor), for comparing with an engine's minimum."""
        if self.compute_capability is None:
            return None
        major, minor = self.compute_capability.split(".")
        return int(major), int(minor)

    @model_validator(mode="before")
    @classmethod
    def _inherit(cls, data: Any) -> Any:
        if isinstance(data, dict) and "base" in data:
            data = dict(data)
            base = str(data.pop("base"))
            try:
                merged = catalog.require("gpus", base)
            except ValueError as exc:
                raise LocatedValueError(("base",), str(exc)) from None
            merged.update(data)
            merged["base"] = base
            return merged
        return data

    @property
    def mem_type(self) -> str:
        """memory_type, or the family's usual memory when not given."""
        if self.memory_type is not None:
            return self.memory_type
        return {"datacenter": "hbm", "apple": "unified"}.get(self.family, "gddr")

    @property
    def compute_kind(self) -> str:
        """compute_class, or tensor / fp32 by whether the GPU has tensor cores."""
        if self.compute_class is not None:
            return self.compute_class
        return "fp32" if self.tensor_tflops is None else "tensor"

    @property
    def calibrated(self) -> bool:
        """True when the spec gives any efficiency or overhead itself (e.g. `calibrate profile`)."""
        return any(v is not None for v in (self.eta_compute, self.eta_memory, self.overhead_ms,
                                            self.token_overhead_ms))

    def factors(self, bits: float = 16.0, engine: Any = None) -> tuple[float, float, float, float]:
        """(eta_compute, eta_memory, overhead per layer s, overhead per token s) for weights of
        `bits` per weight under `engine` (an EngineSpec or id; None: generic). Given values win;
        a calibrated spec ignores the engine's scales (partitioner.models.engines)."""
        from partitioner.models.engines import default_factors, resolve_engine

        eng = None if self.calibrated else resolve_engine(engine)
        eta_c, eta_m, t_layer, t_token = default_factors(self.mem_type, self.compute_kind, self.cc, bits, eng)
        return (
            float(self.eta_compute) if self.eta_compute is not None else eta_c,
            float(self.eta_memory) if self.eta_memory is not None else eta_m,
            float(self.overhead_ms) / 1e3 if self.overhead_ms is not None else t_layer,
            float(self.token_overhead_ms) / 1e3 if self.token_overhead_ms is not None else t_token,
        )

    def peak_flops(self, engine: Any = None) -> float:
        """FLOP/s the roofline divides by: the tensor rate (FP32-accumulate), else FP32. An engine
        whose GEMMs accumulate in fp16 doubles it on GeForce cards, whose FP16-accumulate tensor
        rate is twice the FP32-accumulate one (docs/costmodel.md "Key decisions"); not for a calibrated
        spec, whose etas were fitted against the catalogue rate."""
        from partitioner.models.engines import resolve_engine

        if self.tensor_tflops is None:
            return float(self.fp32_tflops) * 1e12
        fp16_acc = self.family == "geforce" and not self.calibrated and resolve_engine(engine).fp16_accumulate
        return float(self.tensor_tflops) * 1e12 * (2.0 if fp16_acc else 1.0)

    def efficiency(self, bits: float = 16.0, engine: Any = None) -> tuple[float, float, float]:
        """(eta_compute, eta_memory, overhead per layer s) of `factors`."""
        eta_c, eta_m, t_layer, _ = self.factors(bits, engine)
        return eta_c, eta_m, t_layer

    def __str__(self) -> str:
        return self.name


class LinkSpec(Frozen):
    """A link: latency alpha (ms) and bandwidth beta (GB/s), per direction."""

    latency_ms: NonNegative
    bandwidth_gb_s: Positive
    name: str = ""
    source: str = ""


def resolve_gpu(gpu: str | GpuSpec) -> GpuSpec:
    """The GpuSpec of a catalogue id or an inline spec."""
    if isinstance(gpu, GpuSpec):
        return gpu
    return _catalog_gpu(gpu)


def resolve_link(link: str | LinkSpec) -> LinkSpec:
    """The LinkSpec of a catalogue id or an inline spec."""
    if isinstance(link, LinkSpec):
        return link
    return _catalog_link(link)


# The shipped catalogue does not change while a command runs and the specs are frozen, so each id
# is validated once: link_arrays asks for G^2 links, the TP group tables for every group's ring
# (64 GPUs: 176,000 pydantic validations, 20 s of a 1 s time limit).
@functools.lru_cache(maxsize=256)
def _catalog_gpu(gpu: str) -> GpuSpec:
    return GpuSpec.model_validate(catalog.require("gpus", gpu))


@functools.lru_cache(maxsize=256)
def _catalog_link(link: str) -> LinkSpec:
    return LinkSpec.model_validate(catalog.require("links", link))


def _check_id(kind: str, value: Any) -> Any:
    if isinstance(value, str):
        catalog.require(kind, value)
    return value


class Links(Frozen):
    """Default links: between devices of one node, and between nodes."""

    intra_node: str | LinkSpec = "pcie4"
    inter_node: str | LinkSpec = "10gbe"

    @field_validator("intra_node", "inter_node")
    @classmethod
    def _known(cls, value: Any) -> Any:
        return _check_id("links", value)


class Pair(Frozen):
    """Overrides the link from one device to another (and back, unless the reverse is listed)."""

    from_: Name = Field(alias="from")
    to: Name
    latency_ms: NonNegative
    bandwidth_gb_s: Positive


class Device(Frozen):
    """One GPU the user owns. `memory_gb` overrides the catalogue (less free memory)."""

    name: Name
    gpu: str | GpuSpec  # catalogue id or inline spec; `gpu_id` is always a string
    node: Name
    memory_gb: Positive | None = None
    reserve_gb: NonNegative | None = None  # None: the cluster's reserve_gb
    non_kv_gib: NonNegative | None = None  # activation peak + non-torch memory per rank, from `partition calibrate engine-log`

    @model_validator(mode="before")
    @classmethod
    def _default_node(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("node") is None and "name" in data:
            data = {**data, "node": data["name"]}
        return data

    @field_validator("gpu")
    @classmethod
    def _known(cls, value: Any) -> Any:
        return _check_id("gpus", value)

    @property
    def gpu_id(self) -> str:
        """The catalogue id, also for an inline `{base: id, ...}` spec; else the inline spec's name."""
        if isinstance(self.gpu, str):
            return self.gpu
        return self.gpu.base or self.gpu.name

    @property
    def spec(self) -> GpuSpec:
        return resolve_gpu(self.gpu)

    @property
    def total_gb(self) -> float:
        return float(self.memory_gb if self.memory_gb is not None else self.spec.memory_gb)


ADDRESS_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]")


class NodeSpec(Frozen):
    """One host. `address`: the IP (or resolvable host name) its engine processes bind to.

    Engines order and reach hosts by it (vLLM's Ray executor breaks ties in its rank order by
    the IP string; SGLang's --dist-init-addr, llama.cpp's --rpc and Ray's --address name it).
    Characters: letters, digits and `.-:[]` (IPv4, IPv6, DNS names), so it is shell-safe.
    """

    address: str | None = None

    @field_validator("address")
    @classmethod
    def _address(cls, value: str | None) -> str | None:
        if value is not None and (not value or set(value) - ADDRESS_CHARS):
            raise ValueError(f"must be an IP address or host name (letters, digits, '.-:[]'; got {value!r})")
        return value


class ClusterSpec(Frozen):
    """What the user owns: devices, links, stage order and per-device memory reserve.

    `nodes:` optionally maps a node name to its `address:`; where it is missing, exports
    use the node name as the host name and say so.
    """

    name: str = ""
    devices: tuple[Device, ...] = Field(min_length=1)
    nodes: dict[str, NodeSpec] = Field(default_factory=dict)
    links: Links = Links()
    pairs: tuple[Pair, ...] = ()
    order: Literal["free", "fixed"] = "free"
    reserve_gb: NonNegative = 1.0
    engine: EngineField = None  # presets/engines.yaml id: per-token, per-hop overheads and eta scales; or a mapping {name: id, <flag>: value}
    engine_settings: dict[str, Any] | None = None  # the flags of a mapping `engine:` (models/engines.py split_engine)

    @model_validator(mode="before")
    @classmethod
    def _engine_mapping(cls, data: Any) -> Any:
        """`engine:` as a mapping keeps its id in `engine` and its flags in `engine_settings`."""
        from partitioner.models.engines import engine_mapping

        return engine_mapping(data)
    # tensor-parallel degrees a stage may use inside one node: a list for every node, or
    # {default: [...], <node>: [...]} per node; None: 1, 2, 4, 8 (partitioner.costs.tp)
    tp: tuple[PositiveInt, ...] | dict[str, tuple[PositiveInt, ...]] | None = None
    # per GPU id, prices that override the shipped catalogue (partitioner.models.prices)
    prices: dict[str, PriceSpec] = Field(default_factory=dict)

    @field_validator("engine")
    @classmethod
    def _known_engine(cls, value: Any) -> Any:
        return _check_id("engines", value)

    @model_validator(mode="after")
    def _consistent(self) -> ClusterSpec:
        seen: dict[str, int] = {}
        for i, dev in enumerate(self.devices):
            if dev.name in seen:
                raise LocatedValueError(
                    ("devices", i, "name"),
                    f"duplicate device name {dev.name!r} (also devices[{seen[dev.name]}])",
                )
            seen[dev.name] = i
            if self.capacity_gb(dev) <= 0:
                field = "reserve_gb" if dev.reserve_gb is not None else "memory_gb"
                raise LocatedValueError(
                    ("devices", i, field),
                    f"reserve {self.reserve_of(dev):g} GB leaves no usable memory on {dev.name!r} "
                    f"({dev.total_gb:g} GB)",
                )
        names = tuple(seen)
        known_nodes = tuple(dict.fromkeys(dev.node for dev in self.devices))
        owner: dict[str, str] = {}
        for node, spec in self.nodes.items():
            if node not in known_nodes:
                raise LocatedValueError(("nodes", node), catalog.unknown_message("node", node, known_nodes))
            if spec.address is not None and spec.address in owner:  # vLLM: "Every node should have a unique IP address"
                raise LocatedValueError(("nodes", node, "address"), f"{spec.address!r} is also the address of node {owner[spec.address]!r}")
            if spec.address is not None:
                owner[spec.address] = node
        self._check_tp()
        for gpu_id in self.prices:
            if gpu_id not in catalog.ids("gpus") and gpu_id not in {d.gpu_id for d in self.devices}:
                raise LocatedValueError(("prices", gpu_id), catalog.unknown_message("GPU id", gpu_id, catalog.ids("gpus")))
        for i, pair in enumerate(self.pairs):
            for key, value in (("from", pair.from_), ("to", pair.to)):
                if value not in seen:
                    raise LocatedValueError(("pairs", i, key), catalog.unknown_message("device", value, names))
            if pair.from_ == pair.to:
                raise LocatedValueError(("pairs", i, "to"), f"a pair needs two devices (got {pair.to!r} twice)")
        return self

    def address_of(self, node: str) -> str | None:
        """The `address:` given for `node`, or None."""
        spec = self.nodes.get(node)
        return spec.address if spec is not None else None

    def _check_tp(self) -> None:
        """Some listed degree is usable: at least one is listed, and one fits in the node it applies
        to (a TP group lives inside one node), so `tp: []` or `tp: [16]` on 8-GPU nodes is refused;
        a list such as [1, 2, 4] for nodes of 2 GPUs is fine (4 is unused there)."""
        if self.tp is None:
            return
        per_node: dict[str, int] = {}
        for d in self.devices:
            per_node[d.node] = per_node.get(d.node, 0) + 1
        table = self.tp if isinstance(self.tp, dict) else {"default": self.tp}
        for key in table:
            if key != "default" and key not in per_node:
                raise LocatedValueError(("tp", key), catalog.unknown_message("node", key, tuple(sorted(per_node))))
        for key, sizes in table.items():
            where: tuple[str | int, ...] = ("tp", key) if isinstance(self.tp, dict) else ("tp",)
            if not sizes:
                raise LocatedValueError(where, "needs at least one tensor-parallel degree, e.g. [1, 2]")
            room = per_node[key] if key != "default" else max(per_node.values())
            if min(sizes) > room:
                on = f"node {key!r} has" if key != "default" else "the largest node has"
                raise LocatedValueError(where, f"no listed tensor-parallel degree fits: a group of {min(sizes)} needs "
                                               f"{min(sizes)} GPUs in one node, but {on} {room} (got {list(sizes)})")

    def tp_problem(self, num_attention_heads: int) -> tuple[tuple[str, ...], str] | None:
        """(location, message) when a listed TP degree does not divide the model's attention heads,
        which every engine requires (vLLM `ModelConfig.verify_with_parallel_config`: "Total number of
        attention heads must be divisible by tensor parallel size"; SGLang and TensorRT-LLM split
        heads the same way), else None. The default degrees are filtered, not refused."""
        if self.tp is None:
            return None
        table = self.tp if isinstance(self.tp, dict) else {"default": self.tp}
        for key, sizes in table.items():
            bad = [t for t in sizes if num_attention_heads % t]
            if bad:
                where = ("tp", key) if isinstance(self.tp, dict) else ("tp",)
                return where, (f"tensor-parallel degree {bad[0]} does not divide the model's {num_attention_heads} "
                               f"attention heads (engines split heads evenly; got {list(sizes)})")
        return None

    def tp_sizes(self, node: str) -> tuple[int, ...]:
        """Tensor-parallel degrees allowed on `node` (cluster.yaml `tp`, default 1, 2, 4, 8)."""
        from partitioner.costs.tp import DEFAULT_TP

        if self.tp is None:
            return DEFAULT_TP
        if isinstance(self.tp, dict):
            return tuple(sorted(set(self.tp.get(node, self.tp.get("default", DEFAULT_TP)))))
        return tuple(sorted(set(self.tp)))

    def reserve_of(self, dev: Device) -> float:
        return float(dev.reserve_gb if dev.reserve_gb is not None else self.reserve_gb)

    def capacity_gb(self, dev: Device) -> float:
        """C_g = memory - reserve (docs/costmodel.md)."""
        return dev.total_gb - self.reserve_of(dev)

    def link(self, a: Device, b: Device) -> LinkSpec:
        """The link from `a` to `b`: a listed pair, else its listed reverse, else the node default."""
        for pair in self.pairs:
            if (pair.from_, pair.to) == (a.name, b.name):
                return LinkSpec(latency_ms=pair.latency_ms, bandwidth_gb_s=pair.bandwidth_gb_s)
        for pair in self.pairs:
            if (pair.from_, pair.to) == (b.name, a.name):
                return LinkSpec(latency_ms=pair.latency_ms, bandwidth_gb_s=pair.bandwidth_gb_s)
        default = self.links.intra_node if a.node == b.node else self.links.inter_node
        return resolve_link(default)
