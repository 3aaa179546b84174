"""Find a tool's JSON document in text that may carry other lines around it (fio
``--output-format=json,normal``, iperf3 warnings before its JSON), and read JSON with errors
that name the tool — in time linear in the text, whatever the text is.

Linear, because a file that is not the tool's output can hold hundreds of thousands of lines
that start with ``{``: each candidate is decoded from a window of the text just large enough
for it (the JSON decoder's error counts the lines before its position: on the whole text that
is a pass over everything before each candidate), and the next candidate is looked for where
the decoder stopped (text it read as part of one candidate's value is not the start of
another's). Nesting deeper than the decoder's recursion limit is a ParseError too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from virtbench.parsers.parser_contract import ParseError

__all__ = ["FoundJson", "decoder_for", "find_json", "loads", "raw_decode"]

# Tools print their document's opening brace at the start of a line.
_CANDIDATE = re.compile(r"^[ \t]*\{", re.MULTILINE)
_OBJECT_START = re.compile(r"^[ \t]*\{(?=\s*[\"}])", re.MULTILINE)
"""A candidate that can start an object ('{' then a key or '}'): once the first candidate has
failed (its error is the one reported), others are only looked for here — a line of junk that
merely starts with '{' costs a regular-expression step, not a decoder call."""
MAX_FAILED_CANDIDATES = 10_000
"""Lines that start like JSON but are not, after which the search stops with the first one's
error: a tool prints a few lines around its document, not thousands."""
MAX_TOO_DEEP = 20
"""Candidates nested past the decoder's limit after which the search stops (each costs the
decoder a descent of ~1,000 levels)."""
_BOUNDARY = re.compile(r'[\s,:\[\]{}"]')
"""What ends a token: a decoder error followed by none of these in its window may be a token
the window cut (``1e``, ``Infinit``, ``\\u12``, or nothing at all), so the window is doubled
rather than the error believed."""
_TOO_DEEP = "nested deeper than the JSON reader allows (about 1000 levels)"
# A run of 300 ASCII digits, found by mapping every digit to "0" and everything else to " "
# (bytes.translate and find run at memory speed; a regex took three times as long as the
# JSON decoding itself, BENCHMARKS.md "parsers: parse speed").
_DIGITS_AS_ZERO = bytes(0x30 if 0x30 <= i <= 0x39 else 0x20 for i in range(256))
_LONG_RUN = b"0" * 300
_PLAIN = json.JSONDecoder()


def _parse_int(digits: str) -> int | float:
    """A JSON integer as an int while a float can hold it, else as a float (inf beyond ~10^308):
    never an int of 4,300 digits (a ValueError) nor one float() cannot convert (OverflowError);
    the parsers' figure check then calls it what it is."""
    return int(digits) if len(digits) < 300 else float(digits)


_LONG_INTEGERS = json.JSONDecoder(parse_int=_parse_int)


def decoder_for(text: str) -> json.JSONDecoder:
    """The JSON decoder for ``text``: the plain one, or — when the text holds an integer of 300
    digits or more (one scan) — one that reads such integers as floats. (Not always the
    second: a Python call per integer would slow every parse.)"""
    digits = text.encode("utf-8", "surrogatepass").translate(_DIGITS_AS_ZERO)
    return _LONG_INTEGERS if _LONG_RUN in digits else _PLAIN


@dataclass(frozen=True)
class FoundJson:
    doc: dict[str, Any]
    start: int
    before: str
    after: str


@dataclass(frozen=True)
class _Failure:
    """Where decoding one candidate failed: absolute position and the decoder's reason."""

    pos: int
    msg: str


def _decode_windowed(decoder: json.JSONDecoder, text: str, start: int, *, whole: bool = False
                     ) -> tuple[Any, int] | _Failure:
    """``decoder.raw_decode(text, start)`` in time proportional to what it reads: the
    candidate is decoded from a slice (first its line) that grows, doubling, only while the
    decoder's error could come from the slice's end (a token it cut); so a failing candidate
    costs what it read, not ``start``. ``whole``: the slice is the rest of the text at once
    (the first candidate: read once, it costs what the text costs, and a pretty-printed
    document would otherwise be decoded about twice over, window after window)."""
    line_end = text.find("\n", start)
    end = len(text) if line_end < 0 or whole else line_end + 1
    shallow = 0  # a prefix of the candidate known not to be nested too deeply
    while True:
        window = text[start:end]
        try:
            value, used = decoder.raw_decode(window)
        except RecursionError:
            return _Failure(start + _too_deep_at(decoder, window, shallow), _TOO_DEEP)
        except json.JSONDecodeError as exc:
            if end < len(text) and (exc.msg.startswith("Unterminated string")
                                    or not _BOUNDARY.search(window, exc.pos)):
                shallow = len(window)
                end = min(len(text), start + 2 * len(window))
                continue
            return _Failure(start + exc.pos, exc.msg)
        return value, start + used  # an object is whole once its '}' is read


