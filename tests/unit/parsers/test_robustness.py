"""Any corpus file cut short or with bytes flipped gives a ParseError or a result — never
another exception (property-based: hypothesis chooses the cut points and the flips)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from virtbench.parsers.base import ParseError
from virtbench.parsers.registry import get_parser

from .corpus import all_corpus

_FILES = all_corpus()
_BYTES = {path: path.read_bytes() for _tool, path in _FILES}


def _read(tool: str, data: bytes) -> None:
    try:
        parsed = get_parser(tool).read(data)
    except ParseError as exc:
        message = str(exc)
        assert message and "\n" not in message.strip(), message
        return
    for m in parsed.measurements:
        assert (m.value is None) == (m.status != "ok")


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
