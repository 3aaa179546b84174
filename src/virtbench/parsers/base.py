"""Parsers turn a saved tool output into normalised measurements. Pure functions, no I/O."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from virtbench.model import Measurement, Metric

__all__ = ["ParseError", "Parser"]


class ParseError(ValueError):
    """The text is not an output of the tool the parser expects; says what was wrong."""


@dataclass(frozen=True)
class Parser:
    tool: str
    """Name used on the command line: ``virtbench parse TOOL FILE``."""
    description: str
    metrics: tuple[Metric, ...]
    parse: Callable[[str], list[Measurement]]
