"""Shared pydantic building blocks for the user-file schemas.

Numbers are finite (no NaN or inf), signed as the physics needs, and usable: not subnormal and
at most partitioner.limits.MAX_MAGNITUDE (1e18) in size, integers at most 2**53 (exact in a
float), so no product of user numbers overflows. Every model is frozen and rejects unknown
fields, so a typo is an error rather than a silently ignored key.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema, field_validator

from partitioner.limits import MAX_MAGNITUDE, magnitude_problem
from partitioner.safetext import control_problem

__all__ = [
    "EngineField",
    "Frozen",
    "Positive",
    "NonNegative",
    "Fraction",
    "PositiveInt",
    "NonNegativeInt",
    "Name",
    "LocatedValueError",
]


class Frozen(BaseModel):
    """Immutable, strict-about-keys base of every schema."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    @field_validator("*", mode="after")
    @classmethod
    def _no_control_characters(cls, value: Any) -> Any:
        """Every string a user wrote (names, hosts, paths, mapping keys) is data: no control
        characters (partitioner.safetext), so none can reach a terminal or a script comment."""
        _check_strings(value, ())
        return value


def _check_strings(value: Any, loc: tuple[str | int, ...]) -> None:
    if isinstance(value, str):
        problem = control_problem(value)
        if problem:
            raise LocatedValueError(loc, problem) if loc else ValueError(problem)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_strings(key, (*loc, str(key)) if not isinstance(key, str) or not control_problem(key) else loc)
            _check_strings(item, (*loc, key))
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_strings(item, (*loc, i))


#: Largest integer a field takes: exact in a float, so sums and products stay exact.
MAX_INT = 2**53


def _usable(value: float) -> float:
    problem = magnitude_problem(value)
    if problem:
        raise ValueError(f"{problem} (got {value!r})")
    return value


Positive = Annotated[float, Field(gt=0, le=MAX_MAGNITUDE, allow_inf_nan=False), AfterValidator(_usable)]
NonNegative = Annotated[float, Field(ge=0, le=MAX_MAGNITUDE, allow_inf_nan=False), AfterValidator(_usable)]
Fraction = Annotated[float, Field(gt=0, le=1, allow_inf_nan=False), AfterValidator(_usable)]
PositiveInt = Annotated[int, Field(gt=0, le=MAX_INT)]
NonNegativeInt = Annotated[int, Field(ge=0, le=MAX_INT)]
Name = Annotated[str, Field(min_length=1)]
#: `engine:` as a preset id or a mapping of the engine's flags ({name: id, <flag>: value}); a
#: validator turns the mapping into the id and `engine_settings` (models/engines.py split_engine),
#: so the field holds the id, and the JSON Schema admits both forms.
EngineField = Annotated[str | None, WithJsonSchema(
    {"anyOf": [{"type": "string"}, {"type": "object", "required": ["name"]}, {"type": "null"}]})]


class LocatedValueError(ValueError):
    """A ValueError raised inside a validator that knows which sub-path is at fault.

    pydantic reports a model validator's error at the model's own location; the loader appends
    `loc` (e.g. ``("devices", 2, "name")``) so the message points at the offending key and line.
    """

    def __init__(self, loc: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.loc = loc
