"""Refit the cost model's default efficiencies and fixed costs from the shared measurements.

    python benchmarks/costmodel_fit.py [--shared PATH] [--json]

Data (read from ../shared/data beside the repository, never copied into it; skipped when absent):
- gpu-bench: llama.cpp ./main decode (tg) and prompt (pp) speeds, one GPU, LLaMA-1/2 in F16 and
  Q4_0 (XiongjieDai/GPU-Benchmarks-on-LLM-Inference @c795193, December 2023).
- helix: per-layer decode and prompt milliseconds of Llama-2-70B / LLaMA-1-30B on A100, L4, T4, V100
  (Thesys-lab/Helix-ASPLOS25 @148b7330).

Method, with the regime fit of `partition calibrate profile` (partitioner.calibrate.regimes.solve:
relative least squares of t = max(a·f, b·m) + c·n under eta <= 1, c >= 0). Rows of many GPUs are
pooled by dividing each row's FLOPs by the GPU's peak F and its bytes by its bandwidth BW, so that
a = 1/eta_compute, b = 1/eta_memory are shared by the group and never fitted per GPU:
1. decode, per memory type (gddr / hbm / unified) x weight-precision class (16 / 4 bits): eta_memory
   and the per-token fixed cost c (n = 1 per token) from whole-model decode steps at batch 1 and
   the run's mean context (500-token prompt + half of 1024 generated tokens). The 8-bit class has
   no rows: it is the mean of the 16- and 4-bit values.
2. prefill, per compute class (tensor: A100, V100; inference: L4, T4): eta_compute from Helix's
   per-layer prompt times; fp32 (no tensor cores: Apple here) from gpu-bench prompt speeds.
3. NVIDIA GPUs before Ampere (compute capability < 8.0): one eta_memory factor, the geometric mean
   of predicted / measured over Helix's T4 and V100 decode rows.
4. llama.cpp's prefill factor (engines.yaml llamacpp eta_compute_scale, tensor and inference
   classes): the median over the gpu-bench tensor-core prompt rows of the eta_compute each row
   needs over the Helix-fitted class default, GeForce cards at their fp16-accumulate rate (twice
   tensor_tflops: llama.cpp's cuBLAS GEMMs accumulate in fp16). (The fp32 class was fitted on
   llama.cpp itself.)
It prints the fitted values as gpus.yaml `defaults`, then the error of the committed defaults per
GPU (median and 90th percentile of |predicted - measured| / measured), and the leave-one-GPU-out
error of step 1 (each GPU's rows predicted by a fit to the other GPUs only).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from partitioner.calibrate import regimes
from partitioner.costs import roofline
from partitioner.costs.roofline import Shape, Work
from partitioner.models.cluster import GpuSpec, resolve_gpu
from partitioner.models.engines import precision_class, resolve_engine

#: LLaMA-1 / Llama-2 shapes (Hugging Face config.json of huggyllama/llama-{7b,13b,30b,65b} and
#: meta-llama/Llama-2-{7b,13b,70b}-hf).
SHAPES = {
    "7B": Shape(L=32, h=4096, i=11008, H=32, kv=32, d=128, V=32000),
    "13B": Shape(L=40, h=5120, i=13824, H=40, kv=40, d=128, V=32000),
    "30B": Shape(L=60, h=6656, i=17920, H=52, kv=52, d=128, V=32000),
    "65B": Shape(L=80, h=8192, i=22016, H=64, kv=64, d=128, V=32000),
    "70B": Shape(L=80, h=8192, i=28672, H=64, kv=8, d=128, V=32000),
}
#: gpu-bench `gpu` column -> catalogue id, with the chip's own figures where the catalogue entry is
#: another configuration (the M1 Max here has the 24-core GPU: 24/32 of 10.4 TFLOPS).
GPUS: dict[str, tuple[str, dict[str, float]]] = {
    "RTX 4080": ("rtx-4080", {}), "RTX 4000 Ada": ("rtx-4000-ada", {}), "RTX 3090": ("rtx-3090", {}),
    "RTX 4090": ("rtx-4090", {}), "RTX 5000 Ada": ("rtx-5000-ada", {}), "RTX A6000": ("rtx-a6000", {}),
    "RTX 6000 Ada": ("rtx-6000-ada", {}), "A100 PCIe 80GB": ("a100-80gb-pcie", {}),
    "H100 PCIe 80GB": ("h100-pcie", {}), "Apple M1 Max (24-core GPU, 32GB)": ("apple-m1-max", {"fp32_tflops": 7.8}),
    "Apple M2 Ultra (76-core GPU, 192GB)": ("apple-m2-ultra", {}), "Apple M3 (10-core GPU, 16GB)": ("apple-m3", {}),
    "Apple M3 Max (40-core GPU, 48GB)": ("apple-m3-max", {}),
}
HELIX_GPUS = {"a100": "a100-40gb", "l4": "l4", "t4": "t4", "v100": "v100-sxm2-16gb"}
HELIX_MODELS = {"llama2_70b": "70B", "llama1_30b": "30B"}
PROMPT, GENERATED = 500, 1024  # gpu-bench README: about 500 prompt tokens, 1024 generated
CONTEXT = PROMPT + GENERATED // 2  # mean KV positions read per generated token
HELIX_DECODE_CONTEXT = 512  # Helix does not state it; Llama-2-70B's GQA cache makes it minor
#: Helix decode rows compared: up to 16 sequences (the plateau where the weight stream binds). Beyond, the measured time grows with the (unstated)
#: context's attention and with compute that a max() roofline does not add to the weight stream.
HELIX_DECODE_MAX_BATCH = 16


def shared_dir(arg: str | None = None) -> Path:
    """`arg`, else $PARTITIONER_SHARED, else the first `shared` folder beside the repository or
    beside one of its parents (../shared in CI; ../../shared for a worktree one level down)."""
    if arg:
        return Path(arg)
    env = os.environ.get("PARTITIONER_SHARED")
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[1]
    for parent in repo.parents:
        if (parent / "shared" / "data").is_dir():
            return parent / "shared"
    return repo.parent / "shared"


@dataclass(frozen=True)
class Row:
    """One measurement: seconds of one forward step (whole model or one Helix layer)."""

    source: str  # "gpu-bench" or "helix"
    gpu: str  # the measured chip (gpu-bench name or helix dir)
    spec: GpuSpec
    shape: Shape
    work: Work
    whole: bool  # whole model (embed + L layers + head) or one decoder layer
    seconds: float
    label: str

    @property
    def bits(self) -> float:
        return 8.0 * self.work.b_w

    @property
    def mem_class(self) -> tuple[str, int]:
        return self.spec.mem_type, precision_class(self.bits)


def parts(r: Row) -> list[tuple[float, float]]:
    """(FLOPs, bytes) per part, as partitioner.costs.tables charges them."""
    s, w = r.shape, r.work
    layer = (roofline.layer_flops(s, w), roofline.layer_bytes(s, w))
    if not r.whole:
        return [layer]
    return ([(roofline.embed_flops(s, w), roofline.embed_bytes(s, w))] + [layer] * s.L
            + [(roofline.head_flops(s, w), roofline.head_bytes(s, w))])


def peaks(spec: GpuSpec) -> tuple[float, float]:
    hw = roofline.Hardware.of(spec)
    return hw.F, hw.BW


def predict(r: Row, engine: object = "generic") -> float:
    """The planner's time for the row: sum of per-part rooflines, + the per-token cost if whole."""
    hw = roofline.Hardware.of(r.spec, r.bits, engine)
    t = sum(roofline.roofline_time(f, m, hw) for f, m in parts(r))
    return t + (hw.t_token if r.whole else 0.0)


