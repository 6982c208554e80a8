"""`partition calibrate bench RESULT.json --plan PLAN.json --model MODEL.yaml --cluster CLUSTER.yaml`.

Reads a `vllm bench serve --save-result` JSON (or `llama-bench -o json`), prints measured against
predicted tokens/s, TPOT and TTFT of the plan it measured (the command `partition plan` prints
under "measure it"), and with `--write-cluster` writes cluster.yaml with the plan's GPU types
scaled by r = measured / predicted TPOT (partitioner.calibrate.bench), through the same safe
writer as `calibrate profile`, so that the next plan predicts the measured TPOT.
"""

from __future__ import annotations

from typing import Any

import click

__all__ = ["bench"]


@click.command("bench")
@click.argument("result_file", metavar="RESULT.json", type=click.Path(dir_okay=False))
@click.option("--plan", "plan_file", required=True, type=click.Path(dir_okay=False),
              help="The plan JSON (`partition plan --out`) the benchmark measured.")
@click.option("--model", "model_file", required=True, type=click.Path(dir_okay=False), help="Its model.yaml.")
@click.option("--cluster", "cluster_file", required=True, type=click.Path(dir_okay=False), help="Its cluster.yaml.")
@click.option("--replica", type=click.IntRange(min=0), default=0, show_default=True,
              help="For a deployment JSON: the replica the benchmark measured.")
@click.option("--write-cluster", "write_cluster", type=click.Path(dir_okay=False), default=None,
              help="Write cluster.yaml with the correction here (the next plan uses it).")
def bench(*, result_file: str, plan_file: str, model_file: str, cluster_file: str, replica: int,
          write_cluster: str | None) -> None:
    """Measured vs predicted tokens/s, TPOT and TTFT; optionally write the corrected cluster.yaml."""
    from partitioner.calibrate.bench import read_bench, time_scale
    from partitioner.cli._output import fmt_time
    from partitioner.jsonio import loads_user
    from partitioner.userfiles import read_user_text

    measured = read_bench(loads_user(read_user_text(result_file), result_file), result_file)
    plan = _plan_doc(loads_user(read_user_text(plan_file), plan_file), plan_file, replica)
    sv = plan.get("serving") or {}
    tpot, tps, ttft = sv.get("tpot_s"), sv.get("tokens_per_s"), sv.get("ttft_s")
    r = time_scale(measured, float(tpot or 0.0))
    click.echo(f"{measured.source} vs the plan ({plan_file}):")
    click.echo(f"  tokens/s  measured {measured.tokens_per_s:,.4g}   predicted {float(tps or 0):,.4g}")
    click.echo(f"  TPOT      measured {fmt_time(measured.tpot_s)}   predicted {fmt_time(float(tpot or 0.0))}   ×{r:.3g}")
    if measured.ttft_s is not None and ttft:
        click.echo(f"  TTFT      measured {fmt_time(measured.ttft_s)}   predicted {fmt_time(float(ttft))}")
    if write_cluster:
        updated = _write(write_cluster, (result_file, plan_file, model_file, cluster_file), plan, r)
        click.echo(f"wrote {write_cluster}: {', '.join(updated)} scaled by ×{r:.3g} "
                   "(eta_compute, eta_memory ÷ r; overheads × r)")


def _plan_doc(doc: Any, file: str, replica: int) -> dict[str, Any]:
    from partitioner.errors import InputError

    if isinstance(doc, dict) and isinstance(doc.get("replicas"), list):
        if replica >= len(doc["replicas"]):
            raise InputError(f"{file}: --replica {replica} but the deployment has {len(doc['replicas'])} replicas")
        doc = doc["replicas"][replica]
    if not isinstance(doc, dict) or not isinstance(doc.get("stages"), list):
        raise InputError(f"{file}: not a plan JSON (`partition plan --out`): no stages")
    return doc


def _write(path: str, inputs: tuple[str, ...], plan: dict[str, Any], r: float) -> tuple[str, ...]:
    import yaml

    from partitioner.api import load_inputs
    from partitioner.calibrate import CALIBRATE_MARKER
    from partitioner.calibrate.bench import corrected_cluster
    from partitioner.cli._output import safe_write
    from partitioner.costs.roofline import Work
    from partitioner.costs.tables import select_engine
    from partitioner.models import ClusterSpec
    from partitioner.models.loader import Source, read_yaml, validate

    model_file, cluster_file = inputs[2], inputs[3]
    model, cluster = load_inputs(model_file, cluster_file)
    bits = 8.0 * Work.of(model.workload).b_w
    engine = select_engine(model, cluster, None)
    used = {str(m) for st in plan["stages"] for m in (st.get("members") or [st.get("device")])}
    devices = [d for d in cluster.devices if d.name in used]
    factors = {d.gpu_id: d.spec.factors(bits, engine) for d in devices}
    data, _ = read_yaml(cluster_file)
    new, updated = corrected_cluster(data, factors, {d.name: d.gpu_id for d in cluster.devices}, r)
    validate(ClusterSpec, new, Source(path))
    head = "".join(f"# {line}\n" for line in [
        f"{CALIBRATE_MARKER} bench",
        f"{cluster_file} with the plan's GPU types scaled by x{r:.6g} = measured / predicted TPOT ({inputs[0]});",
        "its comments are not kept"])
    safe_write(path, head + yaml.safe_dump(new, sort_keys=False), inputs=list(inputs), marker=CALIBRATE_MARKER)
    return updated
