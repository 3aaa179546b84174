"""Stored and user text made safe to show: on a terminal, in rich markup, in Markdown, in CSV
and in JSON.

Names, descriptions, stop reasons, a failing command's stderr and imported files are data
written by someone else. Every printer passes them through one rule per kind of output:

- terminal: :func:`visible` shows control characters as escapes (``\\x1b``, ``\\x0d``,
  ``\\u202e``) instead of letting them act (retitle the window, move the cursor, overwrite a
  line, reverse text); :func:`markup` also escapes rich markup, for text interpolated into a
  rich markup string (``[/dev/sdz]`` printed as written, not read as a closing tag);
  :func:`text` is a rich ``Text`` (never read as markup) for table cells and lines;
  :func:`console` makes a rich console that does not turn ``:name:`` into emoji;
- Markdown: :func:`markdown_text` writes every character Markdown or HTML acts on as a
  numeric character reference, for the report, the gate's table and job summaries;
- CSV: :func:`csv_cell` neutralises a cell that a spreadsheet would run as a formula (OWASP:
  a leading ``'`` before ``= + - @``, tab or CR) and keeps numbers numbers; :func:`csv_document`
  writes rows with it;
- JSON: :func:`dumps` writes strict JSON (NaN and infinities as ``null``, ``allow_nan=False`` so
  a missed one raises) with control and format characters escaped as ``\\uXXXX``;
- the store: :func:`stored` is the one rule for text a result store keeps. Every write of the
  store applies it, `export` applies it again (to what an older store holds) and `import`
  accepts exactly what it yields (:func:`unshown` names the first character it would change).

Light on purpose: ``virtbench parse`` imports this on its fast path, so rich is imported only
by the functions that make rich objects.
"""

from __future__ import annotations

import json
import math
import numbers
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

__all__ = ["STORED_MAX_CHARS", "console", "csv_cell", "csv_document", "dumps",
           "finite_or_reason", "json_safe", "markdown_text", "markup", "stored", "text",
           "unshown", "visible"]

# Kept as they are: a line break and a tab lay text out and cannot act on the terminal.
_KEPT = frozenset("\n\t")


def _escape_char(ch: str) -> str:
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _is_shown(ch: str) -> bool:
    """Printable (Python's rule: not Cc, Cf, Cs, Co, Cn, Zl, Zp), a space of any kind, or a
    kept layout character."""
    return ch.isprintable() or ch in _KEPT or unicodedata.category(ch) == "Zs"


def visible(value: object) -> str:
    """``value`` as text whose every character shows as itself: control characters (C0 but
    line break and tab, DEL, C1), format characters (bidi overrides and isolates, zero-width
    characters), line and paragraph separators, lone surrogates, private-use and unassigned
    code points are written as Python-style escapes (ESC → ``\\x1b``, CR → ``\\x0d``,
    U+202E → ``\\u202e``). Everything else, including non-ASCII letters and symbols (µ, ×,
    ▁), is unchanged. A backslash stays a backslash.
    """
    s = value if isinstance(value, str) else str(value)
    if s.isprintable():  # the common case, checked in C
        return s
    return _NOT_PLAIN.sub(_shown_or_escaped, s)  # runs of plain ASCII skipped in C


_NOT_PLAIN = re.compile(r"[^\x20-\x7e\n\t]")


def _shown_or_escaped(match: re.Match[str]) -> str:
    ch = match.group()
    return ch if _is_shown(ch) else _escape_char(ch)


def unshown(value: str, *, line: bool = False) -> int | None:
    """The index of the first character of ``value`` that :func:`visible` would write as an
    escape (``line``: also a line break or tab), or None when it shows every one as itself."""
    if value.isprintable():
        return None
    return next((i for i, ch in enumerate(value)
                 if not _is_shown(ch) or (line and ch in _KEPT)), None)


# ---- the store -----------------------------------------------------------------------------

STORED_MAX_CHARS = 10_000_000
"""Longest text a store keeps in one field (a failed trial's stderr, an experiment file)."""