def read_gpu_bench(shared: Path) -> list[Row]:
    """Single-GPU rows of the gpu-bench table: decode (1/tg) and prefill (500/pp)."""
    path = shared / "data" / "gpu-bench" / "xiongjiedai_llama1_llama2_main_dec2023.csv"
    rows: list[Row] = []
    with path.open(newline="") as fh:
        for rec in csv.DictReader(fh):
            if rec["num_gpus"] != "1":
                continue
            gid, extra = GPUS[rec["gpu"]]
            spec = GpuSpec.model_validate({"base": gid, **extra})
            shape = SHAPES[rec["model"].rsplit("-", 1)[1]]
            params = float(re.search(r"params_B=([\d.]+)", rec["notes"]).group(1))  # type: ignore[union-attr]
            b_w = float(rec["model_size_gb"]) / params  # GB / 1e9 params = bytes per weight
            label = f"{rec['gpu'].split(' (')[0]} {rec['model']} {rec['quant']}"
            for phase, col, n in (("decode", "tg_tokens_per_s", 1), ("prefill", "pp_tokens_per_s", PROMPT)):
                if not rec[col]:
                    continue
                S = PROMPT if phase == "prefill" else 1
                w = Work(b_w=b_w, b_kv=2.0, b_a=4.0, phase=phase, B=1, S=S, C=CONTEXT if phase == "decode" else PROMPT)
                rows.append(Row("gpu-bench", rec["gpu"], spec, shape, w, True, n / float(rec[col]), f"{label} {phase}"))
    return rows


