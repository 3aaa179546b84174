"""Compressed files a user hands over (irtt -o writes gzip, captures and logs are kept as .gz,
.xz or .zst, exports are gzip): recognised by their magic bytes, never by the file name, so a
renamed file or stdin works too. One helper for the parsers, the capture reader and the
portable result files; each caller words the error for its own input.

Each library is imported only when its format is met: a plain capture pays for none of them.
"""

from __future__ import annotations

import mmap
from typing import Any, overload

from virtbench.errors import VirtbenchError

__all__ = ["FORMATS", "DecompressedTooLarge", "DecompressionError", "compression_of",
           "decompress"]

_MAGIC = {"gzip": b"\x1f\x8b", "xz": b"\xfd7zXZ\x00", "zstd": b"\x28\xb5\x2f\xfd"}
_FIRST_BYTES = {magic[:1] for magic in _MAGIC.values()}
FORMATS = tuple(_MAGIC)
"""The compressions read, by the name :func:`decompress` reports."""


class DecompressionError(VirtbenchError, ValueError):
    """Compressed input that is damaged or cut off; ``kind`` names the compression."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(f"{kind}-compressed input is damaged or cut off ({reason})")
        self.kind = kind
        self.reason = reason


def compression_of(data: bytes | mmap.mmap) -> str:
    """'gzip', 'xz', 'zstd', or '' for input that is none of them."""
    head = bytes(data[:6])
    if head[:1] not in _FIRST_BYTES:  # plain text or a capture: one comparison per file
        return ""
    return next((kind for kind, magic in _MAGIC.items() if head.startswith(magic)), "")


class DecompressedTooLarge(VirtbenchError, ValueError):
    """Compressed input that unpacks to more than the caller's limit (a compression bomb, or
    the wrong file): found while unpacking, before more than ``limit`` bytes are held."""

    def __init__(self, kind: str, limit: int) -> None:
        super().__init__(f"{kind}-compressed input unpacks to more than {_size(limit)}")
        self.kind = kind
        self.limit = limit


def _size(count: int) -> str:
    return f"{count / 2**20:g} MiB" if count >= 2**20 else f"{count} bytes"


# Input is fed in steps small enough that one step cannot unpack far past the limit before it
# is checked, by each format's largest expansion: deflate at most ~1032:1 (64 KiB -> ~66 MiB),
# xz about 7000:1 on zeros (8 KiB -> ~56 MiB), zstd's RLE blocks far more (1 KiB -> ~32 MiB).
# An ordinary output of tens of KiB is one or two steps.
_STEP = {"gzip": 64 << 10, "xz": 8 << 10, "zstd": 1 << 10}


@overload
def decompress(data: bytes, *, limit: int) -> tuple[bytes, str]: ...
@overload
def decompress(data: mmap.mmap, *, limit: int) -> tuple[bytes | mmap.mmap, str]: ...


def decompress(data: bytes | mmap.mmap, *, limit: int) -> tuple[bytes | mmap.mmap, str]:
    """(plain bytes, compression name or '') for plain, gzip, xz or zstd input; plain input is
    returned as it is (an mmap stays an mmap, uncopied; the caller checks its size).
    Several gzip members, xz streams or zstd frames one after another are read as one stream,
    as ``zcat`` and ``zstdcat`` do. Compressed input that unpacks to more than ``limit`` bytes
    raises :class:`DecompressedTooLarge` as soon as it gets there."""
    kind = compression_of(data)
    if kind == "gzip":
        import zlib

        try:
            return _streams(data, lambda: zlib.decompressobj(wbits=31), kind, limit), kind
        except zlib.error as exc:
            raise DecompressionError(kind, str(exc)) from None
    if kind == "xz":
        import lzma

        try:
            return _streams(data, lzma.LZMADecompressor, kind, limit), kind
        except lzma.LZMAError as exc:
            raise DecompressionError(kind, str(exc)) from None
    if kind == "zstd":
        import zstandard

        try:
            return _streams(data, lambda: zstandard.ZstdDecompressor().decompressobj(), kind,
                            limit), kind
        except zstandard.ZstdError as exc:
            raise DecompressionError(kind, str(exc)) from None
    return data, ""


def _streams(data: bytes | mmap.mmap, start: Any, kind: str, limit: int) -> bytes:
    """Members (gzip), streams (xz) or frames (zstd) one after another, each read to its end:
    only a stream read to its end shows the input was not cut off."""
    out = bytearray()
    view = memoryview(data)
    size = _STEP[kind]
    at = 0
    while at < len(view):
        if kind == "gzip" and view[at] == 0 and not bytes(view[at:]).strip(b"\0"):
            break  # zero padding after the last member, as gzip itself accepts
        stream = start()
        while True:
            step = view[at:at + size]
            if not step:
                raise DecompressionError(kind, "no end of stream: the input is cut off")
            out += stream.decompress(step)
            if len(out) > limit:
                raise DecompressedTooLarge(kind, limit)
            if stream.eof:  # the next stream starts where this step's unused bytes begin
                at += len(step) - len(stream.unused_data)
                break
            at += len(step)
    return bytes(out)
