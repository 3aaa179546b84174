"""Compressed tool outputs (irtt -o writes gzip; users keep logs as .xz or .zst): recognised by
their magic bytes, never by the file name, so a renamed file or stdin works too."""

from __future__ import annotations

import gzip
import lzma
import zlib

import zstandard

from virtbench.parsers.base import ParseError

__all__ = ["decompress"]

_GZIP = b"\x1f\x8b"
_XZ = b"\xfd7zXZ\x00"
_ZSTD = b"\x28\xb5\x2f\xfd"


def _zstd(data: bytes) -> bytes:
    # A streaming decompressor: frames written by `zstd` from a pipe carry no content size.
    out = zstandard.ZstdDecompressor().decompressobj()
    result = out.decompress(data)
    if not out.eof:
        raise ParseError("zstd-compressed input is cut off (no end of frame)")
    return result


def decompress(data: bytes) -> tuple[bytes, str]:
    """(plain bytes, compression name or '') for plain, gzip, xz or zstd input."""
    try:
        if data.startswith(_GZIP):
            return gzip.decompress(data), "gzip"
        if data.startswith(_XZ):
            return lzma.decompress(data), "xz"
        if data.startswith(_ZSTD):
            return _zstd(data), "zstd"
    except (EOFError, OSError, zlib.error, lzma.LZMAError, zstandard.ZstdError) as exc:
        kind = "gzip" if data.startswith(_GZIP) else "xz" if data.startswith(_XZ) else "zstd"
        raise ParseError(
            f"{kind}-compressed input is damaged or cut off ({exc})") from None
    return data, ""
