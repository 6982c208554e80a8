"""Resource limits on user input, by design rather than by accident.

Every reader of user files and every size that multiplies into a cost table is bounded here, so
a hostile or mistaken input (an alias bomb, ``repeat: 100000000``, ``hf_config: /dev/zero``)
fails in milliseconds with one line naming the limit and how to raise it, instead of exhausting
memory. Each limit can be raised with the environment variable ``PARTITIONER_<NAME>``, e.g.
``PARTITIONER_MAX_LAYERS=20000``. The defaults are far above any real model or cluster:

==================  =========  ==================================================================
name                default    what it bounds
==================  =========  ==================================================================
MAX_INPUT_BYTES     128000000  bytes read from any input file (CSV, JSON, plan files)
MAX_YAML_BYTES      16000000   bytes of a model.yaml / cluster.yaml
MAX_YAML_DEPTH      64         nesting of YAML (and JSON config) collections
MAX_YAML_NODES      1000000    YAML nodes after alias expansion (alias bombs)
MAX_INT_DIGITS      24         digits of an integer in YAML, JSON or CSV
MAX_LAYERS          1024       layers of a model (num_hidden_layers, sum of repeat); 1,024 layers
                               plan in ~3 s and 130 MB, the largest real models have ~130
MAX_DEVICES         1024       devices of a cluster
MAX_MICROBATCHES    1000000    M of a plan (CP-SAT scales T(M) to 64-bit integer ticks)
==================  =========  ==================================================================

Numbers: finite and |x| <= MAX_MAGNITUDE = 1e18, so no sum of user numbers overflows a float;
in model.yaml, cluster.yaml and on the command line also not subnormal (|x| >= 2.2e-308 unless
0): ``weights: 1e-320`` is a typo, not a precision. Measured values in CSVs are bounded by what
they measure (a layer time in [1 ns, 10^6 s]). A `--time-limit` is in [1 ms, 10^7 s].
"""

from __future__ import annotations

import math
import os
import sys

from partitioner.errors import InputError

__all__ = ["DEFAULTS", "limit", "exceeded", "MAX_MAGNITUDE", "MIN_TIME_LIMIT_S", "MAX_TIME_LIMIT_S", "check_magnitude", "magnitude_problem"]

DEFAULTS: dict[str, int] = {
    "MAX_INPUT_BYTES": 128_000_000,
    "MAX_YAML_BYTES": 16_000_000,
    "MAX_YAML_DEPTH": 64,
    "MAX_YAML_NODES": 1_000_000,
    "MAX_INT_DIGITS": 24,
    "MAX_LAYERS": 1024,
    "MAX_DEVICES": 1024,
    "MAX_MICROBATCHES": 1_000_000,
}

#: Largest absolute value of a user number; 1e18 s is 3e10 years, 1e18 bytes an exabyte.
MAX_MAGNITUDE = 1e18
#: Bounds of a `--time-limit`: below a millisecond no phase can even check its budget, and
#: 10^7 s (116 days) is beyond any planning run; outside them the value is a typo.
MIN_TIME_LIMIT_S = 1e-3
MAX_TIME_LIMIT_S = 1e7


def limit(name: str) -> int:
    """The limit `name` (a key of DEFAULTS), overridden by the environment variable PARTITIONER_<name>."""
    raw = os.environ.get(f"PARTITIONER_{name}")
    if raw is None:
        return DEFAULTS[name]
    try:
        value = int(raw)
    except ValueError:
        raise InputError(f"PARTITIONER_{name} must be a positive integer (got {raw!r})") from None
    if value < 1:
        raise InputError(f"PARTITIONER_{name} must be a positive integer (got {raw!r})")
    return value


def exceeded(name: str, what: str) -> str:
    """The tail of a limit error: ``exceeds the limit MAX_LAYERS = 4096 (raise it with ...)``."""
    return f"{what} exceeds the limit {name} = {limit(name)} (raise it with the environment variable PARTITIONER_{name})"


def magnitude_problem(value: float, *, subnormal: bool = True) -> str | None:
    """Why `value` is not a usable user number (non-finite, beyond MAX_MAGNITUDE, or, if
    `subnormal`, a subnormal such as 1e-320 where 0 or a normal number was meant), or None."""
    if not math.isfinite(value):
        return "must be a finite number"
    a = abs(value)
    if subnormal and 0 < a < sys.float_info.min:
        return f"is subnormal (|x| < {sys.float_info.min:.3g}); use 0 or a normal number"
    if a > MAX_MAGNITUDE:
        return f"is beyond the magnitude limit {MAX_MAGNITUDE:g}"
    return None


def check_magnitude(name: str, value: float) -> float:
    """`value`, or InputError naming `name` when `magnitude_problem` finds one."""
    problem = magnitude_problem(value)
    if problem:
        raise InputError(f"{name} {problem} (got {value!r})")
    return value
