"""Find a tool's JSON document in text that may carry other lines around it (fio
``--output-format=json,normal``, iperf3 warnings before its JSON)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from virtbench.parsers.base import ParseError

__all__ = ["FoundJson", "find_json"]

# Tools print their document's opening brace at the start of a line.
_CANDIDATE = re.compile(r"^[ \t]*\{", re.MULTILINE)


@dataclass(frozen=True)
class FoundJson:
    doc: dict[str, Any]
    start: int
    before: str
    after: str


def find_json(text: str, tool: str, expected: str,
              accept: Callable[[dict[str, Any]], bool]) -> FoundJson:
    """The first JSON object starting a line that ``accept`` recognises; else a ParseError
    naming what went wrong with the first candidate (e.g. where the document is cut off)."""
    decoder = json.JSONDecoder()
    first_error: json.JSONDecodeError | None = None
    other: dict[str, Any] | None = None
    pos = 0
    while True:
        match = _CANDIDATE.search(text, pos)
        if match is None:
            break
        start = match.end() - 1
        try:
            doc, end = decoder.raw_decode(text, start)
        except (json.JSONDecodeError, RecursionError) as exc:
            if first_error is None and isinstance(exc, json.JSONDecodeError):
                first_error = exc
            pos = start + 1
            continue
        if isinstance(doc, dict) and accept(doc):
            return FoundJson(doc, start, text[:start], text[end:])
        if other is None and isinstance(doc, dict):
            other = doc
        pos = end
    if first_error is not None:
        raise ParseError(f"{tool}: the JSON is cut off or damaged at line {first_error.lineno} "
                         f"column {first_error.colno} ({first_error.msg}); expected {expected}")
    if other is not None:
        keys = ", ".join(list(other)[:5])
        raise ParseError(f"not {tool} output: the JSON found has keys {keys}; expected "
                         f"{expected}")
    raise ParseError(f"not {tool} output: no JSON object found; expected {expected}")
