"""Numbers and ports a user types: one rule each, for command-line options as for files
(written as :mod:`virtbench.inputs.ascii_numbers` reads numbers: digits 0-9).

A number must be finite: ``nan`` compares false with everything, so a gate given
``--fail-if-worse nan`` never fired (exit 0 on a 4.7× slowdown), and ``inf`` reaches timers
that cannot hold it. A port is 1-65535 (files use :data:`virtbench.contract.Port`, the same
range). The option parsers raise ``ValueError`` (pydantic's ``PydanticCustomError``, which
typer shows as ``Invalid value for '--OPTION': ...`` with exit code 2).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from virtbench.inputs.ascii_numbers import parse_integer, parse_number
from virtbench.model import PORT_MAX, PORT_MIN

if TYPE_CHECKING:
    from pydantic_core import PydanticCustomError

__all__ = ["finite_number", "number_parser", "port_number"]


def _refuse(message: str) -> PydanticCustomError:
    # Imported when a value is refused: every command's start-up parses options with these.
    from pydantic_core import PydanticCustomError

    return PydanticCustomError("bad_value", message)


def finite_number(value: str | float, low: float | None = None, high: float | None = None,
                  *, low_open: bool = False) -> float:
    """``value`` as a finite float within [low, high] (``low_open``: above ``low``)."""
    try:  # text by the one rule for numbers: digits 0-9, not every digit float() reads
        number = parse_number(value) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        raise _refuse(f"{value!r} is not a number") from None
    if not math.isfinite(number):
        raise _refuse(f"{value} is not a finite number")
    if low is not None and (number <= low if low_open else number < low):
        raise _refuse(f"{number:g} is not {'above' if low_open else 'at least'} {low:g}")
    if high is not None and number > high:
        raise _refuse(f"{number:g} is above the limit {high:g}")
    return number


def number_parser(low: float | None = None, high: float | None = None, *,
                  low_open: bool = False) -> Callable[[str | float], float]:
    """A typer ``parser=`` for a finite number within bounds."""

    def parse(value: str | float) -> float:
        return finite_number(value, low, high, low_open=low_open)

    return parse


def port_number(value: str | int) -> int:
    """A TCP/UDP port, 1-65535 (a typer ``parser=`` too)."""
    try:
        number = parse_integer(str(value))
    except ValueError:
        raise _refuse(f"{value!r} is not a port number ({PORT_MIN}-{PORT_MAX})") from None
    if not PORT_MIN <= number <= PORT_MAX:
        raise _refuse(f"{number} is not a port number ({PORT_MIN}-{PORT_MAX})")
    return number
