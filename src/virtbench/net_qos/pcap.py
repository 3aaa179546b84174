"""Fast reader of capture files: classic pcap and pcapng, timestamps, lengths and packet offsets.

Reads what tcpdump, dumpcap and Wireshark write: classic pcap (µs and ns magic, either byte
order, Kuznetsov's modified records), pcapng (sections of either byte order, several interfaces
each with its own `if_tsresol`/`if_tsoffset`, enhanced, simple and obsolete packet blocks),
plain or compressed with gzip or xz. Walking variable-length records is sequential, so the walk
is one numba-compiled loop (`cache=True`: compiled once per machine); counts and bytes equal
tshark's (`frame.len` is a record's original length).

A file cut short or corrupted part-way is read up to the last intact record and marked
(`PcapRecords.damage` says where and why); a file that is not a capture raises `PcapError`.
"""

from __future__ import annotations

import gzip
import lzma
import mmap
import os
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from numba import njit

from virtbench.model import VirtbenchError

__all__ = ["PcapError", "PcapRecords", "parse_pcap", "read_pcap"]

_MAGIC_US = 0xA1B2C3D4
_MAGIC_NS = 0xA1B23C4D
_MAGIC_KUZNETSOV = 0xA1B2CD34  # Alexey Kuznetsov's patched libpcap: 8 more bytes per record
_PCAPNG_SHB = 0x0A0D0D0A
_BYTE_ORDER_MAGIC = 0x1A2B3C4D
_GLOBAL_HEADER = 24
_MAX_RECORD = 1 << 28  # a bigger record length can only be corruption (libpcap caps at 256 KiB)
_MAX_INTERFACES = 1 << 16

# Why a walk stopped early (index into _REASONS); 0 = reached the end cleanly.
_REASONS = ("", "the last record is cut short", "a record length is impossible",
            "a pcapng block is malformed", "a packet names an interface that was not described",
            "a pcapng section header has an unknown byte-order magic")
_EXPECTED = ("expected a classic pcap file (magic a1b2c3d4 or a1b23c4d, either byte order) or "
             "pcapng (0a0d0d0a), optionally gzip- or xz-compressed")


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
            size = os.fstat(fh.fileno()).st_size
            data: bytes | mmap.mmap = (
                mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if size else b"")
    except OSError as exc:
        raise PcapError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        return parse_pcap(data)
    except PcapError as exc:
        raise PcapError(f"{path}: {exc}") from exc


def parse_pcap(buf: bytes | mmap.mmap) -> PcapRecords:
    """Parse a classic pcap or pcapng capture (possibly gzip/xz-compressed) held in memory."""
    buf = _decompress(buf)
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


def _decompress(buf: bytes | mmap.mmap) -> bytes | mmap.mmap:
    try:
        if buf[:2] == b"\x1f\x8b":
            return gzip.decompress(buf)
        if buf[:6] == b"\xfd7zXZ\x00":
            return lzma.decompress(buf)
    except (OSError, EOFError, lzma.LZMAError) as exc:
        raise PcapError(f"compressed capture is damaged: {exc}") from exc
    if buf[:4] == b"\x28\xb5\x2f\xfd":
        raise PcapError("zstd-compressed capture: decompress it first (zstd -d FILE)")
    return buf


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
    none = np.empty(0, np.int64)
    n, _end, _reason = _walk_classic(arr, big, record_header, False, none, none, none, none, 0)
    ts, orig, cap, off = (np.empty(n, np.int64) for _ in range(4))
    _n, end, reason = _walk_classic(arr, big, record_header, True, ts, orig, cap, off, scale)
    linktype = linkinfo & 0xFFFF  # upper bits: FCS length flags
    return PcapRecords(
        ts_ns=ts, orig_len=orig, cap_len=cap, data_off=off, iface=np.zeros(n, np.int32),
        if_linktype=np.array([linktype], np.int32), snaplen=int(snaplen), linktype=linktype,
        data=arr, format="pcap-ns" if magic == _MAGIC_NS else "pcap",
        damage=_damage(reason, end))


def _damage(reason: int, at: int) -> str | None:
    return None if reason == 0 else f"{_REASONS[reason]} at byte {at}; read up to there"


@njit(cache=True, nogil=True, inline="always")
def _u32(b, o, big):  # type: ignore[no-untyped-def]
    if big:
        return (np.int64(b[o]) << 24) | (np.int64(b[o + 1]) << 16) | (np.int64(b[o + 2]) << 8) \
            | np.int64(b[o + 3])
    return (np.int64(b[o + 3]) << 24) | (np.int64(b[o + 2]) << 16) | (np.int64(b[o + 1]) << 8) \
        | np.int64(b[o])


@njit(cache=True, nogil=True, inline="always")
def _u16(b, o, big):  # type: ignore[no-untyped-def]
    if big:
        return (np.int64(b[o]) << 8) | np.int64(b[o + 1])
    return (np.int64(b[o + 1]) << 8) | np.int64(b[o])


@njit(cache=True, nogil=True)
def _walk_classic(b, big, hdr, fill, ts, orig, cap, off, scale):  # type: ignore[no-untyped-def]
    """Count the records or (``fill``) fill the arrays; returns (n, stop byte, reason)."""
    size = b.size
    o = 24
    n = 0
    while o + hdr <= size:
        c = _u32(b, o + 8, big)
        if c > _MAX_RECORD:
            return n, o, 2
        if o + hdr + c > size:
            return n, o, 1
        if fill:
            if n >= ts.size:
                break
            ts[n] = _u32(b, o, big) * 1_000_000_000 + _u32(b, o + 4, big) * scale
            cap[n] = c
            orig[n] = _u32(b, o + 12, big)
            off[n] = o + hdr
        n += 1
        o += hdr + c
    if o < size:
        return n, o, 1
    return n, o, 0


