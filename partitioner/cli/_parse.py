"""Option values of the CLI commands: comma lists of numbers, names and M:T pairs.

Every failure is an InputError that names the option and quotes the value, so the group's
boundary prints it as one line (exit 2). Numbers are bounded as in partitioner.limits (finite,
not subnormal, at most 1e18 in size), integers at most MAX_INT_DIGITS digits.
"""

from __future__ import annotations

import math
from typing import Any

import click

from partitioner.errors import InputError
from partitioner.limits import MAX_MAGNITUDE

__all__ = ["PresetName", "Seconds", "parse_floats", "parse_float", "parse_int", "parse_ints", "parse_names", "parse_pairs"]


def parse_floats(option: str, text: str) -> list[float]:
    """Comma-separated numbers; an empty string is an empty list (S = 1 has no links)."""
    if not text.strip():
        return []
    out = []
    for token in text.split(","):
        try:
            value = float(token)
        except ValueError:
            raise InputError(f"{option}: cannot parse {token.strip()!r} as a number (got {text!r})") from None
        out.append(_bounded(option, value, token.strip()))
    return out


def _bounded(option: str, value: float, raw: str) -> float:
    from partitioner.limits import magnitude_problem

    problem = magnitude_problem(value) if math.isfinite(value) else None  # nan/inf: the consumer names them
    if problem:
        raise InputError(f"{option}: {raw!r} {problem}")
    return value


def parse_float(option: str, text: str) -> float:
    """One number."""
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{option}: cannot parse {text!r} as a number") from None
    return _bounded(option, value, text.strip())


def parse_int(option: str, text: str) -> int:
    """One integer (the caller checks its range)."""
    from partitioner.limits import exceeded, limit

    if len(text.strip().lstrip("+-")) > limit("MAX_INT_DIGITS"):
        raise InputError(f"{option}: " + exceeded("MAX_INT_DIGITS", f"an integer of {len(text.strip())} digits"))
    try:
        return int(text)
    except ValueError:
        raise InputError(f"{option} must be an integer >= 1 (got {text!r})") from None


def parse_ints(option: str, text: str, minimum: int | None = None) -> list[int]:
    """Comma-separated integers, each >= `minimum` when given."""
    out = [parse_int(option, token.strip()) for token in text.split(",")]
    bad = [v for v in out if minimum is not None and v < minimum]
    if bad:
        raise InputError(f"{option} must be integers >= {minimum} (got {bad[0]} in {text!r})")
    return out


def parse_names(option: str, text: str) -> list[str]:
    """Comma-separated names; an empty one is an error."""
    names = [t.strip() for t in text.split(",")]
    if any(not n for n in names):
        raise InputError(f"{option}: empty name in {text!r}; give comma-separated names like node-01,node-02")
    return names


def parse_pairs(option: str, text: str) -> list[tuple[int, float]]:
    """`M:T` or `M1:T1,M2:T2`: micro-batch counts M (integers >= 1) and makespans T (finite, > 0)."""
    out = []
    for pair in text.split(","):
        m_text, sep, t_text = (p.strip() for p in pair.partition(":"))
        if not sep or not m_text or not t_text:
            raise InputError(f"{option}: expected M:T pairs like 4:27.3 (got {pair.strip()!r})")
        M = parse_int(f"{option} M", m_text)
        if M < 1:
            raise InputError(f"{option} M must be an integer >= 1 (got {m_text!r} in {pair.strip()!r})")
        try:
            T = float(t_text)
        except ValueError:
            raise InputError(f"{option} T: cannot parse {t_text!r} as a number") from None
        if not math.isfinite(T) or T <= 0 or T > MAX_MAGNITUDE:
            raise InputError(
                f"{option} T must be a finite number of seconds > 0 and <= {MAX_MAGNITUDE:g} (got {t_text!r} in {pair.strip()!r})"
            )
        out.append((M, T))
    return out


class PresetName(click.ParamType):
    """A shipped preset id of `kind` (models/presets/<kind>.yaml), checked when the option is used.

    Facts are data: the valid names are the catalogue's ids, read on first use rather than at
    import, so `--help` does not load yaml; an unknown name lists the valid ones."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.name = kind.rstrip("s")

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return f"[{self.name.upper()}]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from partitioner.models import catalog

        valid = catalog.ids(self.kind)
        if value not in valid:
            self.fail(f"{value!r} is not a shipped {self.name} preset; valid: {', '.join(valid)}", param, ctx)
        return str(value)


class Seconds(click.ParamType):
    """A time limit in seconds: finite and in [MIN_TIME_LIMIT_S, MAX_TIME_LIMIT_S] of
    partitioner.limits (`nan`, `inf`, `1e20` and the subnormal `1e-320` are refused, not run)."""

    name = "seconds"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        from partitioner.limits import MAX_TIME_LIMIT_S, MIN_TIME_LIMIT_S

        try:
            seconds = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not MIN_TIME_LIMIT_S <= seconds <= MAX_TIME_LIMIT_S:  # False for nan
            self.fail(f"must be a finite number of seconds in [{MIN_TIME_LIMIT_S:g}, {MAX_TIME_LIMIT_S:g}] "
                      f"(got {value!r})", param, ctx)
        return seconds
