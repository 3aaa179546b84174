"""Content-Disposition for downloads whose names come from stored text (RFC 6266).

A run id, experiment name or any text from the store is reduced to a safe file name: no path
separator, no control character, no quote, bounded length. The header carries an ASCII
fallback (`filename="..."`, letters, digits, `.`, `_`, `-`) and, when the name has other
characters, the UTF-8 name percent-encoded (`filename*=UTF-8''...`, RFC 5987). Either way the
header is printable ASCII: stored CR/LF can never split it.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import quote

__all__ = ["MAX_NAME", "content_disposition", "safe_name"]

MAX_NAME = 100
"""Longest file name stem, in characters (the extension is added after it)."""

_ASCII_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_UNSAFE = re.compile(r"[\\/:*?\"<>|%;,]")


def safe_name(text: str) -> str:
    """``text`` as a file name stem: printable, no separators or quotes, not hidden, bounded;
    "download" when no letter or digit is left."""
    printable = "".join(c if unicodedata.category(c)[0] not in "CZ" or c == " " else "_"
                        for c in unicodedata.normalize("NFC", text))
    name = _UNSAFE.sub("_", printable).strip(" .")[:MAX_NAME]
    return name if any(c.isalnum() for c in name) else "download"


def content_disposition(text: str, extension: str) -> str:
    """``attachment`` with the safe name of ``text`` and ``extension`` (``json.gz``, ``csv``)."""
    name = f"{safe_name(text)}.{extension}"
    fallback = _ASCII_UNSAFE.sub("_", name)
    header = f'attachment; filename="{fallback}"'
    if fallback != name:
        header += f"; filename*=UTF-8''{quote(name, safe='')}"
    return header
