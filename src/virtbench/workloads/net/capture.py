"""A packet capture with dumpcap, started and stopped around a trial (classic pcap, snap length)."""

from __future__ import annotations

import re
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from virtbench.targets.base import Target

__all__ = ["Capture", "CaptureStats"]

_DROPS = re.compile(r"Packets received/dropped on interface '[^']*': (\d+)/(\d+)")


@dataclass(frozen=True)
class CaptureStats:
    received: int | None
    dropped: int | None
    """Packets the kernel or dumpcap dropped (the pcap then lacks them)."""


class Capture:
    """``dumpcap -i IFACE -s SNAPLEN -P -f FILTER -w FILE`` on ``target`` (a namespace)."""

    def __init__(self, target: Target, iface: str, path: Path, snaplen: int, bpf: str,
                 buffer_mib: int = 32) -> None:
        self.target = target
        self.path = path
        self.log = path.with_suffix(".dumpcap.log")
        self.argv = ["dumpcap", "-i", iface, "-s", str(snaplen), "-P", "-B", str(buffer_mib),
                     "-f", bpf, "-w", str(path)]
        self.popen: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 10.0) -> None:
        self.path.unlink(missing_ok=True)
        with open(self.log, "wb") as log:
            self.popen = self.target.spawn(self.argv, stderr=log.fileno())
        deadline = time.monotonic() + timeout_s
        # dumpcap writes the 24-byte pcap header once the interface is open.
        while not (self.path.exists() and self.path.stat().st_size >= 24):
            if self.popen.poll() is not None:
                raise RuntimeError(f"dumpcap exited {self.popen.returncode}: "
                                   f"{self.log.read_text(errors='replace').strip()[-300:]}")
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"dumpcap did not start within {timeout_s:.0f} s")
            time.sleep(0.02)

    def stop(self, timeout_s: float = 10.0) -> CaptureStats:
        if self.popen is not None and self.popen.poll() is None:
            self.popen.send_signal(signal.SIGINT)  # dumpcap flushes the file on SIGINT
            try:
                self.popen.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout_s)
        self.popen = None
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        match = _DROPS.search(text)
        if match is None:
            return CaptureStats(None, None)
        return CaptureStats(int(match.group(1)), int(match.group(2)))
