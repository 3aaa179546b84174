"""Finding a tool's JSON in text that is not (only) JSON reads each character a bounded number
of times, whatever the text: the work is counted (characters handed to the JSON decoder), not
timed. Before, each of the 20,000 candidate lines below cost a pass over the whole text (the
decoder's error counts the lines before its position), about 10^10 characters for 1 MB."""

from __future__ import annotations

import json
from typing import Any

import pytest

from virtbench.parsers import jsontext
from virtbench.parsers.parser_contract import ParseError
from virtbench.plugins import get_parser

_MB = 1 << 20


def _pad(line: str, width: int = 52) -> str:
    return line.ljust(width - 1) + "\n"


_JUNK = {
    # A line that opens an object and an array, never closed: each candidate fails late.
    "open-arrays": _pad('{"k": [1, 2, 3,'),
    # Objects nested across lines: each candidate reads on into the next ones.
    "nested-objects": _pad('{"a": {"b": 1}, "c": ['),
    # One unterminated string per line (a string cannot span lines: fails at the newline).
    "open-strings": _pad('{"never closed'),
    # Braces alone.
    "braces": "{\n",
    # Arrays nested deeper than the decoder allows, on every line.
    "deep": "{\"a\": " + "[" * 2000 + "\n",
}


class _CountingDecoder(json.JSONDecoder):
    """Counts the characters of every text handed to raw_decode (the decoder's work, and its
    error's line count, is at most proportional to that)."""

    read = 0

    def raw_decode(self, s: str, idx: int = 0) -> tuple[Any, int]:
        type(self).read += len(s) - idx if idx else len(s)
        if idx:  # decoding inside a longer text: its error counts lines from 0, not from idx
            type(self).read += idx
        return super().raw_decode(s, idx)


@pytest.mark.parametrize("shape", list(_JUNK))
def test_find_json_reads_each_character_a_bounded_number_of_times(
        shape: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # 1 MB; the two shapes of costly candidates (500,000 of 2 characters; 1,000 levels deep)
    # at a quarter of that, to keep the test short: quadratic would still be >10^4 x the text.
    size = _MB // 4 if shape in ("braces", "deep") else _MB
    text = _JUNK[shape] * (size // len(_JUNK[shape]))
    _CountingDecoder.read = 0
    monkeypatch.setattr(json, "JSONDecoder", _CountingDecoder)  # the module jsontext reads
    with pytest.raises(ParseError, match="cut off or damaged at line"):
        jsontext.find_json(text, "iperf3", "iperf3 -J", lambda doc: "start" in doc)
    # Linear: a small multiple of the text (windows double; the deep shape is searched for its
    # nesting limit, a log factor); quadratic is ~10^4 times the text.
    assert _CountingDecoder.read < 40 * len(text), _CountingDecoder.read / len(text)


def test_the_document_after_junk_is_still_found() -> None:
    junk = _JUNK["open-arrays"] * 2000 + _JUNK["deep"] * 10
    doc = {"start": {"version": "iperf3 3.12"}, "end": {}, "pad": "x" * 100_000}
    found = jsontext.find_json(junk + json.dumps(doc, indent=1) + "\ntrailer\n", "iperf3", "x",
                               lambda d: "start" in d)
    assert found.doc == doc
    assert found.after == "\ntrailer\n"


def test_a_document_longer_than_the_first_windows_with_a_number_at_their_edge() -> None:
    # Numbers and escapes cut by a window's end must not be read as errors or short values.
    doc = {"start": 1, "values": [1.5e-7 + i for i in range(20_000)], "s": "\\u00e9" * 3000}
    found = jsontext.find_json("note\n" + json.dumps(doc), "t", "x", lambda d: "start" in d)
    assert found.doc == doc


@pytest.mark.parametrize("tool", ["iperf3", "fio"])
def test_deep_nesting_is_a_parse_error(tool: str) -> None:
    with pytest.raises(ParseError, match="nested deeper"):
        get_parser(tool).read(b"{\"a\": " + b"[" * 100_000 + b"]" * 100_000 + b"}\n")


def test_deep_json_stream_line_is_ignored_with_a_warning() -> None:
    start = '{"event":"start","data":{"test_start":{"protocol":"TCP"}}}\n'
    deep = '{"event":"interval","data":' + "[" * 100_000 + "]" * 100_000 + "}\n"
    end = ('{"event":"end","data":{"sum_sent":{"bits_per_second":8e6,"bytes":1},'
           '"sum_received":{"bits_per_second":8e6,"bytes":1}}}\n')
    parsed = get_parser("iperf3").read((start + deep + end).encode())
    assert any("line 2" in w and "nested deeper" in w for w in parsed.warnings), parsed.warnings
    assert [m.value for m in parsed.measurements if m.metric == "throughput_mbps"] == [8.0]


@pytest.mark.parametrize("compress", [False, True])
def test_input_larger_than_any_tool_output_is_refused(
        compress: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    import gzip

    from virtbench.parsers import parser_contract

    monkeypatch.setattr(parser_contract, "MAX_OUTPUT_BYTES", 1 << 20)
    data = b"{\n" * (1 << 20)
    # Compressed, unpacking stops at the limit (a compression bomb never fills memory), so
    # the message gives the limit, not the whole size.
    said = (r"gzip-compressed input of more than 1 MiB once decompressed is more than any fio "
            r"output" if compress else r"2 MiB is more than any fio output .*1 MiB")
    with pytest.raises(ParseError, match=said):
        get_parser("fio").read(gzip.compress(data) if compress else data)


def test_the_search_stops_after_many_lines_that_start_like_json() -> None:
    junk = '{"broken\n' * jsontext.MAX_FAILED_CANDIDATES
    with pytest.raises(ParseError, match=r"line 1 column 9 .*10,000 lines that start like JSON"
                                         r" are not \(search stopped\)"):
        jsontext.find_json(junk + '{"start": 1}\n', "iperf3", "x", lambda d: "start" in d)
    # Fewer than that, and lines that cannot start an object at all, do not stop it.
    found = jsontext.find_json('{"broken\n' * 100 + "{\n" * 50_000 + '{"start": 1}\n',
                               "iperf3", "x", lambda d: "start" in d)
    assert found.doc == {"start": 1}
