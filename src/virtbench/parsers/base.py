"""Parsers turn a saved tool output into normalised measurements. Pure functions, no I/O."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from virtbench.compressed import DecompressionError, decompress
from virtbench.model import Measurement, Metric, VirtbenchError

__all__ = ["MAX_OUTPUT_BYTES", "NOT_MEASURED", "ParseError", "Parsed", "Parser"]

MAX_OUTPUT_BYTES = 256 << 20
"""The largest tool output read (after decompression): a day of ``iperf3 -J`` at one interval
a second is ~130 MB; a bound so that a wrong file fails at once, not after minutes."""
NOT_MEASURED = "not_measured"
"""Measurement status of a value the tool did not measure (gtod_reduce, irtt --tstamp=none)."""


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
            raw, compression = decompress(data)
        except DecompressionError as exc:
            raise ParseError(str(exc)) from None
        if len(raw) > MAX_OUTPUT_BYTES:
            size = f"{len(raw) / 2**20:.0f} MiB" + (" once decompressed" if compression else "")
            raise ParseError(f"{size} is more than any {self.tool} output virtbench reads "
                             f"({MAX_OUTPUT_BYTES / 2**20:g} MiB); is it the right file?")
        text = raw.decode("utf-8", errors="replace")
        parsed = (self.parse_full(text) if self.parse_full is not None
                  else Parsed(self.parse(text), self.tool))
        if compression:
            parsed.format = f"{parsed.format} ({compression})"
        return parsed
