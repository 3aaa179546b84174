"""Fast reader of capture files: classic pcap and pcapng, timestamps, lengths and packet offsets.

Reads what tcpdump, dumpcap and Wireshark write: classic pcap (µs and ns magic, either byte
order, Kuznetsov's modified records), pcapng (sections of either byte order, several interfaces
each with its own `if_tsresol`/`if_tsoffset`, enhanced, simple and obsolete packet blocks),
plain or compressed with gzip, xz or zstd (`virtbench.compressed`). The walk over the records is
virtbench's one capture decoder, in C (`virtbench.net_qos._capscan`), filling numpy arrays made
here; counts and bytes equal tshark's (`frame.len` is a record's original length).

A file cut short or corrupted part-way is read up to the last intact record and marked
(`PcapRecords.damage` says where and why); a file that is not a capture raises `PcapError`.
This is the labs' reader (per-packet arrays); `virtbench parse pcap` needs only per-flow sums
and gets them from the same decoder's flow scan (`virtbench.net_qos.capture_scan`), without
numpy.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from virtbench.net_qos import _capscan
from virtbench.net_qos.capture_file import (
    CaptureFormat,
    PcapError,
    capture_format,
    damage_text,
    no_section_error,
    read_capture,
)

__all__ = ["PcapError", "PcapRecords", "parse_pcap", "read_pcap"]


@dataclass(frozen=True)
class PcapRecords:
    """Per-packet arrays of one capture, in file order.

    ``ts_ns``: capture timestamp in ns since the epoch (``NO_TIME`` for pcapng simple packet
    blocks, which carry none); ``orig_len``: bytes on the wire (tshark's frame.len);
    ``cap_len``: bytes stored; ``data_off``: where the stored bytes start in ``data``;
    ``iface``: index into ``if_linktype`` (one entry per interface, all sections numbered in
    turn; classic pcap has one). ``capture``: what the file's header says, for the decoder's
    flow scan of ``data`` (`flows.capture_flows`). ``damage`` is None for an intact file, else
    what stopped the walk and at which byte: the arrays then hold every record before it.
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
    capture: CaptureFormat
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
    # At most this many packets (the smallest pcapng packet block has 16 bytes): the arrays are
    # filled in one walk and then cut to size; the operating system backs only the pages
    # written, so the unused tail costs no memory.
    most = arr.size // 16 + 1 if fmt.pcapng else (arr.size - 24) // fmt.record_header + 1
    ts, orig, cap, off = (np.empty(most, np.int64) for _ in range(4))
    iface = np.empty(most, np.int32)
    n, n_if, stop, reason, interfaces = _capscan.records(
        arr, fmt.pcapng, fmt.big, fmt.record_header, fmt.scale, fmt.linktype, ts, orig, cap, off,
        iface)
    if fmt.pcapng and n_if == 0 and n == 0 and reason != 0:
        raise no_section_error(reason, stop)
    links = np.array([link for link, _snap in interfaces], np.int32)
    if fmt.pcapng:
        snaplen = max((snap for _link, snap in interfaces), default=0)
        linktype = int(links[0]) if n_if else -1
    else:
        snaplen, linktype = fmt.snaplen, fmt.linktype
    return PcapRecords(
        ts_ns=ts[:n], orig_len=orig[:n], cap_len=cap[:n], data_off=off[:n], iface=iface[:n],
        if_linktype=links, snaplen=snaplen, linktype=linktype, data=arr, format=fmt.name,
        capture=fmt, damage=damage_text(reason, stop))
