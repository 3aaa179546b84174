"""Ways to read the CPU flags a guest sees: over a target (SSH, guest agent) or a serial log."""

from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from virtbench.kvm.hostcpu import cpuinfo_flags
from virtbench.model import VirtbenchError
from virtbench.targets.target_contract import CommandFailed, Target

__all__ = [
    "CONSOLE_BEGIN",
    "CONSOLE_END",
    "ConsoleLogProbe",
    "TargetProbe",
    "serial_log_path",
]

CONSOLE_BEGIN = "VIRTBENCH-CPUINFO-BEGIN"
CONSOLE_END = "VIRTBENCH-CPUINFO-END"
"""Markers a guest prints around /proc/cpuinfo on its serial console (see docs/kvm.md)."""


class TargetProbe:
    """Runs ``cat /proc/cpuinfo`` on the guest's target until it answers."""

    def __init__(self, target: Target, interval_s: float = 2.0) -> None:
        self.target = target
        self.interval_s = interval_s

    def describe(self) -> str:
        return f"/proc/cpuinfo over {self.target.describe()}"

    def wait_flags(self, timeout: float) -> frozenset[str]:
        deadline = time.monotonic() + timeout
        last = "no answer"
        while True:  # ends: done, or past the deadline below
            try:
                result = self.target.run(["cat", "/proc/cpuinfo"], timeout=30)
                flags = cpuinfo_flags(result.stdout)
                if flags:
                    return flags
                last = "empty /proc/cpuinfo"
            except (CommandFailed, VirtbenchError, OSError) as exc:
                last = str(exc)
            if time.monotonic() >= deadline:
                raise VirtbenchError(f"guest did not answer within {timeout:.0f} s: {last}")
            time.sleep(self.interval_s)


class ConsoleLogProbe:
    """Reads /proc/cpuinfo a guest printed between markers to its serial log file.

    For guests without network or agent (the test guest). The log must be a file on this
    machine, e.g. ``<serial type='file'><source path='...'/></serial>``.
    """

    def __init__(self, path: Path, interval_s: float = 0.5) -> None:
        self.path = path
        self.interval_s = interval_s

    def describe(self) -> str:
        return f"serial console log {self.path}"

    def wait_flags(self, timeout: float) -> frozenset[str]:
        deadline = time.monotonic() + timeout
        pattern = re.compile(re.escape(CONSOLE_BEGIN) + r"(.*?)" + re.escape(CONSOLE_END), re.S)
        while True:  # ends: done, or past the deadline below
            text = self.path.read_text(errors="replace") if self.path.exists() else ""
            # Echoed command lines also contain the markers; the cpuinfo block has 'flags'.
            blocks = [b for b in pattern.findall(text) if "flags" in b]
            if blocks:
                return cpuinfo_flags(blocks[-1].replace("\r", ""))
            if time.monotonic() >= deadline:
                tail = " | ".join(text.strip().splitlines()[-3:])
                raise VirtbenchError(
                    f"no /proc/cpuinfo between {CONSOLE_BEGIN}/{CONSOLE_END} in {self.path} "
                    f"within {timeout:.0f} s; log ends: {tail or '(empty)'}"
                )
            time.sleep(self.interval_s)


def serial_log_path(domain_xml: str) -> Path | None:
    """The file a domain's first file-backed serial port writes to, if any."""
    root = ET.fromstring(domain_xml)
    for serial in root.findall("devices/serial"):
        if serial.get("type") == "file":
            source = serial.find("source")
            if source is not None and source.get("path"):
                return Path(source.get("path", ""))
    return None
