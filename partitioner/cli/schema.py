"""`partition schema model|cluster|plan|report`: the JSON Schema of model.yaml, cluster.yaml, plan.json or the
report JSON (from pydantic)."""

from __future__ import annotations

from typing import Any

import click

__all__ = ["schema", "json_schema"]


def json_schema(kind: str) -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of a model.yaml ("model"), cluster.yaml ("cluster") or plan.json ("plan")."""
    if kind == "plan":
        from partitioner.export.load import plan_json_schema

        return plan_json_schema()
    if kind == "report":
        from partitioner.report.schema import report_json_schema

        return report_json_schema()
    from pydantic import BaseModel

    from partitioner.models import ClusterSpec, ModelSpec

    classes: dict[str, type[BaseModel]] = {"model": ModelSpec, "cluster": ClusterSpec}
    cls = classes[kind]
    body = cls.model_json_schema(by_alias=True)
    head = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://partitioner.invalid/schema/{kind}.json",
        "title": f"partitioner {kind}.yaml",
    }
    return {**head, **{k: v for k, v in body.items() if k != "title"}}


@click.command("schema")
@click.argument("kind", type=click.Choice(["model", "cluster", "plan", "report"]))
def schema(kind: str) -> None:
    """Print the JSON Schema of model or cluster files (editor validation), of plan.json or of the
    report JSON (`partition report --json`)."""
    import json

    click.echo(json.dumps(json_schema(kind), indent=2))
