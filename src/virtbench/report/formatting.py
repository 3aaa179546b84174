"""Number formatting shared by every renderer: SI prefixes, significant digits, p-values."""

from __future__ import annotations

import math

from virtbench.safetext import json_safe  # the one rule for JSON numbers (kept importable here)

__all__ = ["fmt_no_ci", "fmt_num", "fmt_p", "fmt_ratio", "fmt_value", "json_safe"]

_PREFIXES = [(1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"), (1e-6, "µ"),
             (1e-9, "n")]
# Units that take SI prefixes; others (%, frames/s) are printed plainly.
_SCALABLE = {"s", "B/s", "B", "bit/s", "Hz", "req/s", "ops/s", "IOPS", "packets/s"}


def fmt_num(value: float | None, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if value == 0:
        return "0"
    return f"{value:.{digits}g}"


def fmt_value(value: float | None, unit: str, digits: int = 4) -> str:
    """4.16e-3 s -> '4.16 ms'; 1.2e10 B/s -> '12 GB/s'."""
    if value is None or math.isnan(value):
        return "–"
    if unit in _SCALABLE and value != 0:
        for factor, prefix in _PREFIXES:
            if abs(value) >= factor:
                return f"{value / factor:.{digits}g} {prefix}{unit}"
        return f"{value / 1e-9:.{digits}g} n{unit}"
    return f"{value:.{digits}g} {unit}".strip()


def fmt_ratio(ratio: float | None, low: float | None = None, high: float | None = None) -> str:
    if ratio is None or math.isnan(ratio):
        return "–"
    if low is None or high is None or math.isnan(low) or math.isnan(high):
        return f"{ratio:.3g}×"
    return f"{ratio:.3g}× [{low:.3g}, {high:.3g}]"


def fmt_p(p: float | None) -> str:
    if p is None or math.isnan(p):
        return "–"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def fmt_no_ci(n: int, minimum: float, maximum: float, unit: str) -> str:
    """What stands where an interval cannot: the values themselves (n = 2 are the minimum and
    maximum) and why: 'values 99 %, 99.8 %; no CI from 2 values'."""
    if n == 1:
        return f"value {fmt_value(minimum, unit)}; no CI from 1 value"
    if n == 2:
        return (f"values {fmt_value(minimum, unit)}, {fmt_value(maximum, unit)}; no CI from "
                "2 values")
    return "–"
