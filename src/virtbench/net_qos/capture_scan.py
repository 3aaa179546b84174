"""A capture's flows in one pass over its bytes (the C decoder `_capscan`), without numpy.

What `virtbench parse pcap` runs: the decoder walks the records, decodes each packet's 5-tuple
and sums it into its flow's row of a hash table, so no per-packet array is made and nothing
heavier than the standard library is imported. The per-packet reader (`pcap.read_pcap`) and its
flows (`flows.capture_flows`) are the same decoder's.
"""

from __future__ import annotations

import mmap
from pathlib import Path
from typing import NamedTuple

from virtbench.net_qos import _capscan
from virtbench.net_qos.capture_file import (
    capture_format,
    damage_text,
    no_section_error,
    read_capture,
)
from virtbench.net_qos.flows import FlowStats, flow_stats

__all__ = ["CaptureScan", "scan_capture"]


class CaptureScan(NamedTuple):
    """Every flow of a capture, in order of first appearance; ``damage`` as in PcapRecords."""

    format: str
    packets: int
    flows: list[FlowStats]
    damage: str | None = None


def scan_capture(source: Path | bytes) -> CaptureScan:
    """Scan a capture file (errors name it) or a capture's bytes, possibly compressed."""
    return _scan(source) if isinstance(source, bytes) else read_capture(source, _scan)


def _scan(data: bytes | mmap.mmap) -> CaptureScan:
    buf, fmt = capture_format(data)
    n, n_if, stop, reason, rows = _capscan.scan(buf, fmt.pcapng, fmt.big, fmt.record_header,
                                                fmt.scale, fmt.linktype)
    if fmt.pcapng and n_if == 0 and n == 0 and reason != 0:
        raise no_section_error(reason, stop)
    return CaptureScan(fmt.name, n, [flow_stats(*row) for row in rows],
                       damage_text(reason, stop))