def read_helix(shared: Path) -> list[Row]:
    """Helix per-layer rows: prompt (x = prompt tokens, one sequence) and decode (x = sequences)."""
    base = shared / "data" / "helix" / "simulator" / "model_manager"
    rows: list[Row] = []
    for mdir, mkey in HELIX_MODELS.items():
        for gdir, gid in HELIX_GPUS.items():
            spec = resolve_gpu(gid)
            for phase, fname in (("prefill", "prompt_bs2time.csv"), ("decode", "decode_bs2time.csv")):
                if phase == "decode" and mkey != "70B":
                    continue  # LLaMA-1-30B's full-size KV cache depends on the unstated context
                with (base / mdir / gdir / fname).open() as fh:
                    for x_s, ms_s in csv.reader(fh):
                        x, ms = int(float(x_s)), float(ms_s)
                        if x <= 0 or ms <= 0 or (phase == "decode" and x > HELIX_DECODE_MAX_BATCH):
                            continue
                        w = (Work(2.0, 2.0, 2.0, "prefill", 1, x, x) if phase == "prefill"
                             else Work(2.0, 2.0, 2.0, "decode", x, 1, HELIX_DECODE_CONTEXT))
                        rows.append(Row("helix", gdir, spec, SHAPES[mkey], w, False, ms / 1e3,
                                        f"helix {mdir} {gdir} {phase} x={x}"))
    return rows


def _solve(rows: list[Row], n: float, default: tuple[float, float, float]) -> regimes.Solution:
    """regimes.solve on rows pooled across GPUs (FLOPs / F, bytes / BW): a = 1/eta_c, b = 1/eta_m."""
    f, m = [], []
    for r in rows:
        F, BW = peaks(r.spec)
        fr, mr = np.sum(parts(r), axis=0)
        f.append(fr / F)
        m.append(mr / BW)
    d = regimes.RowData(f=np.array(f), m=np.array(m), n=np.full(len(rows), n),
                        y=np.array([r.seconds for r in rows]), w=np.ones(len(rows)))
    with np.errstate(divide="ignore"):  # n = 0 (no fixed cost fitted): regimes' tie-break divides by n
        return regimes.solve(d, (1.0, 1.0, 0.0), default)


def fit_decode(rows: list[Row]) -> dict[tuple[str, int], tuple[float, float]]:
    """(memory type, precision class) -> (eta_memory, per-token seconds) from whole-model decode rows."""
    out = {}
    for key in sorted({r.mem_class for r in rows}):
        group = [r for r in rows if r.mem_class == key]
        sol = _solve(group, 1.0, (1 / 0.7, 1 / 0.7, 2e-3))
        out[key] = (1.0 / sol.p[1], sol.p[2])
    return out


def fit_compute(rows: list[Row]) -> dict[str, float]:
    """compute class -> eta_compute from prefill rows (n = 0: no fixed cost fitted here)."""
    return {cls: 1.0 / _solve([r for r in rows if r.spec.compute_kind == cls], 0.0, (1 / 0.7, 1 / 0.7, 0.0)).p[0]
            for cls in sorted({r.spec.compute_kind for r in rows})}


