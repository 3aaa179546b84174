"""Parsers turn a saved tool output into normalised measurements. Pure functions, no I/O."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from virtbench.compressed import DecompressedTooLarge, DecompressionError, decompress
from virtbench.model import Domain, Measurement, Metric, VirtbenchError

__all__ = [
    "INVALID", "MAX_OUTPUT_BYTES", "NOT_MEASURED", "ParseError", "Parsed", "Parser",
    "check_figures", "checked", "terminal_text",
]

MAX_OUTPUT_BYTES = 256 << 20
"""The largest tool output read (after decompression): a day of ``iperf3 -J`` at one interval
a second is ~130 MB; a bound so that a wrong file fails at once, not after minutes."""
NOT_MEASURED = "not_measured"
"""Measurement status of a value the tool did not measure (gtod_reduce, irtt --tstamp=none)."""
INVALID = "invalid"
"""Measurement status of a figure the output states but that cannot be a measurement: not a
finite number (NaN, Infinity, 1e999), or outside its metric's domain (a negative rate, count or
time; a proportion over 100 %). The value is dropped (None); a warning says what it was."""


class ParseError(VirtbenchError, ValueError):
    """The input is not an output the parser can read; one line saying which tool version or
    format was recognised and what was expected. (A ValueError too, for older callers.)"""


@dataclass
class Parsed:
    """Everything a parser read from one output, and what it could not map."""

    measurements: list[Measurement]
    format: str
    """What was recognised, e.g. ``fio-3.33 JSON+normal`` or ``irtt JSON (gzip)``."""
    warnings: list[str] = field(default_factory=list)
    """Sections of the output that were not mapped, and doubts about values (one line each)."""
    partial: bool = False
    """The tool's run was cut short (e.g. iperf3 stopped with Ctrl-C); values cover part of it."""
    figures_checked: bool = False
    """:func:`checked` has been applied (Parser.read applies it to a parser that did not)."""


@dataclass(frozen=True)
class Parser:
    tool: str
    """Name used on the command line: ``virtbench parse TOOL FILE``."""
    description: str
    metrics: tuple[Metric, ...]
    parse: Callable[[str], list[Measurement]]
    """Text → measurements (warnings dropped): what workloads call on their own runs."""
    parse_full: Callable[[str], Parsed] | None = None
    """Text → measurements with the recognised format, warnings and the partial mark."""

    def read(self, data: bytes) -> Parsed:
        """Raw bytes as saved (plain, gzip, xz or zstd, found by magic bytes) → Parsed."""
        try:
            raw, compression = decompress(data, limit=MAX_OUTPUT_BYTES)
        except DecompressedTooLarge as exc:
            raise ParseError(f"{exc.kind}-compressed input of more than "
                             f"{MAX_OUTPUT_BYTES / 2**20:g} MiB once decompressed is more than "
                             f"any {self.tool} output virtbench reads; is it the right file?"
                             ) from None
        except DecompressionError as exc:
            raise ParseError(str(exc)) from None
        if len(raw) > MAX_OUTPUT_BYTES:
            size = f"{len(raw) / 2**20:.0f} MiB" + (" once decompressed" if compression else "")
            raise ParseError(f"{size} is more than any {self.tool} output virtbench reads "
                             f"({MAX_OUTPUT_BYTES / 2**20:g} MiB); is it the right file?")
        text, note = terminal_text(raw.decode("utf-8", errors="replace"))
        parsed = (self.parse_full(text) if self.parse_full is not None
                  else Parsed(self.parse(text), self.tool))
        if not parsed.figures_checked:  # a plugin's parser: the same rule applies
            checked(parsed, self.metrics, self.tool)
        if note:
            parsed.warnings.insert(0, f"{self.tool}: {note}")
        if compression:
            parsed.format = f"{parsed.format} ({compression})"
        return parsed


