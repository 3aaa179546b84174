"""bonnie++ output → measurements: the CSV line(s) and the human-readable table.

bonnie++ (Debian 2.00a, CSV format version 1.98) prints one CSV line per loop (``-x N`` gives N
lines, preceded by a header line that omits two columns, so fields are read by position). The
human table is what bonnie++ prints on stdout (or stderr with ``-q``) and what ``bon_csv2txt``
prints; it rounds rates (``240m``) so the CSV line is preferred when both are present.

``+++++`` (and a ``+++`` CPU column) means the test finished too fast to measure: it becomes a
Measurement with ``value=None`` and ``status="too_fast"``. An empty field means the test was
skipped (``-f`` skips per-char tests): it becomes ``status="skipped"``.

Units: sequential rates in KiB/s (bonnie++'s K is 1024 bytes), seeks and file operations per
second, CPU in percent of one CPU, latencies normalised to microseconds.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass

from virtbench.model import Better, Domain, Measurement, Metric
from virtbench.parsers.base import ParseError, Parser

__all__ = ["BONNIE_METRICS", "BONNIE_TESTS", "PARSERS", "BonnieTest", "parse_bonnie"]


@dataclass(frozen=True)
class BonnieTest:
    key: str
    """Metric name stem, e.g. ``seq_output_block``."""
    title: str
    rate_unit: str
    what: str


BONNIE_TESTS: tuple[BonnieTest, ...] = (
    BonnieTest("seq_output_per_char", "Sequential Output Per Chr", "KiB/s",
               "writing the file one byte at a time with putc()"),
    BonnieTest("seq_output_block", "Sequential Output Block", "KiB/s",
               "writing the file in blocks (write(2) of the chunk size)"),
    BonnieTest("seq_output_rewrite", "Sequential Output Rewrite", "KiB/s",
               "reading each block, dirtying it, seeking back and rewriting it"),
    BonnieTest("seq_input_per_char", "Sequential Input Per Chr", "KiB/s",
               "reading the file one byte at a time with getc()"),
    BonnieTest("seq_input_block", "Sequential Input Block", "KiB/s",
               "reading the file in blocks (read(2) of the chunk size)"),
    BonnieTest("random_seeks", "Random Seeks", "seeks/s",
               "lseek() to random blocks and read them (5% also rewritten), several processes"),
    BonnieTest("seq_create", "Sequential Create", "files/s",
               "creating the test files in numeric order"),
    BonnieTest("seq_read", "Sequential Create Read", "files/s",
               "stat() of the files in the order they were created (bonnie++ column 'Read')"),
    BonnieTest("seq_delete", "Sequential Create Delete", "files/s",
               "deleting the files in the order they were created"),
    BonnieTest("random_create", "Random Create", "files/s",
               "creating the test files in random order"),
    BonnieTest("random_read", "Random Create Read", "files/s",
               "stat() of the files in random order (bonnie++ column 'Read')"),
    BonnieTest("random_delete", "Random Create Delete", "files/s",
               "deleting the files in random order"),
)

_RATE_SUFFIX = {"KiB/s": "KiBps", "seeks/s": "per_s", "files/s": "per_s"}
_PRIMARY = {"seq_output_block", "seq_input_block", "random_seeks"}


def _rate_name(test: BonnieTest) -> str:
    return f"{test.key}_{_RATE_SUFFIX[test.rate_unit]}"


def _metrics() -> tuple[Metric, ...]:
    out: list[Metric] = []
    for test in BONNIE_TESTS:
        out.append(Metric(_rate_name(test), test.rate_unit, Better.HIGHER,
                          f"bonnie++ {test.title}: {test.what}; rate in {test.rate_unit}",
                          primary=test.key in _PRIMARY))
        out.append(Metric(f"{test.key}_cpu_pct", "%", Better.LOWER,
                          f"bonnie++ {test.title}: CPU used during the test (user+system) in "
                          "percent of one CPU; may exceed 100 with several CPUs",
                          domain=Domain.POSITIVE))
        out.append(Metric(f"{test.key}_latency_us", "us", Better.LOWER,
                          f"bonnie++ {test.title}: longest latency of a single operation "
                          "(bonnie++ 'Latency' row), normalised to microseconds"))
    return tuple(out)


BONNIE_METRICS: tuple[Metric, ...] = _metrics()

_LATENCY_RE = re.compile(r"^(\d+(?:\.\d+)?)(ns|us|ms|s)$")
_LATENCY_FACTOR = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
# Human-table rates carry a suffix: k (KiB), m (MiB), g (GiB); bare numbers are K/s for the
# sequential tests and /s for seeks and files.
_HUMAN_RATE_RE = re.compile(r"^(\d+(?:\.\d+)?)([kmg]?)$")
_HUMAN_FACTOR = {"": 1.0, "k": 1.0, "m": 1024.0, "g": 1024.0 * 1024.0}
_TOO_FAST = "+++++"


def _value(
    metric: str, raw: str, labels: dict[str, str], cpu_raw: str | None = None
) -> Measurement:
    raw = raw.strip()
    if raw == "":
        return Measurement(metric, None, labels=dict(labels), status="skipped")
    if raw.startswith("++") or (cpu_raw is not None and cpu_raw.strip().startswith("++")):
        return Measurement(metric, None, labels=dict(labels), status="too_fast")
    try:
        return Measurement(metric, float(raw), labels=dict(labels))
    except ValueError as exc:
        raise ParseError(f"bonnie++: field for {metric} is {raw!r}, not a number") from exc


def _latency(metric: str, raw: str, labels: dict[str, str]) -> Measurement:
    raw = raw.strip()
    if raw == "":
        return Measurement(metric, None, labels=dict(labels), status="skipped")
    match = _LATENCY_RE.match(raw)
    if not match:
        raise ParseError(f"bonnie++: latency for {metric} is {raw!r}; expected e.g. 123us, 4ms")
    return Measurement(metric, float(match.group(1)) * _LATENCY_FACTOR[match.group(2)],
                       labels=dict(labels))


def _parse_csv_row(row: list[str], labels: dict[str, str]) -> list[Measurement]:
    if len(row) < 50:
        raise ParseError(f"bonnie++ CSV line has {len(row)} fields; format 1.98 has 50")
    # Positions of format 1.98: 0 format, 1 version, 2 name, 3 concurrency, 4 seed, 5 size,
    # 6 chunk, 7 seeks, 8 seek procs, 9..20 six (rate, cpu) pairs, 21..25 file-test params,
    # 26..37 six (rate, cpu) pairs, 38..49 twelve latencies.
    pairs = [(9 + 2 * i) for i in range(6)] + [(26 + 2 * i) for i in range(6)]
    out: list[Measurement] = []
    for test, pos in zip(BONNIE_TESTS, pairs, strict=True):
        out.append(_value(_rate_name(test), row[pos], labels, row[pos + 1]))
        out.append(_value(f"{test.key}_cpu_pct", row[pos + 1], labels))
    for i, test in enumerate(BONNIE_TESTS):
        out.append(_latency(f"{test.key}_latency_us", row[38 + i], labels))
    return out


def _csv_rows(text: str) -> list[list[str]]:
    rows = []
    for line in text.splitlines():
        if re.match(r"^\d+\.\d+,\d", line.strip()):
            rows.append(next(csv.reader(io.StringIO(line.strip()))))
    return rows


def _human_rate(metric: str, raw: str, cpu: str, labels: dict[str, str]) -> Measurement:
    if raw.startswith("++") or cpu.startswith("++"):
        return Measurement(metric, None, labels=dict(labels), status="too_fast")
    if raw == "":
        return Measurement(metric, None, labels=dict(labels), status="skipped")
    match = _HUMAN_RATE_RE.match(raw)
    if not match:
        raise ParseError(f"bonnie++ table: rate for {metric} is {raw!r}")
    factor = _HUMAN_FACTOR[match.group(2)] if metric.endswith("KiBps") else 1.0
    return Measurement(metric, float(match.group(1)) * factor, labels=dict(labels))


def _columns(line: str, start: int, count: int, width: int) -> list[str]:
    """Fixed-width cells: bonnie++ leaves blanks for skipped tests, so split by position."""
    return [line[start + i * width:start + (i + 1) * width].strip() for i in range(count)]


def _parse_table(text: str) -> list[Measurement]:
    lines = text.splitlines()
    # Section 1 data line follows the "Name:Size etc" header; section 2 follows "files".
    out: list[Measurement] = []
    blocks = [i for i, line in enumerate(lines) if "/sec %CP" in line]
    if len(blocks) < 2:
        raise ParseError("not a bonnie++ table: expected two '/sec %CP' header rows")
    for loop, b in enumerate(range(0, len(blocks) - 1, 2)):
        labels = {"loop": str(loop + 1)} if len(blocks) > 2 else {}
        seq_head, file_head = blocks[b], blocks[b + 1]
        for head, tests in ((seq_head, BONNIE_TESTS[:6]), (file_head, BONNIE_TESTS[6:])):
            # Cells are 10 characters wide ("  /sec %CP") and end where the header row ends.
            end = len(lines[head].rstrip())
            data = lines[head + 1]
            latency = lines[head + 2]
            if not latency.startswith("Latency"):
                raise ParseError(f"bonnie++ table: no 'Latency' row after line {head + 2}")
            start = end - 60
            cells = _columns(data.ljust(end), start, 6, 10)
            # Latency cells are right-aligned two columns left of the rate cells.
            lat_cells = _columns(latency.ljust(end), start - 2, 6, 10)
            for test, cell, lat in zip(tests, cells, lat_cells, strict=True):
                parts = cell.split()
                if len(parts) == 2:
                    rate, cpu = parts
                elif len(parts) == 0:
                    rate, cpu = "", ""
                else:
                    raise ParseError(f"bonnie++ table: cell {cell!r} for {test.key}")
                out.append(_human_rate(_rate_name(test), rate, cpu, labels))
                out.append(_value(f"{test.key}_cpu_pct", cpu, labels))
                out.append(_latency(f"{test.key}_latency_us", lat, labels))
    return out


def parse_bonnie(text: str) -> list[Measurement]:
    """Parse bonnie++ CSV line(s) (preferred) or, without any, the human table.

    Several CSV lines (``-x N``) are labelled ``loop=1..N``.
    """
    rows = _csv_rows(text)
    if rows:
        out: list[Measurement] = []
        for i, row in enumerate(rows):
            labels = {"loop": str(i + 1)} if len(rows) > 1 else {}
            out.extend(_parse_csv_row(row, labels))
        return out
    if "/sec %CP" in text:
        return _parse_table(text)
    raise ParseError("not a bonnie++ output: no CSV line (starting '1.98,') and no results table")


PARSERS = (
    Parser("bonnie++", "bonnie++ 2.00 CSV line(s) or human table", BONNIE_METRICS, parse_bonnie),
)
