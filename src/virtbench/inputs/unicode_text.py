"""Text a user hands over that virtbench passes on (to a database, a library, a child's argv):
one rule for what counts as text, for command-line values, experiment files and run
references alike.

Python represents some things as ``str`` that are not text anywhere else:

- a byte of the command line (or of an environment variable) that is not UTF-8 (``$'\\xff'``)
  arrives as a lone surrogate U+DC80-U+DCFF (PEP 383): no UTF-8 encoder writes it, so SQLite,
  PostgreSQL, libvirt and JSON files refuse it;
- a ``\\ud800`` escape in JSON or YAML is half of a UTF-16 pair, a lone surrogate too
  (a whole pair is one character: :func:`join_surrogate_pairs`);
- NUL (``\\u0000`` in a file) ends a C string: PostgreSQL's text, libvirt and ``execve`` refuse
  it (SQLite stores it).

:func:`text_problem` says which of these a value holds (None: it is text), in words a user can
act on; callers turn that into their own one-line error naming the field.
"""

from __future__ import annotations

import re

__all__ = ["is_text", "join_surrogate_pairs", "text_problem"]

_NOT_TEXT = re.compile("[\x00\ud800-\udfff]")


def text_problem(value: str, decoded_from: str | None = None) -> str | None:
    """What in ``value`` is not text (the first such character), or None when it is text.
    ``decoded_from``: the encoding ``value`` was decoded from with ``surrogateescape`` (the
    command line's, ``sys.getfilesystemencoding()``), whose undecodable bytes are then named
    as bytes."""
    found = _NOT_TEXT.search(value)
    if found is None:
        return None
    ch = found.group()
    where = f"character {found.start() + 1}"
    if ch == "\x00":
        return f"{where} is NUL, which text cannot hold"
    code = ord(ch)
    if decoded_from is not None and 0xDC80 <= code <= 0xDCFF:  # an undecodable byte (PEP 383)
        return f"{where} is the byte 0x{code - 0xDC00:02x}, which is not {decoded_from.upper()}"
    return f"{where} is a lone surrogate \\u{code:04x} (half of a UTF-16 pair), not a character"


def is_text(value: str) -> bool:
    """True when ``value`` holds no NUL and no lone surrogate (:func:`text_problem`)."""
    return _NOT_TEXT.search(value) is None


def join_surrogate_pairs(value: str) -> str:
    """``value`` with each UTF-16 surrogate pair as the one character it stands for: JSON
    writes a character beyond U+FFFF as two escapes (U+1F600 as ``"\\ud83d\\ude00"``, as
    ``json.dumps`` does), which YAML's parser keeps as two lone surrogates. A lone surrogate
    stays one (:func:`text_problem` then names it)."""
    if is_text(value):
        return value
    return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
