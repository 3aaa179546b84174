"""Fast reader of capture files: classic pcap and pcapng, timestamps, lengths and packet offsets.

Reads what tcpdump, dumpcap and Wireshark write: classic pcap (µs and ns magic, either byte
order, Kuznetsov's modified records), pcapng (sections of either byte order, several interfaces
each with its own `if_tsresol`/`if_tsoffset`, enhanced, simple and obsolete packet blocks),
plain or compressed with gzip, xz or zstd (`virtbench.compressed`). Walking variable-length
records is sequential, so the walk is one compiled loop (`virtbench.net_qos.compiled`); counts
and bytes equal tshark's (`frame.len` is a record's original length).

A file cut short or corrupted part-way is read up to the last intact record and marked
(`PcapRecords.damage` says where and why); a file that is not a capture raises `PcapError`.
This is the labs' reader (per-packet arrays); `virtbench parse pcap` needs only per-flow sums
and gets them from one pass of C (`virtbench.net_qos.capture_scan`), without numpy.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from virtbench.net_qos.capture_file import (
    CaptureFormat,
    PcapError,
    capture_format,
    damage_text,
    no_section_error,
    read_capture,
)
from virtbench.net_qos.compiled import kernels

__all__ = ["PcapError", "PcapRecords", "parse_pcap", "read_pcap"]

_MAX_INTERFACES = 1 << 16


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
    """Read a capture file from disk (see :func:`parse_pcap`); errors name the file."""
    return read_capture(Path(path), parse_pcap)


def parse_pcap(buf: bytes | mmap.mmap) -> PcapRecords:
    """Parse a classic pcap or pcapng capture (possibly gzip/xz/zstd-compressed) held in memory."""
    buf, fmt = capture_format(buf)
    arr = np.frombuffer(buf, dtype=np.uint8)
    return _pcapng(arr) if fmt.pcapng else _classic(arr, fmt)


def _classic(arr: npt.NDArray[np.uint8], fmt: CaptureFormat) -> PcapRecords:
    ts, orig, cap, off = _arrays((arr.size - 24) // fmt.record_header + 1)
    n, end, reason = kernels().walk_classic(arr, fmt.big, fmt.record_header, True, ts, orig, cap,
                                            off, fmt.scale)
    ts, orig, cap, off = ts[:n], orig[:n], cap[:n], off[:n]
    return PcapRecords(
        ts_ns=ts, orig_len=orig, cap_len=cap, data_off=off, iface=np.zeros(n, np.int32),
        if_linktype=np.array([fmt.linktype], np.int32), snaplen=fmt.snaplen,
        linktype=fmt.linktype, data=arr, format=fmt.name, damage=damage_text(reason, end))


def _arrays(most: int) -> tuple[npt.NDArray[np.int64], ...]:
    """Four arrays for at most ``most`` packets, filled in one walk and then cut to size: the
    operating system backs only the pages written, so the unused tail costs no memory."""
    return tuple(np.empty(most, np.int64) for _ in range(4))


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
        raise no_section_error(reason, end)
    links = if_link[:n_if].copy()
    return PcapRecords(
        ts_ns=ts, orig_len=orig, cap_len=cap, data_off=off, iface=iface, if_linktype=links,
        snaplen=int(if_snap[:n_if].max()) if n_if else 0,
        linktype=int(links[0]) if n_if else -1, data=arr, format="pcapng",
        damage=damage_text(reason, end))