def _pcapng(arr: npt.NDArray[np.uint8]) -> PcapRecords:
    if_link = np.zeros(_MAX_INTERFACES, np.int32)
    if_snap = np.zeros(_MAX_INTERFACES, np.int64)
    none = np.empty(0, np.int64)
    n, n_if, _end, _reason = _walk_pcapng(arr, False, if_link, if_snap, none, none, none, none,
                                          np.empty(0, np.int32))
    ts, orig, cap, off = (np.empty(n, np.int64) for _ in range(4))
    iface = np.empty(n, np.int32)
    _n, n_if, end, reason = _walk_pcapng(arr, True, if_link, if_snap, ts, orig, cap, off, iface)
    if n_if == 0 and n == 0 and reason != 0:
        raise PcapError(f"pcapng file with no readable section: {_damage(reason, end)}")
    links = if_link[:n_if].copy()
    return PcapRecords(
        ts_ns=ts, orig_len=orig, cap_len=cap, data_off=off, iface=iface, if_linktype=links,
        snaplen=int(if_snap[:n_if].max()) if n_if else 0,
        linktype=int(links[0]) if n_if else -1, data=arr, format="pcapng",
        damage=_damage(reason, end))


@njit(cache=True, nogil=True)
def _ts_to_ns(units, res, offset_s):  # type: ignore[no-untyped-def]
    """pcapng timestamp units → ns: res is if_tsresol (MSB set: 2^-x s, else 10^-x s)."""
    if res & 0x80:
        shift = res & 0x7F
        if shift == 0:
            whole = units
            frac = 0
        else:
            whole = units >> shift
            frac = ((units & ((np.int64(1) << shift) - 1)) * 1_000_000_000) >> shift
        return (whole + offset_s) * 1_000_000_000 + frac
    if res <= 9:
        return units * 10 ** (9 - res) + offset_s * 1_000_000_000
    return units // 10 ** (res - 9) + offset_s * 1_000_000_000


@njit(cache=True, nogil=True)
def _walk_pcapng(b, fill, if_link, if_snap, ts, orig, cap, off, iface):  # type: ignore[no-untyped-def]
    """Count packets or (``fill``) fill the arrays; returns (n, interfaces, stop, reason).

    Interfaces of all sections are numbered in turn; a section's own ids are relative to
    ``base``, the number of interfaces before it.
    """
    size = b.size
    if_res = np.full(if_link.size, 6, np.int64)
    if_offset = np.zeros(if_link.size, np.int64)
    o = 0
    n = 0
    n_if = 0
    base = 0
    big = False
    while o + 12 <= size:
        btype = _u32(b, o, big)
        if btype == 0x0A0D0D0A:  # section header: settles the byte order of what follows
            bom = _u32(b, o + 8, False)
            if bom == 0x1A2B3C4D:
                big = False
            elif bom == 0x4D3C2B1A:
                big = True
            else:
                return n, n_if, o, 5
            base = n_if
        blen = _u32(b, o + 4, big)
        if blen < 12 or blen % 4 != 0 or blen > _MAX_RECORD:
            return n, n_if, o, 3
        if o + blen > size:
            return n, n_if, o, 1
        if _u32(b, o + blen - 4, big) != blen:
            return n, n_if, o, 3
        body = o + 8
        body_end = o + blen - 4
        if btype == 1:  # interface description
            if blen < 20 or n_if >= if_link.size:
                return n, n_if, o, 3
            if_link[n_if] = _u16(b, body, big)
            if_snap[n_if] = _u32(b, body + 4, big)
            p = body + 8
            while p + 4 <= body_end:  # options: if_tsresol (9), if_tsoffset (14)
                code = _u16(b, p, big)
                olen = _u16(b, p + 2, big)
                if code == 0 or p + 4 + olen > body_end:
                    break
                if code == 9 and olen >= 1:
                    if_res[n_if] = b[p + 4]
                elif code == 14 and olen >= 8:
                    hi = _u32(b, p + 4, big)
                    lo = _u32(b, p + 8, big)
                    if_offset[n_if] = (hi << 32) | lo if big else (lo << 32) | hi
                p += 4 + ((olen + 3) // 4) * 4
            n_if += 1
        elif btype == 6 or btype == 2:  # enhanced packet / obsolete packet block
            if blen < 32:
                return n, n_if, o, 3
            local = _u32(b, body, big) if btype == 6 else _u16(b, body, big)
            c = _u32(b, body + 12, big)
            if c > blen - 32:
                return n, n_if, o, 3
            g = base + local
            if g >= n_if:
                return n, n_if, o, 4
            if fill:
                if n >= ts.size:
                    break
                units = (_u32(b, body + 4, big) << 32) | _u32(b, body + 8, big)
                ts[n] = _ts_to_ns(units, if_res[g], if_offset[g])
                orig[n] = _u32(b, body + 16, big)
                cap[n] = c
                off[n] = body + 20
                iface[n] = g
            n += 1
        elif btype == 3:  # simple packet: no timestamp, interface 0 of the section
            if blen < 16:
                return n, n_if, o, 3
            if base >= n_if:
                return n, n_if, o, 4
            wire = _u32(b, body, big)
            c = min(wire, blen - 16)
            if if_snap[base] > 0:
                c = min(c, if_snap[base])
            if fill:
                if n >= ts.size:
                    break
                ts[n] = -9223372036854775807 - 1
                orig[n] = wire
                cap[n] = c
                off[n] = body + 4
                iface[n] = base
            n += 1
        o += blen
    if o < size:
        return n, n_if, o, 1
    return n, n_if, o, 0
