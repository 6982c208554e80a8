"""Read a plan JSON file (`Plan.to_dict()`, format "partitioner.plan/1") for the exporters.

`plan_json_schema()` publishes the same pydantic model as JSON Schema (`partition schema
plan`); a document whose `format` is not exactly `PLAN_FORMAT` is refused (one line naming
the file and the value), since a future layout must not be read as this one.

Pydantic validates the document at this edge; any problem becomes a `ConfigError` naming
the file and the field (`plan.json: stages[2].end: ...`). The structural rules of a plan
(docs/algorithms.md §1) are checked too: stages contiguous from 0 to num_layers, each non-empty,
decoder layers within the stage, distinct devices.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from partitioner.errors import ConfigError
from partitioner.export.view import HostView, PlanView, StageView

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["load_plan", "parse_plan", "plan_json_schema"]


def _text(value: str) -> str:
    """A name from plan.json is data (partitioner.safetext): no control characters."""
    from partitioner.safetext import control_problem

    problem = control_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def _host(value: str | None) -> str | None:
    """A host address as engines take it (export.shell.is_host_name): `1.2.3.4;id` is refused."""
    from partitioner.export.shell import is_host_name

    if value is not None and not is_host_name(value):
        _text(value)
        raise ValueError(f"must be an IP address or host name (letters, digits, '.-:[]'; got {value!r})")
    return value


def _models() -> tuple[type[BaseModel], type[BaseModel]]:
    from typing import Annotated

    from pydantic import AfterValidator, BaseModel, ConfigDict, Field

    Text = Annotated[str, AfterValidator(_text)]
    Name = Annotated[str, Field(min_length=1), AfterValidator(_text)]
    Host = Annotated[str | None, AfterValidator(_host)]

    class StageFile(BaseModel):
        model_config = ConfigDict(extra="ignore", frozen=True, strict=True)
        device: Name
        gpu: Text
        node: Name
        start: int = Field(ge=0)
        end: int = Field(ge=1)
        decoder_layers: int = Field(ge=0)
        embed: bool = False
        head: bool = False
        ordinal: int | None = Field(default=None, ge=0)
        devices: list[Name] | None = None  # a tensor-parallel group's members (`device` is the first)
        tp: int = Field(default=1, ge=1)

    class HostFile(BaseModel):
        model_config = ConfigDict(extra="ignore", frozen=True, strict=True)
        node: Name
        address: Host = None
        address_assumed: bool = True
        devices: list[Name] = []

    class PlanFile(BaseModel):
        """A plan as `partition plan --out` writes it (SI units; see `units`)."""

        model_config = ConfigDict(extra="ignore", frozen=True, strict=True)
        format: str  # required: a document without it is not known to be a plan
        model: Text = ""
        model_id: Text | None = None  # engine-usable id or path (HF repo id, hf_config's directory)
        num_layers: int = Field(ge=1)
        num_decoder_layers: int | None = Field(default=None, ge=0)
        workload: dict[str, Any] | None = None  # model.yaml workload (dtypes, context, batch)
        serving: dict[str, Any] | None = None  # batch, in_flight, max_sequences, context, ...
        hosts: list[HostFile] = []
        units: dict[str, str] = {}
        tool_version: str | None = None
        input_hash: str | None = None
        feasible: bool = True
        reason: str = ""
        stages: list[StageFile] = Field(min_length=1)

    return PlanFile, StageFile


def _location(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(document)"


def _check_structure(stages: list[StageView], num_layers: int, file: str | None) -> None:
    prev_end = 0
    seen: set[str] = set()
    for s, st in enumerate(stages):
        if st.start != prev_end:
            raise ConfigError(f"must be {prev_end} (stages are contiguous; got {st.start})", file=file, location=f"stages[{s}].start")
        if st.end <= st.start:
            raise ConfigError(f"must be > start {st.start} (got {st.end})", file=file, location=f"stages[{s}].end")
        if st.decoder_layers > st.end - st.start:
            raise ConfigError(
                f"must be <= the stage's {st.end - st.start} layers (got {st.decoder_layers})",
                file=file, location=f"stages[{s}].decoder_layers",
            )
        for dev in st.group:
            if dev in seen:
                raise ConfigError(f"device {dev!r} appears in two stages", file=file, location=f"stages[{s}].device")
            seen.add(dev)
        prev_end = st.end
    if prev_end != num_layers:
        raise ConfigError(f"the last stage ends at {prev_end} but num_layers is {num_layers}", file=file, location="stages")


def parse_plan(data: Any, file: str | None = None) -> PlanView:
    """Validate a plan dict (as `Plan.to_dict()` writes it) into a `PlanView`."""
    from pydantic import ValidationError

    PlanFile, _ = _models()
    if not isinstance(data, Mapping):
        raise ConfigError(f"a plan must be a JSON object (got {type(data).__name__})", file=file)
    try:
        doc: Any = PlanFile.model_validate(dict(data))
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(err["msg"].removeprefix("Value error, "), file=file, location=_location(tuple(err["loc"]))) from None
    from partitioner.result import PLAN_FORMAT

    if doc.format != PLAN_FORMAT:
        what = "unsupported plan format version" if doc.format.startswith("partitioner.plan/") else "not a partitioner plan"
        raise ConfigError(f"{what} {doc.format!r} (this version reads {PLAN_FORMAT!r})", file=file, location="format")
    stages = [_stage(st, s, file) for s, st in enumerate(doc.stages)]
    _check_structure(stages, doc.num_layers, file)
    return PlanView(
        stages=tuple(stages),
        num_layers=doc.num_layers,
        model=doc.model,
        feasible=doc.feasible,
        reason=doc.reason,
        document=dict(data),
        model_id=doc.model_id,
        workload=doc.workload,
        serving=doc.serving,
        hosts=tuple(HostView(h.node, h.address, tuple(h.devices)) for h in doc.hosts),
    )


def _stage(st: Any, s: int, file: str | None) -> StageView:
    """A stage of plan.json: `device` alone (tp 1), or `devices` (its TP group, in the cluster's
    order) with `tp` = len(devices); `device` then names the group (its members joined by "+")."""
    fields = st.model_dump()
    members = tuple(fields.pop("devices") or ())
    if members:
        if len(members) != st.tp:
            raise ConfigError(f"must list tp = {st.tp} devices (got {len(members)})", file=file, location=f"stages[{s}].devices")
        if len(set(members)) != len(members):
            raise ConfigError("lists a device twice", file=file, location=f"stages[{s}].devices")
    elif st.tp != 1:
        raise ConfigError(f"tp {st.tp} needs the group's devices (stages[{s}].devices)", file=file, location=f"stages[{s}].tp")
    return StageView(**fields, members=members)


def plan_json_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of plan.json, from the model `parse_plan` validates with."""
    PlanFile, _ = _models()
    body = PlanFile.model_json_schema()
    head = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://partitioner.invalid/schema/plan.json",
        "title": "partitioner plan.json",
    }
    return {**head, **{k: v for k, v in body.items() if k != "title"}}


def _read_json(p: Path) -> Any:
    from partitioner.userfiles import read_user_text

    text = read_user_text(p)  # regular files only, bounded size, one-line error for binary/UTF-16
    return _parse_json(text, str(p))


def _parse_json(text: str, file: str) -> Any:
    """JSON with the user-file limits (partitioner.jsonio.loads_user: nesting, integer digits)."""
    from partitioner.jsonio import loads_user

    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"invalid JSON: {exc.msg}", file=file, line=exc.lineno) from None
    except (ValueError, RecursionError):
        return loads_user(text, file)  # names the limit the document broke


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def load_plan(path: str | Path) -> PlanView:
    """Read and validate plan.json; malformed JSON or fields -> ConfigError naming the file."""
    from partitioner.userfiles import read_user_text

    p = Path(path)
    text = read_user_text(p)  # regular files only, bounded size, one-line error for binary/UTF-16
    return parse_plan(_parse_json(text, str(p)), file=str(p))