def fit(shared: Path) -> dict[str, object]:
    """Every fitted default (module docstring, steps 1-4)."""
    bench, helix = read_gpu_bench(shared), read_helix(shared)
    bdec = [r for r in bench if r.work.phase == "decode"]
    dec = fit_decode(bdec)
    eta_c = fit_compute([r for r in helix if r.work.phase == "prefill"])
    eta_c.update(fit_compute([r for r in bench if r.work.phase == "prefill" and r.spec.compute_kind == "fp32"]))
    eta_m = {mt: {p: dec[(mt, p)][0] for p in (16, 4)} for mt in ("gddr", "hbm", "unified")}
    tok = {mt: {p: dec[(mt, p)][1] * 1e3 for p in (16, 4)} for mt in ("gddr", "hbm", "unified")}
    for table in (eta_m, tok):
        for mt in table:
            table[mt][8] = (table[mt][16] + table[mt][4]) / 2
    # step 3: pre-Ampere factor against the defaults just fitted (decode of one Helix layer)
    old = [r for r in helix if r.work.phase == "decode" and r.spec.cc is not None and r.spec.cc < (8, 0)]
    ratios = []
    for r in old:
        F, BW = peaks(r.spec)
        f, m = np.sum(parts(r), axis=0)
        pred = max(f / (eta_c[r.spec.compute_kind] * F), m / (eta_m[r.spec.mem_type][16] * BW))
        ratios.append(pred / r.seconds)
    pre_ampere = float(np.exp(np.mean(np.log(ratios))))
    # step 4: llama.cpp prefill factor on tensor-core GPUs
    need = []
    for r in bench:
        if r.work.phase != "prefill" or r.spec.compute_kind != "tensor":
            continue
        F = r.spec.peak_flops("llamacpp")  # its fp16-accumulate GEMMs: twice the rate on GeForce
        t_tok = tok[r.spec.mem_type][precision_class(r.bits)] / 1e3
        flops = sum(f for f, _ in parts(r))
        need.append(flops / (F * max(r.seconds - t_tok, 1e-9)) / eta_c["tensor"])
    return {"eta_memory": eta_m, "token_overhead_ms": tok, "eta_compute": eta_c,
            "pre_ampere_eta_memory_scale": pre_ampere, "llamacpp_eta_compute_scale": float(np.median(need))}


def errors(rows: list[Row], engine: object = "generic") -> np.ndarray:
    """Relative errors (predicted - measured) / measured with the committed defaults."""
    return np.array([(predict(r, engine) - r.seconds) / r.seconds for r in rows])


def summary(e: np.ndarray) -> tuple[float, float]:
    """(median, 90th percentile) of |e|."""
    a = np.abs(e)
    return float(np.median(a)), float(np.percentile(a, 90))


def leave_one_gpu_out(rows: list[Row]) -> dict[str, np.ndarray]:
    """Per GPU: errors of its decode rows under a step-1 fit to the other GPUs' rows only."""
    out = {}
    for gpu in dict.fromkeys(r.gpu for r in rows):
        train = [r for r in rows if r.gpu != gpu]
        mine = [r for r in rows if r.gpu == gpu]
        keys = {r.mem_class for r in train}
        fitted = fit_decode(train)
        errs = []
        for r in mine:
            if r.mem_class not in keys:
                continue
            eta, c = fitted[r.mem_class]
            _, BW = peaks(r.spec)
            t = sum(m for _, m in parts(r)) / (eta * BW) + c
            errs.append((t - r.seconds) / r.seconds)
        out[gpu] = np.array(errs)
    return out


def _yaml(defaults: dict[str, object]) -> str:
    em, tk, ec = defaults["eta_memory"], defaults["token_overhead_ms"], defaults["eta_compute"]
    lines = ["defaults:", "  overhead_ms: 0.0",
             f"  pre_ampere_eta_memory_scale: {defaults['pre_ampere_eta_memory_scale']:.3f}",
             "  eta_compute: {" + ", ".join(f"{k}: {v:.3f}" for k, v in ec.items()) + "}",  # type: ignore[attr-defined]
             "  eta_memory:"]
    lines += [f"    {mt}: {{16: {v[16]:.3f}, 8: {v[8]:.3f}, 4: {v[4]:.3f}}}" for mt, v in em.items()]  # type: ignore[attr-defined]
    lines += ["  token_overhead_ms:"]
    lines += [f"    {mt}: {{16: {v[16]:.2f}, 8: {v[8]:.2f}, 4: {v[4]:.2f}}}" for mt, v in tk.items()]  # type: ignore[attr-defined]
    lines += [f"# engines.yaml llamacpp eta_compute_scale: {defaults['llamacpp_eta_compute_scale']:.3f}"]
    return "\n".join(lines)


