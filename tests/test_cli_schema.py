"""`partition schema model|cluster`: JSON Schema that validates every shipped example."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

from partitioner.cli import main

EX = Path(__file__).resolve().parent.parent / "examples"


def _schema(kind: str) -> dict:
    result = CliRunner().invoke(main, ["schema", kind])
    assert result.exit_code == 0, result.output
    schema = json.loads(result.output)
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


@pytest.mark.parametrize("kind, folder", [("model", "models"), ("cluster", "clusters")])
def test_schema_validates_every_example(kind, folder):
    schema = _schema(kind)
    files = sorted((EX / folder).glob("*.yaml"))
    assert files
    for path in files:
        jsonschema.validate(yaml.safe_load(path.read_text()), schema)


@pytest.mark.parametrize("kind, doc", [
    ("cluster", {"devices": [{"name": "a", "gpu": "t4", "memroy_gb": 3}]}),
    ("cluster", {"devices": [{"name": "a", "gpu": "t4"}], "order": "random"}),
    ("model", {"preset": "llama-3.1-8b", "workload": {"batch": 0}}),
    ("model", {"preset": "llama-3.1-8b", "workload": {"phsae": "decode"}}),
])
def test_schema_rejects_typos_and_bad_values(kind, doc):
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, _schema(kind))


def test_schema_unknown_kind():
    assert CliRunner().invoke(main, ["schema", "nope"]).exit_code == 2  # model, cluster and plan exist
