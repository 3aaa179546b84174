"""bonnie++ output → measurements: the CSV line(s) and the human-readable table.

bonnie++ prints one CSV line per loop (``-x N`` gives N lines, preceded by a header line that
omits two columns, so fields are read by position): format 1.98 (bonnie++ 2.00, 50 fields) and
1.96/1.97 (bonnie++ 1.96/1.97, 48 fields). The human table is what bonnie++ prints on stdout (or
stderr with ``-q``) and what ``bon_csv2txt`` prints; 2.00 rounds rates (``240m``), so the CSV
line is preferred when both are present. Tables are read from 1.03 (no Latency rows) on, every
result row of them (``bon_csv2txt`` of several CSV lines prints one row per line under one
header).

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
from virtbench.parsers.parser_contract import Parsed, ParseError, Parser, checked

__all__ = [
    "BONNIE_METRICS", "BONNIE_TESTS", "PARSERS", "BonnieTest", "parse_bonnie", "parse_bonnie_full",
]


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


# Positions of each CSV format: first (rate, cpu) pair of the sequential tests, of the file
# tests, first latency, and the field count. 1.98 (bonnie++ 2.00): 0 format, 1 version, 2 name,
# 3 concurrency, 4 seed, 5 size, 6 chunk, 7 seeks, 8 seek procs, 9..20 six pairs, 21..25
# file-test params, 26..37 six pairs, 38..49 twelve latencies. 1.96/1.97 (bonnie++ 1.96/1.97):
# no seeks/seek-procs fields, so 7..18 pairs, 19..23 file params, 24..35 pairs, 36..47 latencies.
_CSV_LAYOUTS = {"1.98": (9, 26, 38, 50), "1.97": (7, 24, 36, 48), "1.96": (7, 24, 36, 48)}


def _parse_csv_row(row: list[str], labels: dict[str, str]) -> list[Measurement]:
    layout = _CSV_LAYOUTS.get(row[0])
    if layout is None:
        version = row[1] if len(row) > 1 else "?"
        raise ParseError(f"bonnie++ CSV format {row[0]!r} (bonnie++ {version}) is not known; "
                         f"expected one of {', '.join(sorted(_CSV_LAYOUTS))}")
    seq, files, latency, count = layout
    if len(row) < count:
        raise ParseError(f"bonnie++ CSV format {row[0]} line has {len(row)} fields; expected "
                         f"{count}")
    pairs = [(seq + 2 * i) for i in range(6)] + [(files + 2 * i) for i in range(6)]
    out: list[Measurement] = []
    for test, pos in zip(BONNIE_TESTS, pairs, strict=True):
        out.append(_value(_rate_name(test), row[pos], labels, row[pos + 1]))
        out.append(_value(f"{test.key}_cpu_pct", row[pos + 1], labels))
    for i, test in enumerate(BONNIE_TESTS):
        out.append(_latency(f"{test.key}_latency_us", row[latency + i], labels))
    return out


# A CSV result line ('1.98,2.00a,host,...'), found by one scan of the text, not a match per line.
# Lines end at \n or \r, as csv reads them (a \r inside a field is an error to csv).
_CSV_LINE = re.compile(r"(?:^|\r)[ \t]*(\d+\.\d+,\d[^\r\n]*)", re.MULTILINE)


def _csv_rows(text: str) -> list[list[str]]:
    try:
        return [next(csv.reader(io.StringIO(match.group(1).strip())))
                for match in _CSV_LINE.finditer(text)]
    except csv.Error as exc:  # a field over csv's 128 KiB limit: no bonnie++ line has one
        raise ParseError(f"bonnie++ CSV: a line that starts like one is not ({exc})") from None


def _human_rate(metric: str, raw: str, cpu: str, labels: dict[str, str]) -> Measurement:
    if raw.startswith("++") or cpu.startswith("++"):
        return Measurement(metric, None, labels=dict(labels), status="too_fast")
    if raw == "":
        return Measurement(metric, None, labels=dict(labels), status="skipped")
    match = _HUMAN_RATE_RE.match(raw)
    if not match:
        raise ParseError(f"bonnie++ table: rate for {metric} is {raw!r}; expected e.g. 1235k, "
                         "240m, 258.5 or +++++")
    factor = _HUMAN_FACTOR[match.group(2)] if metric.endswith("KiBps") else 1.0
    return Measurement(metric, float(match.group(1)) * factor, labels=dict(labels))


_TOKEN = re.compile(r"\S+")


def _cells(line: str, anchors: list[int], skip: int) -> list[list[str]]:
    """The tokens of each of the six cells of a table row, by whitespace, not by position:
    numbers that fill their cell (an old table's 106363) push the next cell right. Blank
    (skipped) cells make the row shorter; then each token goes to the nearest column end."""
    tokens = [(m.group(), m.end()) for m in _TOKEN.finditer(line)][skip:]
    per_cell = len(tokens) // len(anchors) if tokens else 0
    cells: list[list[str]] = [[] for _ in anchors]
    if per_cell and len(tokens) == per_cell * len(anchors):
        for i, (token, _end) in enumerate(tokens):
            cells[i // per_cell].append(token)
        return cells
    for token, end in tokens:
        nearest = min(range(len(anchors)), key=lambda i: abs(anchors[i] - end))
        cells[nearest].append(token)
    return cells


def _is_row(line: str) -> bool:
    """A result row of a table (not a header, a Latency row, a CSV line or a blank line)."""
    stripped = line.strip()
    return bool(stripped) and "%CP" not in line and "," not in line \
        and not stripped.startswith(("Latency", "-", "Version"))


def _rows_under(lines: list[str], head: int) -> list[tuple[int, int | None]]:
    """(row, its Latency row or None) of every result under the header at ``head``: bonnie++
    prints one, ``bon_csv2txt`` one per CSV line it was given."""
    out: list[tuple[int, int | None]] = []
    i = head + 1
    while i < len(lines) and _is_row(lines[i]):
        latency = i + 1 if i + 1 < len(lines) and lines[i + 1].strip().startswith("Latency") \
            else None
        out.append((i, latency))
        i += 2 if latency is not None else 1
    return out


def _table_row(lines: list[str], head: int, row: tuple[int, int | None],
               tests: tuple[BonnieTest, ...], labels: dict[str, str]) -> list[Measurement]:
    anchors = [m.end() for m in re.finditer(r"%CP", lines[head])]
    data_at, lat_at = row
    data = lines[data_at]
    # Leading labels (machine and size, files spec) end left of the first 10-wide cell.
    skip = sum(1 for m in _TOKEN.finditer(data) if m.end() <= anchors[0] - 10)
    cells = _cells(data, anchors, skip)
    out: list[Measurement] = []
    lat_cells = None if lat_at is None else _cells(lines[lat_at], [a - 2 for a in anchors], 1)
    for i, (test, cell) in enumerate(zip(tests, cells, strict=True)):
        if len(cell) == 2:
            rate, cpu = cell
        elif not cell:
            rate, cpu = "", ""
        else:
            raise ParseError(f"bonnie++ table line {data_at + 1}: cell of {test.key} is "
                             f"{' '.join(cell)!r}; expected a rate and a CPU %")
        out.append(_human_rate(_rate_name(test), rate, cpu, labels))
        out.append(_value(f"{test.key}_cpu_pct", cpu, labels))
        if lat_cells is not None:
            lat = lat_cells[i]
            if len(lat) > 1:
                raise ParseError(f"bonnie++ table line {data_at + 2}: latency cell of "
                                 f"{test.key} is {' '.join(lat)!r}")
            out.append(_latency(f"{test.key}_latency_us", lat[0] if lat else "", labels))
    return out


def _parse_table(text: str) -> tuple[list[Measurement], str]:
    """Every result of the table(s): bonnie++ -x N prints a table per loop, bon_csv2txt one
    table with a row per result; either way each result is labelled ``loop=1..N``."""
    lines = text.splitlines()
    blocks = [i for i, line in enumerate(lines) if "/sec %CP" in line]
    if len(blocks) < 2:
        raise ParseError("not a bonnie++ table: expected two '/sec %CP' header rows")
    version = re.search(r"Version\s+(\S+)", text)
    Row = tuple[int, tuple[int, int | None]]  # (header line, (row line, Latency line))
    results: list[tuple[Row, Row]] = []
    for b in range(0, len(blocks) - 1, 2):
        pair = []
        for head in (blocks[b], blocks[b + 1]):
            anchors = len(re.findall(r"%CP", lines[head]))
            rows = _rows_under(lines, head)
            if anchors != 6 or not rows:
                raise ParseError(f"bonnie++ table: header line {head + 1} has {anchors} '%CP' "
                                 "columns and no row after it; expected six")
            pair.append(rows)
        if len(pair[0]) != len(pair[1]):
            raise ParseError(f"bonnie++ table: {len(pair[0])} result row(s) under the header at "
                             f"line {blocks[b] + 1} but {len(pair[1])} under the one at line "
                             f"{blocks[b + 1] + 1}; expected one file-test row per result")
        results += [((blocks[b], seq), (blocks[b + 1], files))
                    for seq, files in zip(pair[0], pair[1], strict=True)]
    out: list[Measurement] = []
    for loop, (seq_part, file_part) in enumerate(results, 1):
        labels = {"loop": str(loop)} if len(results) > 1 else {}
        out += _table_row(lines, *seq_part, BONNIE_TESTS[:6], labels)
        out += _table_row(lines, *file_part, BONNIE_TESTS[6:], labels)
    return out, f"bonnie++ {version.group(1) if version else '?'} table"


def parse_bonnie_full(text: str) -> Parsed:
    """CSV line(s) (preferred: exact rates) or, without a readable one, the human table.

    Several results (``-x N``) are labelled ``loop=1..N``.
    """
    rows = _csv_rows(text)
    warnings: list[str] = []
    has_table = "/sec %CP" in text
    if rows:
        try:
            out: list[Measurement] = []
            for i, row in enumerate(rows):
                labels = {"loop": str(i + 1)} if len(rows) > 1 else {}
                out.extend(_parse_csv_row(row, labels))
            return checked(Parsed(out, f"bonnie++ {rows[0][1] if len(rows[0]) > 1 else '?'} "
                                  f"CSV (format {rows[0][0]})", warnings), BONNIE_METRICS,
                           "bonnie++")
        except ParseError as exc:
            if not has_table:
                raise
            warnings.append(f"{exc}; read the table printed beside it instead (rates rounded)")
    if has_table:
        out, fmt = _parse_table(text)
        if not any("Latency" in line for line in text.splitlines()):
            warnings.append(f"{fmt} has no Latency rows (bonnie++ before 1.96): latencies "
                            "are not reported")
        return checked(Parsed(out, fmt, warnings), BONNIE_METRICS, "bonnie++")
    raise ParseError("not a bonnie++ output: no CSV line (starting '1.96,', '1.97,' or '1.98,')"
                     " and no results table ('/sec %CP' header rows)")


def parse_bonnie(text: str) -> list[Measurement]:
    return parse_bonnie_full(text).measurements


PARSERS = (
    Parser("bonnie++", "bonnie++ CSV line(s) (1.96-2.00) or human table (1.03-2.00)",
           BONNIE_METRICS, parse_bonnie, parse_bonnie_full),
)
