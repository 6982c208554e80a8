"""Shared pydantic building blocks for the user-file schemas (issue 3).

Numbers are finite (no NaN or inf) and signed as the physics needs; every model is frozen and
rejects unknown fields, so a typo is an error rather than a silently ignored key.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
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


Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Fraction = Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)]
PositiveInt = Annotated[int, Field(gt=0)]
NonNegativeInt = Annotated[int, Field(ge=0)]
Name = Annotated[str, Field(min_length=1)]


class LocatedValueError(ValueError):
    """A ValueError raised inside a validator that knows which sub-path is at fault.

    pydantic reports a model validator's error at the model's own location; the loader appends
    `loc` (e.g. ``("devices", 2, "name")``) so the message points at the offending key and line.
    """

    def __init__(self, loc: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.loc = loc
