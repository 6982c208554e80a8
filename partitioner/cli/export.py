"""`partition export plan.json --to TARGET`: print a plan in the format an engine takes.

The engine's text goes to stdout (nothing else), warnings and what the target cannot
express to stderr. `--strict` turns "cannot express" into an error (exit code 2).
"""

from __future__ import annotations

import click

__all__ = ["export"]

_TARGETS = ("vllm", "sglang", "trtllm", "llamacpp", "deepspeed", "torchgpipe", "megatron", "json")


def _pairs(values: tuple[str, ...], option: str) -> dict[str, str]:
    from partitioner.errors import InputError

    out = {}
    for v in values:
        name, sep, value = v.partition("=")
        if not sep or not name or not value:
            raise InputError(f"{option} takes NAME=VALUE (got {v!r})")
        out[name] = value
    return out


@click.command("export")
@click.argument("plan_file", metavar="PLAN.json", type=click.Path(dir_okay=False))
@click.option("--to", "target", required=True, type=click.Choice(_TARGETS), help="Engine to export for.")
@click.option("--device-id", multiple=True, metavar="NAME=ORDINAL", help="CUDA ordinal of a device (repeatable).")
@click.option("--rpc-endpoint", multiple=True, metavar="NAME=HOST:PORT", help="llama.cpp rpc-server of a remote device.")
@click.option("--strict", is_flag=True, help="Fail (exit 2) if the target cannot express the plan.")
def export(plan_file: str, target: str, device_id: tuple[str, ...], rpc_endpoint: tuple[str, ...], strict: bool) -> None:
    """Print PLAN.json (written by `partition plan --out`) as TARGET takes it."""
    from partitioner.errors import InputError
    from partitioner.export import render
    from partitioner.export.load import load_plan

    ids = _pairs(device_id, "--device-id")
    try:
        ordinals = {k: int(v) for k, v in ids.items()}
    except ValueError:
        raise InputError(f"--device-id ORDINAL must be an integer (got {sorted(ids.values())})") from None
    result = render(load_plan(plan_file), target, ordinals=ordinals, endpoints=_pairs(rpc_endpoint, "--rpc-endpoint"))
    if strict and result.cannot_express:
        raise InputError(f"{target} cannot express this plan: " + "; ".join(result.cannot_express))
    click.echo(result.text, nl=False)
    for w in result.warnings:
        click.echo(f"warning: {w}", err=True)
    for c in result.cannot_express:
        click.echo(f"cannot express: {c}", err=True)
