"""Fast reader of classic pcap files (as written by ``dumpcap -P``): timestamps and lengths only.

Speed comes from treating runs of records with the same captured length as one strided numpy
view (a capture with a snap length is mostly such runs); mixed stretches fall back to a plain
loop. Counts and bytes equal tshark's (`frame.len` is the record's original length).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

__all__ = ["PcapError", "PcapRecords", "parse_pcap", "read_pcap"]

_MAGIC_US = 0xA1B2C3D4
_MAGIC_NS = 0xA1B23C4D
_PCAPNG = 0x0A0D0D0A
_GLOBAL_HEADER = 24
_RECORD_HEADER = 16


class PcapError(ValueError):
    """The file is not a classic little-endian pcap file, or it is truncated mid-header."""


@dataclass(frozen=True)
class PcapRecords:
    """Per-packet arrays of one capture, in file order.

    ``ts_ns``: capture timestamp in ns since the epoch; ``orig_len``: bytes on the wire (what
    tshark calls frame.len); ``cap_len``: bytes stored (≤ snap length).
    """

    ts_ns: npt.NDArray[np.int64]
    orig_len: npt.NDArray[np.int64]
    cap_len: npt.NDArray[np.int64]
    snaplen: int
    linktype: int

    @property
    def packets(self) -> int:
        return int(self.ts_ns.size)

    @property
    def bytes(self) -> int:
        return int(self.orig_len.sum())


def read_pcap(path: str | Path) -> PcapRecords:
    """Read a pcap file from disk (see :func:`parse_pcap`)."""
    return parse_pcap(Path(path).read_bytes())


def _record_offsets(buf: bytes) -> npt.NDArray[np.int64]:
    """Byte offset of every record header, found by walking the caplen chain."""
    size = len(buf)
    starts: list[int] = []  # run starts
    strides: list[int] = []
    counts: list[int] = []
    caplen_at = struct.Struct("<I").unpack_from
    off = _GLOBAL_HEADER
    probe = 16  # how many records the next vectorised run check looks ahead
    while off + _RECORD_HEADER <= size:
        (cap,) = caplen_at(buf, off + 8)
        stride = _RECORD_HEADER + cap
        room = (size - off) // stride
        look = min(probe, room)
        if look >= 8:
            view: npt.NDArray[np.uint32] = np.ndarray(
                shape=(look,), dtype="<u4", buffer=buf, offset=off + 8, strides=(stride,)
            )
            bad = np.flatnonzero(view != cap)
            run = int(bad[0]) if bad.size else look
            probe = min(probe * 4, 1 << 20) if run == look else 16
        else:
            run = 1
        if run > 1:
            starts.append(off)
            strides.append(stride)
            counts.append(run)
            off += run * stride
            continue
        # Mixed lengths: walk a stretch record by record, cheaper than numpy calls per record.
        for _ in range(32):
            if off + _RECORD_HEADER > size:
                break
            (cap,) = caplen_at(buf, off + 8)
            starts.append(off)
            strides.append(0)
            counts.append(1)
            off += _RECORD_HEADER + cap
    if off > size:
        raise PcapError(f"truncated pcap: last record ends at byte {off}, file has {size}")
    if not counts:
        return np.zeros(0, dtype=np.int64)
    c = np.asarray(counts, dtype=np.int64)
    s = np.asarray(starts, dtype=np.int64)
    st = np.asarray(strides, dtype=np.int64)
    run_of = np.repeat(np.arange(c.size), c)
    first_index = np.cumsum(c) - c
    within = np.arange(int(c.sum()), dtype=np.int64) - first_index[run_of]
    return (s[run_of] + within * st[run_of]).astype(np.int64)


def parse_pcap(buf: bytes) -> PcapRecords:
    """Parse a classic pcap (µs or ns timestamps, little-endian) held in memory."""
    if len(buf) < _GLOBAL_HEADER:
        raise PcapError(f"not a pcap file: {len(buf)} bytes is shorter than the 24-byte header")
    magic, _vmaj, _vmin, _zone, _sig, snaplen, linktype = struct.unpack_from("<IHHiIII", buf, 0)
    if magic == _PCAPNG:
        raise PcapError("this is a pcapng file; capture with 'dumpcap -P' (classic pcap)")
    if magic not in (_MAGIC_US, _MAGIC_NS):
        raise PcapError(f"not a little-endian pcap file (magic 0x{magic:08x})")
    offsets = _record_offsets(buf)
    arr = np.frombuffer(buf, dtype=np.uint8)
    # One gather of every 16-byte record header, then read as 4 little-endian uint32 words.
    headers = arr[offsets[:, None] + np.arange(_RECORD_HEADER, dtype=np.int64)]
    words = headers.view("<u4").astype(np.int64)
    scale = 1 if magic == _MAGIC_NS else 1000
    return PcapRecords(
        ts_ns=words[:, 0] * 1_000_000_000 + words[:, 1] * scale,
        orig_len=words[:, 3],
        cap_len=words[:, 2],
        snaplen=int(snaplen),
        linktype=int(linktype),
    )