def _too_deep_at(decoder: json.JSONDecoder, window: str, shallow: int) -> int:
    """Where in ``window`` the decoder passes its nesting limit: the shortest prefix that is
    too deep (binary search; the first ``shallow`` characters are known not to be). Everything
    before it is part of the deep value, not a new start."""
    low = shallow
    high = len(window)
    while high - low > 1:
        middle = (low + high) // 2
        try:
            decoder.raw_decode(window[:middle])
        except RecursionError:
            high = middle
        except json.JSONDecodeError:
            low = middle
        else:
            low = middle
    return high


def _where(text: str, pos: int) -> str:
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"line {line} column {column}"


def find_json(text: str, tool: str, expected: str,
              accept: Callable[[dict[str, Any]], bool]) -> FoundJson:
    """The first JSON object starting a line that ``accept`` recognises; else a ParseError
    naming what went wrong with the first candidate (e.g. where the document is cut off)."""
    decoder = decoder_for(text)
    first_error: _Failure | None = None
    other: dict[str, Any] | None = None
    failed = too_deep = 0
    pos = 0
    while True:
        match = (_CANDIDATE if first_error is None else _OBJECT_START).search(text, pos)
        if match is None:
            break
        start = match.end() - 1
        result = _decode_windowed(decoder, text, start, whole=pos == 0)
        if isinstance(result, _Failure):
            if first_error is None:
                first_error = result
            failed += 1
            too_deep += result.msg == _TOO_DEEP
            if failed >= MAX_FAILED_CANDIDATES or too_deep >= MAX_TOO_DEEP:
                raise ParseError(
                    f"{tool}: the JSON is cut off or damaged at {_where(text, first_error.pos)}"
                    f" ({first_error.msg}), and {failed:,} lines that start like JSON are not "
                    f"(search stopped); expected {expected}")
            # Text the decoder accepted as this candidate's value is not another start.
            pos = max(start + 1, result.pos)
            continue
        doc, end = result
        if isinstance(doc, dict) and accept(doc):
            return FoundJson(doc, start, text[:start], text[end:])
        if other is None and isinstance(doc, dict):
            other = doc
        pos = end
    if first_error is not None:
        raise ParseError(f"{tool}: the JSON is cut off or damaged at "
                         f"{_where(text, first_error.pos)} ({first_error.msg}); expected "
                         f"{expected}")
    if other is not None:
        keys = ", ".join(list(other)[:5])
        raise ParseError(f"not {tool} output: the JSON found has keys {keys}; expected "
                         f"{expected}")
    raise ParseError(f"not {tool} output: no JSON object found; expected {expected}")


def raw_decode(decoder: json.JSONDecoder, text: str, pos: int, tool: str) -> tuple[Any, int]:
    """``decoder.raw_decode(text, pos)``; a damaged or too deeply nested value is a ParseError
    naming ``tool`` and where (for readers that stop at the first bad value: linear)."""
    try:
        return decoder.raw_decode(text, pos)
    except json.JSONDecodeError as exc:
        raise ParseError(f"{tool}: invalid JSON at line {exc.lineno} column {exc.colno}: "
                         f"{exc.msg}") from None
    except RecursionError:
        raise ParseError(f"{tool}: the JSON at {_where(text, pos)} is {_TOO_DEEP}") from None


def loads(text: str) -> Any:
    """``json.loads`` whose too deep nesting is a JSONDecodeError too (callers word it), and
    whose integers too large for a float are floats (:func:`decoder_for`)."""
    try:
        return decoder_for(text).decode(text)
    except RecursionError:
        raise json.JSONDecodeError(_TOO_DEEP, text, 0) from None
