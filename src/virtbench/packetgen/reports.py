"""What trafgen and GNU time print, read as numbers (pure functions of their text)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from virtbench.model import VirtbenchError

__all__ = ["GeneratorReport", "parse_gnu_time", "parse_trafgen"]

_PACKETS = re.compile(r"^\s*(\d+) packets outgoing", re.M)
_CPU_TIME = re.compile(r"^\s*(\d+) sec, (\d+) usec on CPU(\d+) \((\d+) packets\)", re.M)


@dataclass(frozen=True)
class GeneratorReport:
    """trafgen's own account: packets sent and the longest per-CPU sending time."""

    packets: int
    sending_s: float
    cpus: int


def parse_trafgen(text: str) -> GeneratorReport:
    """Read trafgen's summary (``N packets outgoing`` and ``S sec, U usec on CPUk (n packets)``)."""
    packets = _PACKETS.search(text)
    times = _CPU_TIME.findall(text)
    if packets is None or not times:
        raise VirtbenchError("trafgen printed no summary ('packets outgoing' and per-CPU "
                             f"times); its output ends: {text.strip()[-300:]!r}")
    sending = max(int(sec) + int(usec) / 1e6 for sec, usec, _cpu, _n in times)
    return GeneratorReport(int(packets.group(1)), sending, len(times))


def parse_gnu_time(text: str) -> tuple[float, float, float]:
    """(elapsed, user, system) seconds from GNU time's ``-f "%e %U %S"`` line (the last line)."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    try:
        elapsed, user, system = (float(v) for v in lines[-1].split())
    except (IndexError, ValueError) as exc:
        raise VirtbenchError(f"GNU time wrote no '%e %U %S' line: {text.strip()[-200:]!r}") \
            from exc
    return elapsed, user, system