def report(shared: Path) -> dict[str, object]:
    """Fit, then the committed defaults' errors per GPU and leave-one-GPU-out."""
    defaults = fit(shared)
    bench, helix = read_gpu_bench(shared), read_helix(shared)
    per_gpu = {}
    for phase in ("decode", "prefill"):
        rows = [r for r in bench if r.work.phase == phase]
        engine = "generic" if phase == "decode" else _LLAMACPP_PREFILL
        for gpu in dict.fromkeys(r.gpu for r in rows):
            mine = [r for r in rows if r.gpu == gpu]
            per_gpu[(phase, gpu)] = (len(mine), *summary(errors(mine, engine)))
        per_gpu[(phase, "all")] = (len(rows), *summary(errors(rows, engine)))
    logo = leave_one_gpu_out([r for r in bench if r.work.phase == "decode"])
    hel = {}
    for gpu in HELIX_GPUS:
        for phase in ("decode", "prefill"):
            mine = [r for r in helix if r.gpu == gpu and r.work.phase == phase]
            hel[(gpu, phase)] = (len(mine), *summary(errors(mine)))
    return {"defaults": defaults, "per_gpu": per_gpu, "logo": logo, "helix": hel}


#: gpu-bench prompt rows are llama.cpp of December 2023: eta_compute scaled as engines.yaml llamacpp,
#: fixed costs as fitted (generic).
_LLAMACPP_PREFILL = resolve_engine("generic").model_copy(
    update={"id": "llamacpp-dec2023", "eta_compute_scale": resolve_engine("llamacpp").eta_compute_scale,
            "fp16_accumulate": resolve_engine("llamacpp").fp16_accumulate})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shared", default=None, help="the shared folder (default ../shared or $PARTITIONER_SHARED)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    shared = shared_dir(args.shared)
    if not (shared / "data" / "gpu-bench").is_dir() or not (shared / "data" / "helix").is_dir():
        print(f"skipped: {shared}/data/gpu-bench or helix not found (set --shared or PARTITIONER_SHARED)")
        return
    out = report(shared)
    if args.json:
        print(json.dumps({"defaults": out["defaults"], "per_gpu": {f"{k[0]} {k[1]}": v for k, v in out["per_gpu"].items()},  # type: ignore[attr-defined]
                          "helix": {f"{k[0]} {k[1]}": v for k, v in out["helix"].items()}}, default=str, indent=2))  # type: ignore[attr-defined]
        return
    print("fitted (paste into partitioner/models/presets/gpus.yaml):")
    print(_yaml(out["defaults"]))  # type: ignore[arg-type]
    print("\ncommitted defaults against gpu-bench (|predicted - measured| / measured):")
    print(f"{'phase':8s} {'gpu':38s} {'rows':>4s} {'median':>7s} {'p90':>7s} {'LOGO med':>8s} {'LOGO p90':>8s}")
    logo = out["logo"]
    for (phase, gpu), (n, med, p90) in out["per_gpu"].items():  # type: ignore[attr-defined]
        extra = ""
        if phase == "decode" and gpu != "all" and len(logo[gpu]):  # type: ignore[index]
            lm, lp = summary(logo[gpu])  # type: ignore[index]
            extra = f" {100 * lm:7.1f}% {100 * lp:7.1f}%"
        elif phase == "decode" and gpu == "all":
            lm, lp = summary(np.concatenate(list(logo.values())))  # type: ignore[attr-defined]
            extra = f" {100 * lm:7.1f}% {100 * lp:7.1f}%"
        print(f"{phase:8s} {gpu:38s} {n:4d} {100 * med:6.1f}% {100 * p90:6.1f}%{extra}")
    dec = errors([r for r in read_gpu_bench(shared) if r.work.phase == "decode"])
    print(f"decode rows within +-10 %: {np.mean(np.abs(dec) <= 0.10):.0%}, within +-25 %: {np.mean(np.abs(dec) <= 0.25):.0%}; "
          f"median predicted / measured {np.median(1 + dec):.3f}")
    print("\nHelix per-layer times (generic engine):")
    for (gpu, phase), (n, med, p90) in out["helix"].items():  # type: ignore[attr-defined]
        print(f"  {gpu:5s} {phase:8s} rows {n:3d}  median {100 * med:5.1f}%  p90 {100 * p90:5.1f}%")
    l4 = predict(next(r for r in read_helix(shared) if r.gpu == "l4" and r.work.phase == "decode"))
    t4 = predict(next(r for r in read_helix(shared) if r.gpu == "t4" and r.work.phase == "decode"))
    print(f"  decode layer of Llama-2-70B at 2 sequences: L4 {1e3 * l4:.2f} ms, T4 {1e3 * t4:.2f} ms "
          f"(measured 6.9 / 7.1): L4 {'faster' if l4 < t4 else 'SLOWER'}")


if __name__ == "__main__":
    main()
