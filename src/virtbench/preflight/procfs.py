"""Readers of /proc and /sys for the noise checks; ``root`` lets tests point them at a fake tree.

Reading files only: nothing here spawns a process.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CpuTimes", "HostReader", "ProcInfo"]


@dataclass(frozen=True)
class CpuTimes:
    """Aggregate CPU time from /proc/stat's ``cpu`` line, in clock ticks."""

    total: int
    steal: int
    busy: int = 0
    """user + nice + system: what processes run, as their own CPU times count it (interrupt time
    is left out: without IRQ_TIME_ACCOUNTING it lands in whichever process was interrupted)."""


@dataclass(frozen=True)
class ProcInfo:
    pid: int
    ppid: int
    comm: str
    ticks: int  # utime + stime, clock ticks
    starttime: int  # clock ticks after boot: with pid, identifies one process across pid reuse


class HostReader:
    """Reads this host's kernel interfaces under ``root`` (``/`` on a real host)."""

    def __init__(self, root: Path = Path("/")) -> None:
        self.root = root
        self._root = str(root)
        self._proc = os.path.join(self._root, "proc")

    def _text(self, *parts: str) -> str | None:
        return self._read(os.path.join(self._root, *parts))

    @staticmethod
    def _read(path: str) -> str | None:
        # os.open/os.read: a scan reads ~100 of these, and pathlib's read_text costs 3x more.
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            chunks = []
            while chunk := os.read(fd, 65536):
                chunks.append(chunk)
        except OSError:
            return None
        finally:
            os.close(fd)
        return b"".join(chunks).decode(errors="replace")

    def cpu_times(self) -> CpuTimes:
        text = self._text("proc", "stat") or ""
        for line in text.splitlines():
            if line.startswith("cpu "):
                fields = [int(f) for f in line.split()[1:]]
                # user nice system idle iowait irq softirq steal [guest guest_nice]: guest time
                # is already inside user/nice, so only the first eight add up to the total.
                steal = fields[7] if len(fields) > 7 else 0
                return CpuTimes(sum(fields[:8]), steal, sum(fields[:3]))
        raise OSError(f"{self.root / 'proc/stat'}: no aggregate cpu line")

    def cpu_count(self) -> int:
        text = self._text("proc", "stat") or ""
        count = sum(1 for line in text.splitlines()
                    if line.startswith("cpu") and line[3:4].isdigit())
        return max(1, count)

    def processes(self) -> dict[int, ProcInfo]:
        out: dict[int, ProcInfo] = {}
        proc = self.root / "proc"
        try:
            entries = [e for e in os.listdir(proc) if e.isdigit()]
        except OSError:
            return out
        for entry in entries:
            info = self.process(int(entry))
            if info is not None:
                out[info.pid] = info
        return out

    def process(self, pid: int) -> ProcInfo | None:
        """One process from /proc/PID/stat; None when it does not exist (any more)."""
        text = self._read(f"{self._proc}/{pid}/stat")
        if not text or ")" not in text:
            return None
        # comm may hold spaces and parentheses: the fields start after the last ')'.
        head, rest = text.rsplit(")", 1)
        fields = rest.split()
        if len(fields) < 20:
            return None
        return ProcInfo(pid=pid, ppid=int(fields[1]), comm=head.split("(", 1)[-1],
                        ticks=int(fields[11]) + int(fields[12]), starttime=int(fields[19]))

    def environ_has(self, pid: int, entry: str) -> bool:
        """Whether process ``pid`` carries ``entry`` (``NAME=value``) in its environment."""
        with contextlib.suppress(OSError):
            data = self.root.joinpath("proc", str(pid), "environ").read_bytes()
            return entry.encode() in data.split(b"\0")
        return False

    def vmstat(self) -> dict[str, int]:
        out = {}
        for line in (self._text("proc", "vmstat") or "").splitlines():
            name, _, value = line.partition(" ")
            if value.strip().isdigit():
                out[name] = int(value)
        return out

    def sys(self, relative: str) -> str | None:
        """A /sys attribute, stripped; None when the kernel does not expose it."""
        text = self._text("sys", relative)
        return None if text is None else text.strip()

    def governors(self) -> list[str]:
        cpu = self.root / "sys/devices/system/cpu"
        found = []
        with contextlib.suppress(OSError):
            for entry in sorted(os.listdir(cpu)):
                if entry.startswith("cpu") and entry[3:].isdigit():
                    value = self.sys(f"devices/system/cpu/{entry}/cpufreq/scaling_governor")
                    if value:
                        found.append(value)
        return found

    def clock_ticks(self) -> int:
        return os.sysconf("SC_CLK_TCK") if self.root == Path("/") else 100
