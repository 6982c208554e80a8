"""`partition calibrate ...`: turn measurements into planning numbers (docs/theory.md §3, docs/costmodel.md §1).

A lazy sub-group like the top-level one: each subcommand lives in `partitioner.cli.calibrate_<name>`
and is imported only when it runs, so `partition calibrate --help` stays instant.
"""

from __future__ import annotations

from typing import ClassVar

import click

from partitioner.cli import LazyCommands

__all__ = ["calibrate", "SUBCOMMANDS"]

SUBCOMMANDS: dict[str, str] = {
    "gateway": "Stage times, GPipe bias and queueing from gateway service-time statistics.",
    "overlap": "Slope and overlap ratio rho from measured makespans at several M.",
    "profile": "Fit cost-model efficiencies to per-layer timings, or write a layers: profile.",
    "measure": "Time each layer of a PyTorch model on this machine and write a timings CSV.",
    "engine-log": "Non-KV memory from a vLLM / SGLang start-up log, written into a cluster.yaml.",
    "bench": "Measured vs predicted tokens/s, TPOT, TTFT from a vLLM/llama.cpp benchmark; correct cluster.yaml.",
}


class _LazySubgroup(LazyCommands):
    table: ClassVar[dict[str, tuple[str, str]]] = {name: (f"partitioner.cli.calibrate_{name.replace('-', '_')}", help_) for name, help_ in SUBCOMMANDS.items()}


@click.group("calibrate", cls=_LazySubgroup)
def calibrate() -> None:
    """Turn measurements into the numbers the planner uses (docs/theory.md §3 overlap, docs/costmodel.md)."""
