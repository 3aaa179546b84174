"""Any corpus file cut short, with bytes flipped, with a span duplicated or with numbers
replaced by NaN, Infinity, 1e308, -1 ... gives a ParseError or a result whose every ok figure is
finite and inside its metric's domain (non-negative where physical, a proportion within 0-100)
— never another exception (property-based: hypothesis chooses the cuts, flips, spans and
replacements; cases per run: docs/cli.md)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from virtbench.compressed import decompress
from virtbench.model import Domain
from virtbench.parsers.parser_contract import MAX_OUTPUT_BYTES, ParseError
from virtbench.plugins import get_parser

from .corpus import all_corpus, corpus

_FILES = all_corpus()
_BYTES = {path: path.read_bytes() for _tool, path in _FILES}


def _read(tool: str, data: bytes) -> None:
    parser = get_parser(tool)
    try:
        parsed = parser.read(data)
    except ParseError as exc:
        message = str(exc)
        assert message and "\n" not in message.strip(), message
        return
    domains = {metric.name: metric.value_domain for metric in parser.metrics}
    for m in parsed.measurements:
        assert (m.value is None) == (m.status != "ok")
        if m.value is None:
            continue
        assert math.isfinite(m.value), m
        domain = domains.get(m.metric, Domain.REAL)
        if domain is not Domain.REAL:
            assert m.value >= 0, m
        if domain is Domain.PROPORTION:
            assert m.value <= 100, m


@pytest.mark.parametrize(("tool", "path"), _FILES, ids=lambda v: getattr(v, "name", v))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cut=st.floats(min_value=0.0, max_value=1.0))
def test_truncated(tool: str, path: Path, cut: float) -> None:
    data = _BYTES[path]
    _read(tool, data[: int(len(data) * cut)])


@pytest.mark.parametrize(("tool", "path"), _FILES, ids=lambda v: getattr(v, "name", v))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flips=st.lists(st.tuples(st.floats(min_value=0.0, max_value=0.999999),
                                st.integers(min_value=0, max_value=255)), min_size=1, max_size=8))
def test_bytes_flipped(tool: str, path: Path, flips: list[tuple[float, int]]) -> None:
    data = bytearray(_BYTES[path])
    for where, value in flips:
        data[int(len(data) * where)] = value
    _read(tool, bytes(data))


# Per tool, hypothesis picks the file too: a bounded number of cases per tool and mutation.
_TOOLS = sorted({tool for tool, _path in _FILES})
_TEXTS = {tool: [decompress(_BYTES[path], limit=MAX_OUTPUT_BYTES)[0] for path in corpus(tool)]
          for tool in _TOOLS}
_NUMBER = re.compile(rb"-?\b\d+(?:\.\d+)?(?:[eE][-+]?\d+)?\b")
_NUMBERS = {tool: [[m.span() for m in _NUMBER.finditer(text)] for text in texts]
            for tool, texts in _TEXTS.items()}
_BAD_NUMBERS = [b"NaN", b"Infinity", b"-Infinity", b"1e308", b"-1e308", b"1e999", b"-1", b"-5",
                b"0", b"nan", b"inf", b"+++++", b"1.7976931348623157e309",
                b"1" + b"0" * 400, b"9" * 5000]  # beyond a float; beyond int()'s 4,300 digits


@pytest.mark.parametrize("tool", _TOOLS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_numbers_replaced(tool: str, data: st.DataObject) -> None:
    index = data.draw(st.integers(0, len(_TEXTS[tool]) - 1), label="file")
    text, spans = _TEXTS[tool][index], _NUMBERS[tool][index]
    chosen = data.draw(st.lists(st.tuples(st.integers(0, len(spans) - 1),
                                          st.sampled_from(_BAD_NUMBERS)),
                                min_size=1, max_size=6), label="replacements")
    out = bytearray(text)
    for position, value in sorted({p: v for p, v in chosen}.items(), reverse=True):
        start, end = spans[position]
        out[start:end] = value
    _read(tool, bytes(out))


@pytest.mark.parametrize("tool", _TOOLS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_span_duplicated(tool: str, data: st.DataObject) -> None:
    index = data.draw(st.integers(0, len(_TEXTS[tool]) - 1), label="file")
    text = _TEXTS[tool][index]
    start = data.draw(st.integers(0, len(text) - 1), label="start")
    length = data.draw(st.integers(1, max(1, len(text) - start)), label="length")
    copies = data.draw(st.integers(1, 3), label="copies")
    span = text[start:start + length]
    _read(tool, text[:start] + span * (copies + 1) + text[start + length:])
