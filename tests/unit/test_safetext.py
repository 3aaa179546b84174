"""The one rule per kind of output for stored and user text (virtbench.safetext): terminal,
rich markup, CSV and JSON, on hostile examples and on arbitrary text (hypothesis)."""

from __future__ import annotations

import csv
import io
import json
import math
import re
import unicodedata
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from virtbench import safetext

HOSTILE = ["[/]", "[bold]", "[/dev/sdz]", "[link=https://x.example]y[/link]",
           "\x1b]0;title\x07", "\x1b[2J\x1b[H", "a\rb", "\x9b31m", "evil\u202eexe", "\u2066x\u2069",
           "zero\u200bwidth", "=cmd|' /C calc'!A0", '=HYPERLINK("http://x.example","y")',
           "-2+3", "@SUM(1+1)*cmd|' /C calc'!A0", "+1+1", "\t=1", "\r=1", ":smile:", "trail\\",
           "\\[bold]x", "\udcff", "\U000e0041tag"]

# Hostile fragments mixed with any code point, surrogates included (hypothesis leaves them out
# unless asked): what an import or a tool's output may carry.
ANY_CHAR = st.characters(exclude_categories=())
ANY_TEXT = st.lists(st.one_of(st.sampled_from(HOSTILE), st.text(ANY_CHAR, max_size=8)),
                    max_size=6).map("".join)
EXAMPLES = 300

SGR = re.compile(r"\x1b\[[0-9;]*m")


def _bad_chars(out: str) -> list[str]:
    """Characters that act on a terminal instead of showing: anything not printable but a line
    break, tab or space."""
    return [c for c in out if not (c.isprintable() or c in "\n\t"
                                    or unicodedata.category(c) == "Zs")]


def _render(renderable: Any, *, terminal: bool = False) -> str:
    buffer = io.StringIO()
    out = safetext.console(file=buffer, width=100_000, force_terminal=terminal,
                           color_system="truecolor" if terminal else None, highlight=False)
    out.print(renderable, soft_wrap=True)
    return buffer.getvalue()


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_text_prints_literally_and_harmlessly(hostile: str) -> None:
    shown = safetext.visible(hostile).expandtabs(8)  # rich expands tabs
    assert not _bad_chars(shown)
    for rendered in (_render(safetext.markup(hostile)), _render(safetext.text(hostile)),
                     _render(f"[red]{safetext.markup(hostile)}[/]")):
        assert rendered == shown + "\n"
    colour = _render(f"[red]{safetext.markup(hostile)}[/]", terminal=True)
    assert SGR.sub("", colour) == shown + "\n"  # rich's own colour codes are the only escapes


def test_control_characters_are_shown_as_escapes() -> None:
    assert safetext.visible("\x1b]0;title\x07") == "\\x1b]0;title\\x07"
    assert safetext.visible("a\rb\x9b") == "a\\x0db\\x9b"
    assert safetext.visible("evil\u202eexe") == "evil\\u202eexe"
    assert safetext.visible("\U000e0041") == "\\U000e0041"
    assert safetext.visible("two\nlines\tand µs × ▁ 日本\u3000語") == (
        "two\nlines\tand µs × ▁ 日本\u3000語")  # layout and letters of any script stay
    assert safetext.visible(42) == "42"


@settings(max_examples=EXAMPLES, deadline=None)
@given(ANY_TEXT, ANY_TEXT)
@example("", "trail\\[")  # rich dropped the backslash of a `\[` that starts no tag
def test_any_text_is_shown_verbatim_or_escaped_never_acting(value: str, other: str) -> None:
    shown = safetext.visible(value)
    assert not _bad_chars(shown)
    assert safetext.visible(shown) == shown  # idempotent: printing twice changes nothing
    if value.isprintable():
        assert shown == value
    # Through rich, as markup (alone, inside a tag, next to other text) or as Text: exactly
    # the visible text, nothing eaten or added (rich expands tabs; one line, so that no
    # wrapping rule applies).
    both = shown + safetext.visible(other)
    for rendered, expected in (
            (_render(safetext.markup(value)), shown),
            (_render(safetext.text(value)), shown),
            (_render(f"[red]{safetext.markup(value)}[/]{safetext.markup(other)}"), both),
            (_render(f"{safetext.markup(value)}x[bold]{safetext.markup(other)}[/]"),
             shown + "x" + safetext.visible(other))):
        assert not _bad_chars(rendered)
        if "\n" in expected:
            continue
        if "\t" in expected:  # rich expands a tab by the cells' width: compare without
            rendered, expected = (re.sub(r"[ \t]", "", t) for t in (rendered, expected))
        assert rendered == expected + "\n"


