"""A capture file analysed per flow, as measurement rows (`virtbench parse pcap FILE`).

The flows come from the one-pass C scanner (`capture_scan`). This module and what it imports
stay free of numpy, dataclasses and virtbench.model, so that the whole command starts and ends
before tcpdump has read the file (BENCHMARKS.md, "capture analysis speed"); its rows have the
fields of a virtbench.model.Measurement.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import NamedTuple

from virtbench.net_qos.capture_scan import scan_capture
from virtbench.net_qos.flows import FlowSpecError, FlowStats, parse_flow_spec, select_flows
from virtbench.net_qos.qos_figures import QOS_METRIC_SPECS, MetricSpec

__all__ = ["CAPTURE_METRICS", "CaptureReport", "CaptureRow", "analyse_capture",
           "flow_measurements"]

CAPTURE_METRICS = (
    MetricSpec("packets", "packets", "higher", "packets of the flow in the capture"),
    MetricSpec("bytes", "B", "higher", "bytes on the wire (tshark's frame.len summed)"),
    MetricSpec("first_time_s", "s", "lower", "timestamp of the flow's first packet, s since "
               "the Unix epoch"),
    MetricSpec("last_time_s", "s", "lower", "timestamp of the flow's last packet"),
    MetricSpec("capture_s", "s", "higher", "last − first packet time"),
    *QOS_METRIC_SPECS,
)


class CaptureReport(NamedTuple):
    format: str
    packets: int
    damage: str | None
    """None for an intact file, else what stopped the reading and where (PcapRecords.damage)."""
    flows: list[FlowStats]
    """The selected flows, in order of first appearance."""
    total_flows: int


class CaptureRow(NamedTuple):
    """One measured value of a flow (the fields of a virtbench.model.Measurement)."""

    metric: str
    value: float | None
    labels: dict[str, str]
    status: str = "ok"
    t: float | None = None


def analyse_capture(source: Path | bytes, flow: str | None = None) -> CaptureReport:
    """Read a capture (a file, or its bytes) and keep the flows ``flow`` selects (all when
    None); a selection that matches nothing is an error listing the flows there are."""
    spec = parse_flow_spec(flow) if flow is not None else None  # bad spec: fail before reading
    scan = scan_capture(source)
    flows = scan.flows
    chosen = select_flows(flows, spec)
    if spec is not None and not chosen:
        have = "; ".join(str(f.flow) for f in flows[:8]) + (" …" if len(flows) > 8 else "")
        raise FlowSpecError(f"--flow {flow!r} matches none of the {len(flows)} flows in the "
                            f"capture ({have or 'it holds no packets'})")
    return CaptureReport(scan.format, scan.packets, scan.damage, chosen, len(flows))


def flow_measurements(report: CaptureReport) -> list[CaptureRow]:
    """One row per metric and flow, the flow's 5-tuple as labels; a damaged file marks every
    row ``partial``."""
    partial = report.damage is not None
    out: list[CaptureRow] = []
    for f in report.flows:
        labels = f.flow.labels()

        def row(metric: str, value: float | None, status: str = "ok",
                labels: dict[str, str] = labels) -> CaptureRow:
            if value is not None and not 0.0 <= value < math.inf:
                # Every capture figure counts or times something: a time before 1970 (a
                # pcapng if_tsoffset) is no measurement (parsers.parser_contract.INVALID, same
                # rule).
                value, status = None, "invalid"
            return CaptureRow(metric, value, labels,
                              "partial" if partial and status == "ok" else status)

        out += [row("packets", float(f.packets)), row("bytes", float(f.bytes))]
        if f.first_ns is None or f.last_ns is None:
            out += [row(m, None, "no_timestamps") for m in ("first_time_s", "last_time_s")]
        else:
            out += [row("first_time_s", f.first_ns / 1e9), row("last_time_s", f.last_ns / 1e9),
                    row("capture_s", (f.last_ns - f.first_ns) / 1e9)]
        if f.qos is None:
            why = "no_timestamps" if f.first_ns is None else "too_few_packets"
            out += [row(m.name, None, why) for m in QOS_METRIC_SPECS]
        else:
            out += [row(name, value, status) for name, value, status in f.qos.figures()]
    return out
