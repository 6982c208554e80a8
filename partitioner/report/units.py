"""Human units for the report (ms, µs, GB, tokens/s); the JSON keeps raw SI numbers."""

from __future__ import annotations

import math

__all__ = ["fmt_time", "fmt_gb", "fmt_rate", "fmt_ratio", "time_unit"]


def time_unit(seconds: float) -> tuple[str, float]:
    """The unit a duration reads best in, and its scale: ("ms", 1e3) for 0.0174 s."""
    a = abs(seconds)
    if a >= 1 or a == 0 or not math.isfinite(a):
        return "s", 1.0
    if a >= 1e-3:
        return "ms", 1e3
    return "µs", 1e6


def fmt_time(seconds: float | None) -> str:
    """Seconds in a readable unit, 4 significant digits: 17.36 ms, 28.65 µs, 1.234 s."""
    if seconds is None:
        return "-"
    if not math.isfinite(seconds):
        return str(seconds)
    if seconds == 0:
        return "0 s"
    unit, scale = time_unit(seconds)
    return f"{seconds * scale:.4g} {unit}"


def fmt_gb(gb: float) -> str:
    return f"{gb:.1f} GB" if abs(gb) >= 10 else f"{gb:.2f} GB"


def fmt_rate(x: float, unit: str = "/s") -> str:
    """A rate with thousands separators when large: 1,234 tokens/s, 57.6 tokens/s."""
    if not math.isfinite(x):
        return f"{x} {unit}"
    text = f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"
    return f"{text} {unit}"


def fmt_ratio(x: float) -> str:
    return f"×{x:.2f}" if x < 10 else f"×{x:.1f}"
