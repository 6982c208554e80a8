"""Fit the TP group model (partitioner.costs.tp.TpFit) on Helix's measured TP tables.

    python benchmarks/tp_fit.py [--shared PATH]

Data (read from ../shared/data/helix, never copied; exits 0 with a note when absent): LLaMA-2-70B
decode milliseconds per layer on one GPU (l4, t4) and on TP groups of the same GPU (l4x2, t4x2,
t4x4), Thesys-lab/Helix-ASPLOS25 @148b7330 simulator/model_manager/llama2_70b/*/decode_bs2time.csv.
Links: the L4 machines are PCIe Gen4 (links.yaml pcie4), the T4 machines PCIe Gen3 (pcie3).

Prints the fit on all three tables (the committed DEFAULT_FIT), then each table predicted by a fit
on the other two (leave one table out), with the largest error per table at batches 8-100, and
the model's speed-up beside the measured one at batches 8, 50 and 100.
"""

from __future__ import annotations

import argparse
import csv
import os
from pathlib import Path

import numpy as np

from partitioner.costs import tp
from partitioner.models import catalog
from partitioner.models.cluster import resolve_link

__all__ = ["GROUPS", "BATCHES", "helix_dir", "helix_samples", "main"]

GROUPS = (("l4", 2, "pcie4"), ("t4", 2, "pcie3"), ("t4", 4, "pcie3"))  # (GPU, t, intra-node link)
BATCHES = (8, 100)  # the serving range the fit is judged on (inclusive)


def helix_dir(shared: Path | None = None) -> Path:
    root = shared or Path(os.environ.get("PARTITIONER_SHARED", Path(__file__).resolve().parents[1] / ".." / "shared"))
    return root / "data" / "helix" / "simulator" / "model_manager" / "llama2_70b"


def _bs2time(path: Path) -> dict[int, float]:
    with open(path) as fh:
        return {int(a): float(b) / 1e3 for a, b in csv.reader(fh) if int(a) > 0}


def helix_samples(folder: Path, hidden: int | None = None) -> dict[str, list[tp.TpSample]]:
    """{"l4x2": samples, ...}: every batch in BATCHES' range that both tables hold."""
    h = hidden or int(catalog.require("models", "llama-2-70b")["architecture"]["hidden_size"])
    out: dict[str, list[tp.TpSample]] = {}
    for gpu, t, link_id in GROUPS:
        one, grp = _bs2time(folder / gpu / "decode_bs2time.csv"), _bs2time(folder / f"{gpu}x{t}" / "decode_bs2time.csv")
        link = resolve_link(link_id)
        out[f"{gpu}x{t}"] = [tp.TpSample(one[b], grp[b], t, b * h * 2.0, link.bandwidth_gb_s * 1e9)
                             for b in sorted(grp) if BATCHES[0] <= b <= BATCHES[1] and b in one]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", type=Path, default=None)
    folder = helix_dir(ap.parse_args().shared)
    if not folder.is_dir():
        print(f"{folder} is absent: nothing to fit")
        return
    tables = helix_samples(folder)
    every = [s for rows in tables.values() for s in rows]
    fit = tp.fit_tp(every)
    print(f"fit on all three: overhead {fit.overhead_s * 1e3:.4f} ms/layer, bandwidth factor {fit.bandwidth_factor:.3f}"
          f"  (committed: {tp.DEFAULT_FIT.overhead_s * 1e3:.4f} ms, {tp.DEFAULT_FIT.bandwidth_factor:.3f})")
    print(f"{'table':<6} {'all-fit max err':>16} {'left-out max err':>17}   speed-up measured / model at B = 8, 50, 100")
    for name, rows in tables.items():
        loo = tp.fit_tp([s for other, r in tables.items() if other != name for s in r])
        e_all = np.abs(tp.relative_errors(rows, tp.DEFAULT_FIT)).max()
        e_loo = np.abs(tp.relative_errors(rows, loo)).max()
        by_b = {round(s.act_bytes / (2.0 * 8192)): s for s in rows}
        speed = "  ".join(f"{by_b[b].single_s / by_b[b].group_s:.2f}/"
                          f"{by_b[b].single_s / tp.group_time_s(by_b[b].single_s, by_b[b].t, by_b[b].act_bytes, by_b[b].beta_Bps, tp.DEFAULT_FIT):.2f}"
                          for b in (8, 50, 100) if b in by_b)
        print(f"{name:<6} {e_all:>15.1%} {e_loo:>16.1%}   {speed}")


if __name__ == "__main__":
    main()