# What a terminal adds to a tool's output when the session is captured (``script``, a
# terminal's "save output", tmux's capture-pane -e): escape sequences (colours, bracketed
# paste, cursor moves), the echo of Ctrl-C / Ctrl-Z / Ctrl-\ ("^C") at the start of a line —
# iperf3 prints its JSON right after it on the same line —, CR before LF, and script(1)'s own
# first and last lines.
_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_ECHOED = re.compile(r"^(?:\^[CZ\\])+", re.MULTILINE)
_SCRIPT_LINE = re.compile(r"^Script (?:started|done) on \d{4}-\d\d-\d\d[^\n]*\n?", re.MULTILINE)


def terminal_text(text: str) -> tuple[str, str]:
    """``text`` without what a terminal capture added (see above), and a note saying what was
    removed ('' when nothing was: the common case costs four substring searches)."""
    if "\x1b" not in text and "\r\n" not in text and "^" not in text \
            and "Script started on " not in text:
        return text, ""
    removed: list[str] = []
    for pattern, one, several in (
            (_ESCAPE, "a terminal escape sequence", "terminal escape sequences"),
            (_SCRIPT_LINE, "a line of script(1)", "lines of script(1)"),
            (_ECHOED, "an echoed control key (^C)", "echoed control keys (^C)")):
        text, count = pattern.subn("", text)
        if count:
            removed.append(one if count == 1 else f"{count} {several}")
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
        removed.append("CRLF line ends")
    return text, ("read as a terminal capture: removed " + ", ".join(removed)) if removed \
        else ""


def check_figures(measurements: Iterable[Measurement], metrics: Iterable[Metric], tool: str
                  ) -> tuple[list[Measurement], list[str]]:
    """Every parser's one rule for the figures it read: an ok value must be a finite number
    inside its metric's domain (``Metric.domain``: positive, proportion 0-100, real); any other
    becomes value None with status ``invalid``, and a warning (one line) names the metric and
    the value. Returns (measurements, warnings)."""
    out = list(measurements)
    # The common case, sound in every domain, is one comparison per figure: find the others
    # first, so that a clean parse (nearly every one) builds nothing more.
    doubtful = [i for i, m in enumerate(out)
                if not (m.value is None or m.status != "ok" or 0.0 <= m.value <= 100.0)]
    if not doubtful:
        return out, []
    domains = _domains(metrics)
    warnings: list[str] = []
    for i in doubtful:
        m = out[i]
        value = m.value
        if value is None:  # never: a doubtful figure has a value (for the type checker)
            continue
        reason = _invalid(value, domains.get(m.metric, Domain.REAL))
        if reason is None:
            continue
        where = "".join(f" {k}={v}" for k, v in m.labels.items())
        warnings.append(f"{tool}: {m.metric}{where} is {m.value!r}, {reason}: reported as "
                        f"{INVALID}, not as a measurement")
        out[i] = replace(m, value=None, status=INVALID)
    return out, warnings


_DOMAINS: dict[int, tuple[object, dict[str, Domain]]] = {}


def _domains(metrics: Iterable[Metric]) -> dict[str, Domain]:
    """Metric name -> domain; remembered per metrics tuple (a parser's is a module constant:
    fio declares ~300 metrics, and a parse should not rebuild the map each time)."""
    if not isinstance(metrics, tuple):
        return {metric.name: metric.value_domain for metric in metrics}
    known = _DOMAINS.get(id(metrics))
    if known is None or known[0] is not metrics:  # the tuple is kept: its id is not reused
        known = (metrics, {metric.name: metric.value_domain for metric in metrics})
        if len(_DOMAINS) < 64:
            _DOMAINS[id(metrics)] = known
    return known[1]


def _invalid(value: float, domain: Domain) -> str | None:
    return domain.refusal(value)


def checked(parsed: Parsed, metrics: Iterable[Metric], tool: str) -> Parsed:
    """``parsed`` with :func:`check_figures` applied (its warnings appended)."""
    parsed.measurements, warnings = check_figures(parsed.measurements, metrics, tool)
    parsed.warnings.extend(warnings)
    parsed.figures_checked = True
    return parsed
