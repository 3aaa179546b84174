"""A capture file's bytes and its format (classic pcap or pcapng), recognised without numpy
(nor dataclasses: `virtbench parse pcap` starts with what it imports).

Shared by the per-packet reader (`virtbench.net_qos.pcap`) and the one-pass flow scanner
(`virtbench.net_qos.capture_scan`), so both accept and reject the same files with the same words.
"""

from __future__ import annotations

import mmap
import os
import stat
import struct
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple, TypeVar

from virtbench.compressed import DecompressedTooLarge, DecompressionError, decompress
from virtbench.errors import VirtbenchError

__all__ = ["CaptureFormat", "PcapError", "capture_format", "damage_text", "no_section_error",
           "read_capture"]

T = TypeVar("T")

MAX_DECOMPRESSED_BYTES = 2 << 30
"""A compressed capture is unpacked in memory (a plain one is mapped from disk): up to this
much, so a small compression bomb cannot take the machine's memory."""

_MAGIC_US = 0xA1B2C3D4
_MAGIC_NS = 0xA1B23C4D
_MAGIC_KUZNETSOV = 0xA1B2CD34  # Alexey Kuznetsov's patched libpcap: 8 more bytes per record
_PCAPNG_SHB = 0x0A0D0D0A
_GLOBAL_HEADER = 24

# Why a walk stopped early (index into _REASONS); 0 = reached the end cleanly.
_REASONS = ("", "the last record is cut short", "a record length is impossible",
            "a pcapng block is malformed", "a packet names an interface that was not described",
            "a pcapng section header has an unknown byte-order magic")
_EXPECTED = ("expected a classic pcap file (magic a1b2c3d4 or a1b23c4d, either byte order) or "
             "pcapng (0a0d0d0a), optionally gzip-, xz- or zstd-compressed")


class PcapError(VirtbenchError, ValueError):
    """The file is not a capture this reader knows; the message says what it found instead."""


class CaptureFormat(NamedTuple):
    """What a capture's first bytes say. For classic pcap: byte order, bytes per record header
    (24 for Kuznetsov's), ns per unit of the timestamp fraction, snap length and link type."""

    name: str  # "pcap", "pcap-ns" or "pcapng"
    big: bool = False
    record_header: int = 16
    scale: int = 1000
    snaplen: int = 0
    linktype: int = -1

    @property
    def pcapng(self) -> bool:
        return self.name == "pcapng"


def read_capture(path: Path, parse: Callable[[bytes | mmap.mmap], T]) -> T:
    """``parse`` of the file's bytes, its errors naming the file. The bytes are memory-mapped,
    not copied: reading 100 MB into a bytes object cost more than the whole analysis
    (BENCHMARKS.md, "capture analysis speed")."""
    try:
        with path.open("rb") as fh:
            st = os.fstat(fh.fileno())
            data: bytes | mmap.mmap = (  # a pipe (<(zcat f)) or an empty file cannot be mapped
                mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
                if stat.S_ISREG(st.st_mode) and st.st_size else fh.read())
    except OSError as exc:
        raise PcapError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        return parse(data)
    except PcapError as exc:
        raise PcapError(f"{path}: {exc}") from exc


def capture_format(buf: bytes | mmap.mmap) -> tuple[bytes | mmap.mmap, CaptureFormat]:
    """The capture's (decompressed) bytes and format; PcapError if it is not a capture."""
    try:
        buf, _compression = decompress(buf, limit=MAX_DECOMPRESSED_BYTES)
    except DecompressedTooLarge as exc:
        raise PcapError(f"{exc.kind}-compressed capture unpacks to more than "
                        f"{MAX_DECOMPRESSED_BYTES >> 30} GiB, more than is unpacked in memory; "
                        f"decompress it to a file first (read from disk, any size)") from None
    except DecompressionError as exc:
        raise PcapError(f"compressed capture is damaged ({exc.kind}: {exc.reason})") from None
    if len(buf) < 4:
        raise PcapError(f"not a capture file: only {len(buf)} bytes; {_EXPECTED}")
    (magic_le,) = struct.unpack_from("<I", buf, 0)
    (magic_be,) = struct.unpack_from(">I", buf, 0)
    if magic_le == _PCAPNG_SHB:
        return buf, CaptureFormat("pcapng")
    for magic, order in ((magic_le, "<"), (magic_be, ">")):
        if magic in (_MAGIC_US, _MAGIC_NS, _MAGIC_KUZNETSOV):
            if len(buf) < _GLOBAL_HEADER:
                raise PcapError(f"classic pcap header cut short: {len(buf)} of 24 bytes")
            _m, _vmaj, _vmin, _zone, _sig, snaplen, linkinfo = struct.unpack_from(
                order + "IHHiIII", buf, 0)
            return buf, CaptureFormat(
                "pcap-ns" if magic == _MAGIC_NS else "pcap", big=order == ">",
                record_header=24 if magic == _MAGIC_KUZNETSOV else 16,
                scale=1 if magic == _MAGIC_NS else 1000, snaplen=int(snaplen),
                linktype=linkinfo & 0xFFFF)  # upper bits: FCS length flags
    raise PcapError(f"not a capture file: starts with bytes {bytes(buf[:4]).hex()} "
                    f"({_sniff(bytes(buf[:64]))}); {_EXPECTED}")


def _sniff(buf: bytes) -> str:
    """A hint of what a non-capture file is, for the error message."""
    head = buf[:64].lstrip()
    if head[:1] in (b"{", b"["):
        return "looks like JSON"
    if all(32 <= c < 127 or c in (9, 10, 13) for c in head):
        return "looks like text"
    return "unknown binary format"


def damage_text(reason: int, at: int) -> str | None:
    """What stopped a walk (its reason code) at byte ``at``; None for an intact file."""
    return None if reason == 0 else f"{_REASONS[reason]} at byte {at}; read up to there"


def no_section_error(reason: int, at: int) -> PcapError:
    """A pcapng file whose first block could not be read."""
    return PcapError(f"pcapng file with no readable section: {damage_text(reason, at)}")
