"""Files a user hands to a command: read as text (also compressed or from stdin) and parsed,
with an error that names the file when either fails."""

from __future__ import annotations

import bz2
import gzip
import lzma
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from virtbench.model import VirtbenchError

__all__ = ["decompress", "parse_input", "read_input_bytes", "read_text_input"]

T = TypeVar("T")

# (magic bytes, name, decompressor): the formats Python reads without a dependency.
_COMPRESSED: tuple[tuple[bytes, str, Callable[[bytes], bytes]], ...] = (
    (b"\x1f\x8b", "gzip", gzip.decompress),
    (b"BZh", "bzip2", bz2.decompress),
    (b"\xfd7zXZ\x00", "xz", lzma.decompress),
)
# Recognised so the message can say what to do instead of "not UTF-8".
_UNSUPPORTED = ((b"\x28\xb5\x2f\xfd", "zstd", "zstd -d"), (b"PK\x03\x04", "zip", "unzip"))


def read_input_bytes(path: Path) -> bytes:
    """The bytes of ``path`` ('-' is stdin), decompressed if gzip, bzip2 or xz."""
    if str(path) == "-":
        raw = sys.stdin.buffer.read()
        source = "stdin"
    else:
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise VirtbenchError(f"cannot read {path}: {exc.strerror}") from exc
        source = str(path)
    return decompress(raw, source)


def decompress(raw: bytes, source: str) -> bytes:
    for magic, name, function in _COMPRESSED:
        if raw.startswith(magic):
            try:
                return function(raw)
            except (EOFError, OSError, ValueError, zlib.error, lzma.LZMAError) as exc:
                raise VirtbenchError(f"{source}: damaged or truncated {name} file ({exc})"
                                     ) from exc
    for magic, name, tool in _UNSUPPORTED:
        if raw.startswith(magic):
            raise VirtbenchError(f"{source} is {name}-compressed; decompress it first "
                                 f"({tool} {source})")
    return raw


def read_text_input(path: Path) -> str:
    """``read_input_bytes`` as UTF-8 text; a binary file is an error naming the file."""
    raw = read_input_bytes(path)
    try:
        return raw.decode()
    except UnicodeDecodeError as exc:
        raise VirtbenchError(f"{path}: not a text file (byte {exc.start} is not UTF-8)"
                             ) from exc


def parse_input(parse: Callable[[str], T], text: str, what: str, source: Path) -> T:
    """``parse(text)``; any failure is the input's fault, reported with the file's name.

    A parser rejects input it does not understand with ParseError; a parser that trips over
    input it did not foresee (a KeyError on a missing field) is still reporting a file it
    cannot read, so that is also bad input (``--debug`` shows where it tripped).
    """
    try:
        return parse(text)
    except (VirtbenchError, ValueError, KeyError, TypeError, IndexError, AttributeError
            ) as exc:
        reason = str(exc) if isinstance(exc, VirtbenchError | ValueError) else (
            f"{type(exc).__name__}: {exc}")
        raise VirtbenchError(f"{source}: not readable as {what} output: {reason}") from exc
