"""All parsers: every module under ``virtbench.parsers`` that exports PARSERS (a tuple)."""

from __future__ import annotations

from functools import cache

from virtbench.discovery import discover
from virtbench.model import VirtbenchError
from virtbench.parsers.base import Parser

__all__ = ["all_parsers", "get_parser"]


@cache
def all_parsers() -> dict[str, Parser]:
    import virtbench.parsers as package

    return {p.tool: p for p in sorted(discover(package, "PARSERS"), key=lambda p: p.tool)}


def get_parser(tool: str) -> Parser:
    parsers = all_parsers()
    if tool not in parsers:
        raise VirtbenchError(f"no parser for '{tool}'; known: {', '.join(parsers)}")
    return parsers[tool]
