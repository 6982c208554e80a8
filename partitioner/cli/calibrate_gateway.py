"""`partition calibrate gateway STATS.csv --model NAME`: stage times and GPipe bias (docs/theory.md §7.2).

    partition calibrate gateway stats.csv --model legalone:8b --nodes node-01,node-02,node-03
    partition calibrate gateway stats.csv --model legalone:8b --stat p50 --M 1,8,100 --json
    partition calibrate gateway stats.csv --model legalone:8b --nodes node-01,node-02,node-03 \\
        --gpu node-01=rtx-5090-laptop,node-02=rtx-3090,node-03=rtx-3090 --template llama-3.1-8b \\
        --write-cluster cluster.yaml --write-profile profile.yaml

Reads either gateway CSV format (`partitioner.calibrate.gateway_io`), computes with the pure core
(`partitioner.calibrate.gateway`), renders a table or one JSON object, and optionally writes a
cluster and a `layers:` profile (`partitioner.calibrate.gateway_write`) that `partition plan`
takes directly. Bad input raises PartitionerError subclasses; the group turns them into one line.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

import click

from partitioner.errors import InputError

if TYPE_CHECKING:
    from partitioner.calibrate.gateway import GatewayCalibration
    from partitioner.calibrate.gateway_io import GatewayFile

__all__ = ["gateway"]


def _parse_gpus(text: str) -> dict[str, str]:
    """`node-01=rtx-5090-laptop,node-02=rtx-3090` -> {node: gpu id}; ids must be catalogue ids."""
    from partitioner.models import catalog

    out: dict[str, str] = {}
    from partitioner.cli._parse import parse_names

    for pair in parse_names("--gpu", text):
        node, sep, gpu = (p.strip() for p in pair.partition("="))
        if not sep or not node or not gpu:
            raise InputError(f"--gpu: expected NODE=GPU_ID pairs like node-02=rtx-3090 (got {pair!r})")
        if node in out:
            raise InputError(f"--gpu: node {node!r} is given twice (got {text!r})")
        if gpu not in catalog.ids("gpus"):
            raise InputError(f"--gpu {node}={gpu}: " + catalog.unknown_message("GPU id", gpu, catalog.ids("gpus")))
        out[node] = gpu
    return out


def _node_gpus(cal: GatewayCalibration, gpus: dict[str, str]) -> tuple[str, ...]:
    """The GPU id of each chosen node, in pipeline order; InputError naming a node without one."""
    for e in cal.nodes:
        if e.node not in gpus:
            raise InputError(
                f"--gpu: no GPU id for node {e.node!r}; give {e.node}=<gpu id> for every node "
                f"({', '.join(n.node for n in cal.nodes)}; ids: partition catalog gpus)"
            )
    return tuple(gpus[e.node] for e in cal.nodes)


def _load_template(spec: str) -> Any:
    """A roofline-form ModelSpec from a model.yaml path or a model preset id."""
    from pathlib import Path

    from partitioner.models import ModelSpec, catalog, load_model

    if Path(spec).is_file():
        model = load_model(spec)
    elif spec in catalog.ids("models"):
        model = ModelSpec.model_validate({"preset": spec})
    else:
        unknown = catalog.unknown_message("model id", spec, catalog.ids("models"))
        raise InputError(f"--template: no file {spec!r}, and {unknown}")
    if model.is_profile:
        raise InputError(
            f"--template {spec}: a layers: profile has no roofline costs to split tau with; "
            "give a preset id or a model.yaml with preset:, architecture: or hf_config:"
        )
    return model


def _command(args: dict[str, Any], cal: GatewayCalibration) -> str:
    """The canonical command line that reproduces a written file (for its header)."""
    words = ["partition", "calibrate", "gateway", args["stats_file"], "--model", cal.model,
             "--nodes", ",".join(e.node for e in cal.nodes), "--stat", cal.stat]
    if cal.d is not None:
        words += ["--d", ",".join(repr(x) for x in cal.d)]
    for opt in ("gpu", "template", "write_cluster", "write_profile"):
        if args[opt]:
            words += [f"--{opt.replace('_', '-')}", args[opt]]
    return shlex.join(words)


def _check_write_options(args: dict[str, Any]) -> None:
    """--write-* need --gpu (and --template for the profile); --template needs --write-profile."""
    from pathlib import Path

    wc, wp, tpl = args["write_cluster"], args["write_profile"], args["template"]
    if tpl and not wp:
        raise InputError(f"--template {tpl} is only used with --write-profile")
    if (wc or wp) and not args["gpu"]:
        raise InputError("--write-cluster and --write-profile need --gpu NODE=GPU_ID,... for every node")
    if wp and not tpl:
        raise InputError("--write-profile needs --template MODEL.yaml or a model preset id (partition catalog models)")
    if wc and wp and Path(wc).resolve() == Path(wp).resolve():
        raise InputError(f"--write-cluster and --write-profile name the same file {wc!r}")


def _write(args: dict[str, Any], src: GatewayFile, cal: GatewayCalibration, gpu_map: dict[str, str]) -> list[str]:
    """Build, validate (both before writing either) and write the requested files; their paths."""
    import yaml

    from partitioner.calibrate import CALIBRATE_MARKER
    from partitioner.calibrate.gateway_write import cluster_yaml, profile_yaml
    from partitioner.cli._output import check_writable, safe_write
    from partitioner.models import ClusterSpec, ModelSpec
    from partitioner.models.loader import Source, validate

    wc, wp, tpl = args["write_cluster"], args["write_profile"], args["template"]
    if not (wc or wp):
        return []
    gpus = _node_gpus(cal, gpu_map)
    header = [f"{CALIBRATE_MARKER} gateway; source {src.file} ({src.format}), model {cal.model}, "
              f"nodes {','.join(e.node for e in cal.nodes)} (pipeline order), stat {cal.stat}",
              f"command: {_command(args, cal)}"]
    texts: list[tuple[str, str, Any]] = []
    if wc:
        texts.append((wc, cluster_yaml(cal, gpus, header), ClusterSpec))
    if wp:
        texts.append((wp, profile_yaml(cal, _template_layers(tpl, gpus), tpl, header), ModelSpec))
    for path, text, schema in texts:
        validate(schema, yaml.safe_load(text), Source(path))
    inputs = [src.file] + ([tpl] if tpl else [])
    for path, _, _ in texts:  # vet every path first: a refusal leaves nothing half-written
        check_writable(path, inputs=inputs, marker=CALIBRATE_MARKER)
    return [str(safe_write(path, text, inputs=inputs, marker=CALIBRATE_MARKER)) for path, text, _ in texts]


def _template_layers(template: str, gpus: tuple[str, ...]) -> dict[str, Any]:
    from partitioner.costs.tables import roofline_layers
    from partitioner.models.cluster import resolve_gpu

    model = _load_template(template)
    return roofline_layers(model.arch, model.workload, [resolve_gpu(g) for g in gpus])


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.3g}x"


def _table(title: str, columns: tuple[str, ...], rows: list[list[str]]) -> Any:
    """A rich table; name columns left-aligned, numbers right-aligned."""
    from rich.table import Table

    table = Table(title=title)
    for col in columns:
        table.add_column(col, no_wrap=True, justify="left" if col in ("node", "gpu", "") else "right")
    for row in rows:
        table.add_row(*row)
    return table


def _render(cal: GatewayCalibration, src: GatewayFile, gpus: dict[str, str], written: list[str]) -> None:
    import sys

    from rich.console import Console

    from partitioner.calibrate.gateway import SMALL_SAMPLE
    from partitioner.cli._output import fmt_time

    console = Console(width=None if sys.stdout.isatty() else 120)
    stages = [[str(j), e.node, gpus.get(e.node, "-"), str(e.n), fmt_time(e.tau),
               ", ".join(m for m in ("bottleneck" if j == cal.bottleneck_index else "",
                                     f"small sample (n < {SMALL_SAMPLE})" if e.small_sample else "") if m)]
              for j, e in enumerate(cal.nodes)]
    console.print(f"{src.file}: {src.format} format, model {cal.model}, S = {cal.S} stage(s)", highlight=False)
    console.print(_table(f"Stage times tau = {cal.stat} service time per request (§7.2)",
                         ("stage", "node", "gpu", "n", "tau", ""), stages))
    queue = [[e.node, fmt_time(e.dur_min), fmt_time(e.dur_p50), _ratio(e.spread), fmt_time(e.tot_p50),
              _ratio(e.inflation), fmt_time(e.q_p50), f"{e.q_frac:.1%}"] for e in cal.nodes]
    console.print(_table("Queueing (§7.2, Cor 5): end-to-end median over the service floor",
                         ("node", "service min", "service p50", "p50/min", "total p50", "inflation total p50/min",
                          "queue p50", "queued"), queue))
    bias = [f"tau_max {fmt_time(cal.tau_max)} on {cal.bottleneck}",
            f"homogeneity bias sum(tau_max - tau) = {fmt_time(cal.homogeneity_bias)} (Cor 1)"]
    if cal.full_bias is not None:
        bias.append(f"full bias minus sum d = {fmt_time(cal.full_bias)} (Cor 3)")
    console.print("\n".join(bias), highlight=False, soft_wrap=True)
    points = [[str(p.M), fmt_time(p.T_async), fmt_time(p.T_gpipe), fmt_time(p.abs_error), f"{p.rel_error:+.1%}"]
              for p in cal.points]
    console.print(_table("GPipe estimate (S+M-1) tau_max against T_async (Thm 2)",
                         ("M", "T_async", "T_gpipe", "T_gpipe - T_async", "relative error"), points))
    for line in [*(f"warning: {w}" for w in cal.warnings), f"note: {cal.note}", *(f"wrote {p}" for p in written)]:
        console.print(line, highlight=False, soft_wrap=True)


@click.command("gateway")
@click.argument("stats_file", metavar="STATS.csv", type=click.Path(dir_okay=False))
@click.option("--model", required=True, metavar="NAME", help="Model name as in the CSV's model column.")
@click.option("--nodes", default=None, metavar="N1,N2,...",
              help="Pipeline nodes in stage order; no figure depends on the order "
                   "[default: every node that served the model, in file order].")
@click.option("--stat", default="min", show_default=True, metavar="min|p5|p50|mean",
              help="Service-time statistic used as tau (min: a lower bound, as §7.2).")
@click.option("--M", "M", default="1,8,100", show_default=True, metavar="M1,M2,...",
              help="Micro-batch counts for the GPipe error.")
@click.option("--d", "d", default=None, metavar="D0,D1,...",
              help="Link latencies d_s (S-1 values, seconds) for the full bias (Cor 3).")
@click.option("--gpu", default=None, metavar="NODE=GPU_ID,...",
              help="GPU id of each node, e.g. node-01=rtx-5090-laptop,node-02=rtx-3090.")
@click.option("--write-cluster", "write_cluster", default=None, metavar="PATH",
              help="Write a cluster.yaml with one device per node (needs --gpu).")
@click.option("--write-profile", "write_profile", default=None, metavar="PATH",
              help="Write a layers: model.yaml that partition plan takes (needs --gpu and --template).")
@click.option("--template", default=None, metavar="MODEL.yaml|ID",
              help="Roofline model (file or preset id) whose per-layer shares split tau.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the tables.")
def gateway(*, stats_file: str, model: str, nodes: str | None, stat: str, M: str, d: str | None, gpu: str | None,
            write_cluster: str | None, write_profile: str | None, template: str | None, as_json: bool) -> None:
    """Stage times tau, GPipe bias and queueing from gateway service-time statistics (docs/theory.md)."""
    from partitioner.calibrate.gateway import calibrate_gateway
    from partitioner.calibrate.gateway_io import read_gateway
    from partitioner.cli._parse import parse_floats, parse_ints, parse_names
    from partitioner.jsonio import dumps

    args = {"stats_file": stats_file, "gpu": gpu, "template": template, "write_cluster": write_cluster,
                "write_profile": write_profile}
    Ms = parse_ints("--M", M, minimum=1)
    d_v = None if d is None else parse_floats("--d", d)
    node_list = None if nodes is None else parse_names("--nodes", nodes)
    gpus = {} if gpu is None else _parse_gpus(gpu)
    _check_write_options(args)
    src = read_gateway(stats_file)
    cal = calibrate_gateway(src.stats, model, node_list, stat, Ms=Ms, d=d_v, source=src.file)
    written = _write(args, src, cal, gpus)
    if as_json:
        payload = {"file": src.file, "format": src.format, **cal.to_dict(), "written": written}
        for entry in payload["nodes"]:
            entry["gpu"] = gpus.get(entry["node"])
        click.echo(dumps(payload, indent=None))
    else:
        _render(cal, src, gpus, written)
