"""`partition export plan.json --to TARGET`: print a plan in the format an engine takes.

The engine's text goes to stdout (nothing else), warnings and what the target cannot
express to stderr. `--host NODE` prints only that host's script(s) (sourceable);
`--write-scripts DIR` writes one script per host in run order. PLAN.json may be a deployment
(several replicas): one launch per replica, and the router weights file beside the scripts. `--strict` refuses with
exit code 3 (infeasible plan), 5 (the target cannot express it) or 6 (a GPU below the
engine's minimum compute capability).
"""

from __future__ import annotations

import click

from partitioner.registry import EXPORT_TARGETS

__all__ = ["export", "parse_device_ids", "parse_endpoints"]


def _pairs(values: tuple[str, ...], option: str) -> dict[str, str]:
    from partitioner.errors import InputError

    out = {}
    for v in values:
        name, sep, value = v.partition("=")
        if not sep or not name or not value:
            raise InputError(f"{option} takes NAME=VALUE (got {v!r})")
        out[name] = value
    return out


def parse_device_ids(values: tuple[str, ...]) -> dict[str, int]:
    """--device-id NAME=ORDINAL: ORDINAL an integer >= 0."""
    from partitioner.errors import InputError

    out = {}
    for name, value in _pairs(values, "--device-id").items():
        if not value.isdigit():
            raise InputError(f"--device-id ORDINAL must be an integer >= 0 (got {name}={value})")
        out[name] = int(value)
    return out


def parse_endpoints(values: tuple[str, ...]) -> dict[str, str]:
    """--rpc-endpoint NAME=HOST:PORT: HOST a host name or IP, PORT in 1..65535."""
    from partitioner.errors import InputError
    from partitioner.export.shell import is_host_name

    out = {}
    for name, value in _pairs(values, "--rpc-endpoint").items():
        host, sep, port = value.rpartition(":")
        if not sep or not host:
            raise InputError(f"--rpc-endpoint takes NAME=HOST:PORT (got {name}={value}: no port)")
        if not is_host_name(host):
            raise InputError(f"--rpc-endpoint HOST must be a host name or IP address (got {host!r})")
        if not port.isdigit() or not 1 <= int(port) <= 65535:
            raise InputError(f"--rpc-endpoint PORT must be an integer in 1..65535 (got {port!r})")
        out[name] = f"{host}:{int(port)}"
    return out


@click.command("export")
@click.argument("plan_file", metavar="PLAN.json", type=click.Path(dir_okay=False))
@click.option("--to", "target", required=True, type=click.Choice(list(EXPORT_TARGETS)), help="Engine to export for.")
@click.option("--device-id", multiple=True, metavar="NAME=ORDINAL", help="CUDA ordinal of a device (repeatable).")
@click.option("--rpc-endpoint", multiple=True, metavar="NAME=HOST:PORT", help="llama.cpp rpc-server of a remote device.")
@click.option("--host", "host", default=None, metavar="NODE", help="Print only the script(s) NODE runs.")
@click.option("--write-scripts", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Write one script per host, in run order, into this directory.")
@click.option("--strict", is_flag=True, help="Fail (exit 3/5/6) if the plan is infeasible, not expressible or uses an unsupported GPU.")
@click.option("--engine-version", default=None, metavar="VERSION",
              help="Engine release to write for (default: the newest with known rules; presets/engines.yaml versions).")
def export(
    plan_file: str, target: str, device_id: tuple[str, ...], rpc_endpoint: tuple[str, ...],
    host: str | None, out_dir: str | None, strict: bool, engine_version: str | None,
) -> None:
    """Print PLAN.json (written by `partition plan --out`) as TARGET takes it."""
    from partitioner.export import render
    from partitioner.export.replicas import load_export_input

    result = render(load_export_input(plan_file), target, ordinals=parse_device_ids(device_id), endpoints=parse_endpoints(rpc_endpoint),
                    engine_version=engine_version)
    emit(result, strict=strict, host=host, out_dir=out_dir, inputs=(plan_file,))


def emit(result: object, *, strict: bool, host: str | None = None, out_dir: str | None = None, inputs: tuple[str, ...] = ()) -> None:
    """Print an `Export` (or the chosen host's scripts), write scripts, report warnings; --strict refuses."""
    from pathlib import Path

    from partitioner.errors import InputError
    from partitioner.export import Export

    assert isinstance(result, Export)
    if strict:
        result.check_strict()
    scripts = result.scripts
    if host is not None:
        hosts = [s.host for s in result.steps]
        if host not in hosts:
            raise InputError(f"--host {host!r} runs nothing in this plan (hosts: {', '.join(dict.fromkeys(hosts)) or 'none'})")
        groups = [text for (_, text), h in zip(scripts, _group_hosts(result), strict=True) if h == host]
        click.echo("".join(groups), nl=False)
    else:
        click.echo(result.text, nl=not result.text.endswith("\n"))
    if out_dir is not None:
        from partitioner.cli._output import check_writable, safe_write
        from partitioner.export.shell import MARKER

        if not scripts:
            raise InputError(f"--write-scripts: {result.target} prints a snippet, not launch scripts")
        from partitioner.export.replicas import ROUTER_FORMAT

        Path(out_dir).mkdir(parents=True, exist_ok=True)
        paths = [check_writable(Path(out_dir) / name, inputs=inputs, marker=MARKER) for name, _ in scripts]
        extra = [check_writable(Path(out_dir) / name, inputs=inputs, marker=ROUTER_FORMAT) for name, _ in result.files]
        for path, (_, text) in zip(paths, scripts, strict=True):  # staged: every file or none (safe_write)
            safe_write(path, text, inputs=inputs, marker=MARKER, mode=0o755)
        for path, (_, text) in zip(extra, result.files, strict=True):
            safe_write(path, text, inputs=inputs, marker=ROUTER_FORMAT)
        more = f" and {', '.join(n for n, _ in result.files)}" if result.files else ""
        click.echo(f"wrote {len(paths)} scripts{more} to {out_dir}: run them in name order, each on its host", err=True)
    for w in result.warnings:
        click.echo(f"warning: {w}", err=True)
    for kind, message in result.problems():
        click.echo(f"{kind.replace('_', ' ')}: {message}", err=True)


def _group_hosts(result: object) -> list[str]:
    """The host of each script (`shell.scripts` groups consecutive steps by host and replica)."""
    keys: list[tuple[str, str]] = []
    for step in getattr(result, "steps", ()):
        if not keys or keys[-1] != (step.host, step.tag):
            keys.append((step.host, step.tag))
    return [h for h, _ in keys]