def stored(value: object, limit: int = STORED_MAX_CHARS, *, line: bool = False) -> str:
    """``value`` as a result store keeps it: :func:`visible` (every control, format, bidi,
    separator, surrogate, private-use or unassigned character written as its escape, so NUL is
    the four characters ``\\x00`` on SQLite and PostgreSQL alike, and ESC ``\\x1b``), then at
    most ``limit`` characters: a longer text keeps its beginning and its end (a failed
    command's last lines say most) around a note of how much was cut. Idempotent, so a run
    exported, imported and exported again is the same file; what it yields is what `import`
    accepts, and what every output shows (each applies :func:`visible` again, a no-op here).
    ``line``: one line (a name, a host), line breaks and tabs escaped too."""
    shown = visible(value)
    if line and ("\n" in shown or "\t" in shown):
        shown = shown.replace("\n", "\\x0a").replace("\t", "\\x09")
    if len(shown) <= limit:
        return shown
    keep = limit - len(_cut_note(len(shown)))  # the note is never longer than this one
    if keep < 2:
        return shown[:limit]
    head = keep // 2
    return shown[:head] + _cut_note(len(shown) - keep) + shown[len(shown) - (keep - head):]


def _cut_note(count: int) -> str:
    return f" [... {count:,} characters cut ...] "



def markup(value: object) -> str:
    """``value`` for interpolation into a rich markup string: :func:`visible`, then rich's
    markup escaped, so that ``[/]``, ``[bold]`` or ``[link=...]`` print as written."""
    shown = visible(value)
    # rich halves a run of backslashes before a tag (and an odd run escapes the tag): a
    # trailing run is doubled and closed by an empty tag, so that it prints as written whether
    # a tag or plain text follows (rich's own escape() is off by one there).
    body = shown.rstrip("\\")
    trailing = len(shown) - len(body)
    return _brackets_escaped(body) + ("\\" * (2 * trailing) + "[dim][/dim]" if trailing else "")


_BRACKET = re.compile(r"(\\*)\[")
_TAG_AT = re.compile(r"\[[a-z#/@][^[]*?]")  # what rich's markup parser takes for a tag


def _brackets_escaped(body: str) -> str:
    """Every ``[`` of ``body`` escaped for rich's markup. Before a tag, rich halves a run of
    backslashes and an odd run escapes the tag: the run is doubled, plus one. Before any other
    ``[``, rich drops one backslash: the run gets one more (rich's escape() leaves these alone,
    so ``a\\[`` printed as ``a[``)."""

    def escaped(match: re.Match[str]) -> str:
        slashes = match.group(1)
        if _TAG_AT.match(body, match.end() - 1):
            return slashes * 2 + "\\["
        return slashes + "\\["

    return _BRACKET.sub(escaped, body)


def text(value: object, style: str = "") -> Text:
    """``value`` as a rich ``Text`` (never parsed as markup), shown by :func:`visible`: for
    table cells, titles and lines of stored text."""
    from rich.text import Text

    return Text(visible(value), style=style)


def console(**kwargs: Any) -> Console:
    """A rich console for virtbench's output: ``:smile:`` in stored text stays text (emoji
    codes are replaced in markup strings, which :func:`markup` does not escape)."""
    from rich.console import Console

    return Console(emoji=False, **kwargs)


# Characters that Markdown (CommonMark, GitHub's tables, strikethrough, math, @mentions, #refs,
# :emoji:) or the HTML it lets through act on in the middle of a line. Written as numeric
# character references, which CommonMark reads as literal text, never as markup; a reference
# also keeps a `|` from ending a table cell wherever it stands (a backslash escape does not,
# after another backslash).
_MARKDOWN_ACTIVE = frozenset("\\`*_[]<>#|~&:$@")


