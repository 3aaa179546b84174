"""Compressed files a user hands over (irtt -o writes gzip, captures and logs are kept as .gz,
.xz or .zst, exports are gzip): recognised by their magic bytes, never by the file name, so a
renamed file or stdin works too. One helper for the parsers, the capture reader and the
portable result files; each caller words the error for its own input.

Each library is imported only when its format is met: a plain capture pays for none of them.
"""

from __future__ import annotations

import mmap
from typing import overload

from virtbench.errors import VirtbenchError

__all__ = ["FORMATS", "DecompressionError", "compression_of", "decompress"]

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


@overload
def decompress(data: bytes) -> tuple[bytes, str]: ...
@overload
def decompress(data: mmap.mmap) -> tuple[bytes | mmap.mmap, str]: ...


def decompress(data: bytes | mmap.mmap) -> tuple[bytes | mmap.mmap, str]:
    """(plain bytes, compression name or '') for plain, gzip, xz or zstd input; plain input is
    returned as it is (an mmap stays an mmap, uncopied). Several gzip members or zstd frames
    one after another are read as one stream, as ``zcat`` and ``zstdcat`` do."""
    kind = compression_of(data)
    if kind == "gzip":
        import gzip
        import zlib

        try:
            return gzip.decompress(data), kind
        except (EOFError, OSError, zlib.error) as exc:
            raise DecompressionError(kind, str(exc)) from None
    if kind == "xz":
        import lzma

        try:
            return lzma.decompress(data), kind
        except (EOFError, lzma.LZMAError) as exc:
            raise DecompressionError(kind, str(exc)) from None
    if kind == "zstd":
        return _zstd(data), kind
    return data, ""


def _zstd(data: bytes | mmap.mmap) -> bytes:
    import zstandard

    out: list[bytes] = []
    rest = memoryview(data)  # an mmap read in place; unused_data is bytes
    try:
        while rest:
            # Frame by frame: a frame written by `zstd` from a pipe carries no content size,
            # and only a frame read to its end (eof) shows the input was not cut off.
            frame = zstandard.ZstdDecompressor().decompressobj()
            out.append(frame.decompress(rest))
            if not frame.eof:
                raise DecompressionError("zstd", "no end of frame")
            rest = memoryview(frame.unused_data)
    except zstandard.ZstdError as exc:
        raise DecompressionError("zstd", str(exc)) from None
    return b"".join(out)
