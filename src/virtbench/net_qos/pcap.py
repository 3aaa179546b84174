"""Fast reader of capture files: classic pcap and pcapng, timestamps, lengths and packet offsets.

Reads what tcpdump, dumpcap and Wireshark write: classic pcap (µs and ns magic, either byte
order, Kuznetsov's modified records), pcapng (sections of either byte order, several interfaces
each with its own `if_tsresol`/`if_tsoffset`, enhanced, simple and obsolete packet blocks),
plain or compressed with gzip, xz or zstd (`virtbench.compressed`). Walking variable-length
records is sequential, so the walk is one compiled loop (`virtbench.net_qos.compiled`); counts
and bytes equal tshark's (`frame.len` is a record's original length).

A file cut short or corrupted part-way is read up to the last intact record and marked
(`PcapRecords.damage` says where and why); a file that is not a capture raises `PcapError`.
"""

from __future__ import annotations

import mmap
import os
import stat
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from virtbench.compressed import DecompressionError, decompress
from virtbench.model import VirtbenchError
from virtbench.net_qos.compiled import kernels

__all__ = ["PcapError", "PcapRecords", "parse_pcap", "read_pcap"]

_MAGIC_US = 0xA1B2C3D4
_MAGIC_NS = 0xA1B23C4D
_MAGIC_KUZNETSOV = 0xA1B2CD34  # Alexey Kuznetsov's patched libpcap: 8 more bytes per record
_PCAPNG_SHB = 0x0A0D0D0A
_BYTE_ORDER_MAGIC = 0x1A2B3C4D
_GLOBAL_HEADER = 24
_MAX_INTERFACES = 1 << 16

# Why a walk stopped early (index into _REASONS); 0 = reached the end cleanly.
_REASONS = ("", "the last record is cut short", "a record length is impossible",
            "a pcapng block is malformed", "a packet names an interface that was not described",
            "a pcapng section header has an unknown byte-order magic")
_EXPECTED = ("expected a classic pcap file (magic a1b2c3d4 or a1b23c4d, either byte order) or "
             "pcapng (0a0d0d0a), optionally gzip-, xz- or zstd-compressed")


class PcapError(VirtbenchError, ValueError):
    """The file is not a capture this reader knows; the message says what it found instead."""


@dataclass(frozen=True)
class PcapRecords:
    """Per-packet arrays of one capture, in file order.

    ``ts_ns``: capture timestamp in ns since the epoch (``NO_TIME`` for pcapng simple packet
    blocks, which carry none); ``orig_len``: bytes on the wire (tshark's frame.len);
    ``cap_len``: bytes stored; ``data_off``: where the stored bytes start in ``data``;
    ``iface``: index into ``if_linktype`` (one entry per interface, all sections numbered in
    turn; classic pcap has one). ``damage`` is None for an intact file, else what stopped the
    walk and at which byte: the arrays then hold every record before it.
    """

    ts_ns: npt.NDArray[np.int64]
    orig_len: npt.NDArray[np.int64]
    cap_len: npt.NDArray[np.int64]
    data_off: npt.NDArray[np.int64]
    iface: npt.NDArray[np.int32]
    if_linktype: npt.NDArray[np.int32]
    snaplen: int
    linktype: int
    data: npt.NDArray[np.uint8]
    format: str
    damage: str | None = None

    NO_TIME = np.iinfo(np.int64).min

    @property
    def packets(self) -> int:
        return int(self.ts_ns.size)

    @property
    def bytes(self) -> int:
        return int(self.orig_len.sum())


def read_pcap(path: str | Path) -> PcapRecords:
    """Read a capture file from disk (see :func:`parse_pcap`); errors name the file.

    The file is memory-mapped, not copied: reading 100 MB into a bytes object cost more than
    the whole analysis (BENCHMARKS.md, "capture analysis speed").
    """
    path = Path(path)
    try:
        with path.open("rb") as fh:
            st = os.fstat(fh.fileno())
            data: bytes | mmap.mmap = (  # a pipe (<(zcat f)) or an empty file cannot be mapped
                mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
                if stat.S_ISREG(st.st_mode) and st.st_size else fh.read())
    except OSError as exc:
        raise PcapError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        return parse_pcap(data)
    except PcapError as exc:
        raise PcapError(f"{path}: {exc}") from exc


