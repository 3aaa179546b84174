"""Parsers by tool name, from the one plugin registry (``virtbench.registry``)."""

from __future__ import annotations

from virtbench import registry
from virtbench.model import VirtbenchError
from virtbench.parsers.base import Parser

__all__ = ["all_parsers", "get_parser"]


def all_parsers() -> dict[str, Parser]:
    return registry.instances(Parser, "PARSERS", lambda parser: parser.tool)


def get_parser(tool: str) -> Parser:
    parsers = all_parsers()
    if tool not in parsers:
        raise VirtbenchError(f"no parser for '{tool}'; known: {', '.join(parsers)}")
    return parsers[tool]