def test_formula_cells_are_neutralised_and_numbers_stay_numbers() -> None:
    assert safetext.csv_cell("=cmd|' /C calc'!A0") == "'=cmd|' /C calc'!A0"
    assert safetext.csv_cell('=HYPERLINK("http://x","y")') == '\'=HYPERLINK("http://x","y")'
    assert safetext.csv_cell("-2+3") == "'-2+3"
    assert safetext.csv_cell("@SUM(1)") == "'@SUM(1)"
    assert safetext.csv_cell("+1") == "+1"  # a number as text: still a number
    assert safetext.csv_cell("\t=1") == "'\t=1"
    assert safetext.csv_cell("\r=1") == "\\x0d=1"  # shown visibly first: no longer a CR
    assert safetext.csv_cell("-inf") == "'-inf"
    for number in ("-5", "-2.5", "-1e-05", "+3", ".5", "-0.25E+3"):
        assert safetext.csv_cell(number) == number
    assert safetext.csv_cell(-2.5) == -2.5
    assert safetext.csv_cell(-3) == -3
    assert safetext.csv_cell(np.float64(-1.5)) == -1.5
    assert safetext.csv_cell(float("nan")) is None
    assert safetext.csv_cell(float("-inf")) is None
    assert safetext.csv_cell(None) is None
    assert safetext.csv_cell(True) is True


def _live_formula(cell: str) -> bool:
    """What a spreadsheet runs: a cell starting with = + - @ (after tabs and CRs, which
    spreadsheets strip), unless it is a plain number."""
    stripped = cell.lstrip("\t\r")
    if not stripped[:1] or stripped[0] not in "=+-@":
        return False
    try:
        float(stripped)
    except ValueError:
        return True
    return not math.isfinite(float(stripped))


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(st.one_of(ANY_TEXT, st.floats(), st.integers(), st.none()), min_size=1,
                max_size=5))
def test_any_csv_row_has_no_live_formula_and_keeps_its_numbers(values: list[Any]) -> None:
    names = [f"c{i}" for i in range(len(values))]
    document = safetext.csv_document(["=head", *names], [dict(zip(names, values, strict=True))])
    header, row = list(csv.reader(io.StringIO(document)))
    assert header[0] == "'=head"
    for value, cell in zip(values, row[1:], strict=True):
        assert not _live_formula(cell), cell
        assert not _bad_chars(cell.replace("\n", "").replace("\t", ""))
        if isinstance(value, int):  # numbers, negative ones too, stay numbers
            assert int(cell) == value
        elif isinstance(value, float) and math.isfinite(value):
            assert float(cell) == value


def _strict_loads(body: str) -> Any:
    def refuse(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(body, parse_constant=refuse)


def test_json_is_strict_and_says_nan_as_null() -> None:
    document = {"nan": float("nan"), "inf": [float("inf"), -math.inf], "np": np.float64("nan"),
                "ok": 1.5, "n": 3, "nested": ({"x": np.float32(2.5)},)}
    assert _strict_loads(safetext.dumps(document)) == {
        "nan": None, "inf": [None, None], "np": None, "ok": 1.5, "n": 3,
        "nested": [{"x": 2.5}]}
    assert safetext.finite_or_reason(float("nan"), "ok") == (None, "not_finite")
    assert safetext.finite_or_reason(math.inf, "timeout") == (None, "timeout")
    assert safetext.finite_or_reason(2.0, "ok") == (2.0, "ok")
    assert safetext.finite_or_reason(None, "too_fast") == (None, "too_fast")


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.recursive(st.one_of(st.none(), st.booleans(), st.floats(), st.integers(), ANY_TEXT),
                    lambda inner: st.one_of(st.lists(inner, max_size=4),
                                            st.dictionaries(ANY_TEXT, inner, max_size=4)),
                    max_leaves=12),
       st.sampled_from([None, 1]))