def parse_pcap(buf: bytes | mmap.mmap) -> PcapRecords:
    """Parse a classic pcap or pcapng capture (possibly gzip/xz/zstd-compressed) held in memory."""
    try:
        buf, _compression = decompress(buf)
    except DecompressionError as exc:
        raise PcapError(f"compressed capture is damaged ({exc.kind}: {exc.reason})") from None
    if len(buf) < 4:
        raise PcapError(f"not a capture file: only {len(buf)} bytes; {_EXPECTED}")
    (magic_le,) = struct.unpack_from("<I", buf, 0)
    (magic_be,) = struct.unpack_from(">I", buf, 0)
    arr = np.frombuffer(buf, dtype=np.uint8)
    if magic_le == _PCAPNG_SHB:
        return _pcapng(arr)
    for magic, order in ((magic_le, "<"), (magic_be, ">")):
        if magic in (_MAGIC_US, _MAGIC_NS, _MAGIC_KUZNETSOV):
            return _classic(arr, magic, order)
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


def _classic(arr: npt.NDArray[np.uint8], magic: int, order: str) -> PcapRecords:
    if arr.size < _GLOBAL_HEADER:
        raise PcapError(f"classic pcap header cut short: {arr.size} of 24 bytes")
    _m, _vmaj, _vmin, _zone, _sig, snaplen, linkinfo = struct.unpack_from(
        order + "IHHiIII", arr.data, 0)
    record_header = 24 if magic == _MAGIC_KUZNETSOV else 16
    scale = 1 if magic == _MAGIC_NS else 1000
    big = order == ">"
    ts, orig, cap, off = _arrays((arr.size - _GLOBAL_HEADER) // record_header + 1)
    n, end, reason = kernels().walk_classic(arr, big, record_header, True, ts, orig, cap, off,
                                            scale)
    ts, orig, cap, off = ts[:n], orig[:n], cap[:n], off[:n]
    linktype = linkinfo & 0xFFFF  # upper bits: FCS length flags
    return PcapRecords(
        ts_ns=ts, orig_len=orig, cap_len=cap, data_off=off, iface=np.zeros(n, np.int32),
        if_linktype=np.array([linktype], np.int32), snaplen=int(snaplen), linktype=linktype,
        data=arr, format="pcap-ns" if magic == _MAGIC_NS else "pcap",
        damage=_damage(reason, end))


def _arrays(most: int) -> tuple[npt.NDArray[np.int64], ...]:
    """Four arrays for at most ``most`` packets, filled in one walk and then cut to size: the
    operating system backs only the pages written, so the unused tail costs no memory."""
    return tuple(np.empty(most, np.int64) for _ in range(4))


def _damage(reason: int, at: int) -> str | None:
    return None if reason == 0 else f"{_REASONS[reason]} at byte {at}; read up to there"


def _pcapng(arr: npt.NDArray[np.uint8]) -> PcapRecords:
    if_link = np.zeros(_MAX_INTERFACES, np.int32)
    if_snap = np.zeros(_MAX_INTERFACES, np.int64)
    most = arr.size // 16 + 1  # the smallest packet block has 16 bytes
    ts, orig, cap, off = _arrays(most)
    iface = np.empty(most, np.int32)
    n, n_if, end, reason = kernels().walk_pcapng(arr, True, if_link, if_snap, ts, orig, cap, off,
                                                 iface)
    ts, orig, cap, off, iface = ts[:n], orig[:n], cap[:n], off[:n], iface[:n]
    if n_if == 0 and n == 0 and reason != 0:
        raise PcapError(f"pcapng file with no readable section: {_damage(reason, end)}")
    links = if_link[:n_if].copy()
    return PcapRecords(
        ts_ns=ts, orig_len=orig, cap_len=cap, data_off=off, iface=iface, if_linktype=links,
        snaplen=int(if_snap[:n_if].max()) if n_if else 0,
        linktype=int(links[0]) if n_if else -1, data=arr, format="pcapng",
        damage=_damage(reason, end))


