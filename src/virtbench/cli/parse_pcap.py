"""`virtbench parse pcap FILE`: a capture's flows as a table or as JSON measurement rows."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from virtbench import safetext
from virtbench.net_qos.capture_report import CAPTURE_METRICS, analyse_capture, flow_measurements

__all__ = ["parse_pcap_command"]


def capture_source(file: Path) -> Path | bytes:
    """A regular file by its path (mapped from disk, any size); standard input, a pipe or a
    FIFO read into memory, within the bound of a decompressed capture (2 GiB); a directory, a
    device, a socket or a FIFO without a writer refused at once (virtbench.inputs.files)."""
    from virtbench.inputs.files import open_input, read_input, read_opened
    from virtbench.net_qos.capture_file import MAX_DECOMPRESSED_BYTES

    if str(file) == "-":
        return read_input(file, "capture", MAX_DECOMPRESSED_BYTES)
    with open_input(file, "capture") as stream:
        if stat.S_ISREG(os.fstat(stream.fileno()).st_mode):
            return file
        return read_opened(stream, file, "capture", MAX_DECOMPRESSED_BYTES)


def parse_pcap_command(file: Path, flow: str | None, as_json: bool) -> None:
    report = analyse_capture(capture_source(file), flow)
    if report.damage:
        safetext.console(stderr=True).print(
            f"[yellow]warning:[/] {safetext.markup(file)}: {safetext.markup(report.damage)} "
            f"({report.packets} packets read; every figure below is partial)",
            highlight=False, soft_wrap=True)  # one line: the path stays whole, copyable
    rows = flow_measurements(report)
    if as_json:
        units = {m.name: m.unit for m in CAPTURE_METRICS}
        document = []
        for m in rows:  # a NaN or infinite figure: null, its status says why
            value, status = safetext.finite_or_reason(m.value, m.status)
            document.append({"metric": m.metric, "value": value, "unit": units[m.metric],
                             "status": status, "t": m.t, "labels": m.labels})
        print(safetext.dumps(document, indent=1))
        return
    from rich.table import Table  # the table only: JSON output is a parse's fast path
    from rich.text import Text

    console = safetext.console()
    if not console.is_terminal:  # a pipe or file: never wrap a 5-tuple over lines
        console = safetext.console(width=240)
    times = [t for f in report.flows for t in (f.first_ns, f.last_ns) if t is not None]
    day = f", {_utc(min(times))[:10]} UTC" if times else ""
    console.print(safetext.text(
        f"{file}: {report.format}, {report.packets:,} packets, {report.total_flows} flows"
        + (f", {len(report.flows)} selected" if flow else "") + day
        + (" — PARTIAL (damaged file)" if report.damage else "")))
    table = Table("flow", "packets", "bytes", "first", "last", "delay ms", "jitter ms",
                  "Mbit/s")
    for f in report.flows:
        q = f.qos
        table.add_row(Text(safetext.visible(f.flow), no_wrap=True), f"{f.packets:,}",
                      f"{f.bytes:,}", _utc(f.first_ns)[11:], _utc(f.last_ns)[11:],
                      "–" if q is None else f"{q.delay_ms:.6g}",
                      "–" if q is None else f"{q.jitter_ms:.6g}",
                      "–" if q is None or q.throughput_mbps is None
                      else f"{q.throughput_mbps:.6g}")
    console.print(table)


def _utc(ns: int | None) -> str:
    """``YYYY-MM-DD HH:MM:SS.nnnnnnnnn`` (exact to the ns, unlike a float)."""
    from datetime import UTC, datetime  # the table only

    if ns is None:
        return " " * 11 + "–"
    seconds, frac = divmod(ns, 1_000_000_000)
    return f"{datetime.fromtimestamp(seconds, UTC):%Y-%m-%d %H:%M:%S}.{frac:09d}"