def test_any_document_dumps_as_strict_json_without_raw_controls(document: Any,
                                                                indent: int | None) -> None:
    body = safetext.dumps(document, indent=indent)
    assert not _bad_chars(body)
    assert _strict_loads(body) == _strict_loads(json.dumps(safetext.json_safe(document)))


def test_every_control_format_and_separator_character_is_escaped() -> None:
    acting = {"Cc", "Cf", "Cs", "Zl", "Zp"}
    missed = [hex(c) for c in range(0x110000)
              if unicodedata.category(chr(c)) in acting and chr(c) not in "\n\t"
              and safetext.visible(chr(c)) == chr(c)]
    assert missed == []


def test_markdown_text_shows_every_construct_as_written() -> None:
    shown = safetext.markdown_text("a|b `c` <img src=x> [l](u) *e* @me #1 :x: $m$\nz\x1b")
    assert shown == ("a&#124;b &#96;c&#96; &#60;img src=x&#62; &#91;l&#93;(u) &#42;e&#42; "
                     "&#64;me &#35;1 &#58;x&#58; &#36;m&#36; z&#92;x1b")
    assert safetext.markdown_text("plain text, 1.5 %") == "plain text, 1.5 %"
    # a backslash before a | cannot end the cell (a backslash escape of the | would)
    assert safetext.markdown_text("x\\|y") == "x&#92;&#124;y"


def test_csv_numbers_are_ascii_digits() -> None:
    """"-١" is no number to a spreadsheet: a leading minus makes it a formula."""
    assert safetext.csv_cell("-١") == "'-١"
    assert safetext.csv_cell("-1") == "-1"


# ---- the store's rule ----------------------------------------------------------------------

@settings(max_examples=EXAMPLES, deadline=None)
@given(st.text(st.characters(codec=None), max_size=300), st.integers(1, 400), st.booleans())
@example("\x1b[31m\x00\u202e\udcff\n\t" * 30, 50, True)
@example("x" * 500, 60, False)
def test_stored_is_idempotent_bounded_and_shown_fuzz(value: str, limit: int, line: bool) -> None:
    kept = safetext.stored(value, limit, line=line)
    assert len(kept) <= limit
    assert safetext.stored(kept, limit, line=line) == kept  # export, import, export: the same
    assert safetext.unshown(kept, line=line) is None
    assert safetext.visible(kept) == kept  # every output shows it as it is stored
    if len(safetext.visible(value)) <= limit and not line:
        assert kept == safetext.visible(value)


def test_stored_cuts_the_middle_and_says_how_much() -> None:
    kept = safetext.stored("a" * 100 + "b" * 100, 80)
    note = re.search(r" \[\.\.\. (\d+) characters cut \.\.\.\] ", kept)
    assert note is not None and kept.startswith("a" * 10) and kept.endswith("b" * 10)
    assert len(kept) - len(note.group()) + int(note.group(1)) == 200  # kept + cut: the whole


def test_unshown_names_the_first_character_the_store_escapes() -> None:
    assert safetext.unshown("plain µ × text\n\tok") is None
    assert safetext.unshown("ab\u202ecd") == 2
    assert safetext.unshown("a\nb", line=True) == 1
    assert safetext.stored("a\nb\tc", line=True) == "a\\x0ab\\x09c"
    assert safetext.stored("nul\x00 bad\udcff") == "nul\\x00 bad\\udcff"