def markdown_text(value: object) -> str:
    """``value`` as Markdown text that shows as written, for a PR comment or a job summary:
    :func:`visible`, each character Markdown or HTML acts on (``|``, backticks, ``<tag>``,
    ``[link](...)``, ``*``, ``&``, ``@name``, ...) as a numeric character reference
    (``&#124;``) and a line break as a space, so that a stored name cannot end a table cell or
    row, open a code span, a link, an image or an HTML tag, or mention anyone."""
    shown = visible(value).replace("\n", " ")
    return "".join(f"&#{ord(ch)};" if ch in _MARKDOWN_ACTIVE else ch for ch in shown)


# ---- CSV ---------------------------------------------------------------------------------

# OWASP "CSV injection": a cell starting with one of these is read as a formula by Excel,
# LibreOffice or Google Sheets (=, +, -, @; tab and CR are stripped before they look).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# A plain decimal number (what a spreadsheet reads as a number, not a formula): "-2.5", "+3",
# "-1e-05". "-2+3" or "-inf" are not.
# ASCII digits only, as virtbench.inputs.ascii_numbers reads a number (``\d`` takes "-١").
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def csv_cell(value: Any) -> Any:
    """One CSV cell as a spreadsheet may open it safely: a number stays a number (NaN and
    infinities become empty, as in JSON), text is :func:`visible` and, when it begins with
    ``= + - @``, tab or CR and is not a plain number, gets a leading ``'`` so that it is shown
    as text instead of being run as a formula."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, numbers.Real):
        return value if math.isfinite(value) else None
    s = visible(value)
    if s.startswith(_FORMULA_START) and not _NUMBER.fullmatch(s):
        return "'" + s
    return s


def csv_document(fieldnames: Sequence[str], rows: Iterable[Mapping[str, Any]], *,
                 lineterminator: str = "\r\n") -> str:
    """Rows (dicts keyed by ``fieldnames``) as CSV text with a header; every cell, header too,
    through :func:`csv_cell`. The one CSV writer of virtbench."""
    import csv
    import io

    out = io.StringIO()
    writer = csv.writer(out, lineterminator=lineterminator)
    writer.writerow([csv_cell(name) for name in fieldnames])
    for row in rows:
        writer.writerow([csv_cell(row.get(name)) for name in fieldnames])
    return out.getvalue()


# ---- JSON --------------------------------------------------------------------------------

def json_safe(value: Any) -> Any:
    """NaN and infinities (e.g. an undefined CI for n = 1) become ``None``: JSON has no NaN.
    Floats of other types (numpy's) become Python floats first."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):
        number = float(value)
        return number if math.isfinite(number) else None
    return value


def finite_or_reason(value: float | None, status: str) -> tuple[float | None, str]:
    """A measured value and its status as JSON shows them: a NaN or infinite value is ``None``
    and, where its status said ``ok``, the status says ``not_finite`` (why it is missing)."""
    if value is None or math.isfinite(value):
        return value, status
    return None, "not_finite" if status == "ok" else status


# In JSON text, outside strings, there are only printable ASCII characters, spaces and line
# breaks: any other character is inside a string, where \uXXXX stands for it.
_JSON_SUSPECT = re.compile(r"[^\x20-\x7e\n]")


def _json_escape(match: re.Match[str]) -> str:
    ch = match.group()
    if _is_shown(ch) and ch not in _KEPT:
        return ch
    code = ord(ch)
    if code >= 0x10000:  # a surrogate pair, as JSON spells a code point beyond the BMP
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def dumps(document: Any, *, indent: int | None = None) -> str:
    """``document`` as strict JSON (RFC 8259; ``json.loads`` with a ``parse_constant`` that
    refuses NaN reads it): non-finite numbers as ``null`` (:func:`json_safe`),
    ``allow_nan=False`` so that one missed raises instead of printing ``NaN``, objects JSON has
    no type for as their ``str``, and control or format characters inside strings (C1, bidi
    overrides, U+2028) escaped as ``\\uXXXX``, so that ``cat`` of the file shows them as text.
    Non-ASCII letters and symbols stay as they are (UTF-8)."""
    body = json.dumps(json_safe(document), indent=indent, default=str, allow_nan=False,
                      ensure_ascii=False)
    return _JSON_SUSPECT.sub(_json_escape, body)
