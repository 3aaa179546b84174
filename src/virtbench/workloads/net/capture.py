"""A packet capture (tcpdump or dumpcap) started and stopped around a trial: classic pcap with a
snap length and a BPF filter, plus the drop count the tool reports on exit.

On an SSH host (a fleet's cross-host transfer) the tool runs as a background process of
virtbench's agent there (so it can be signalled), writes into a private directory of the host
and its pcap and log are copied here when it stops.

The file is written to a private directory outside the home directory and moved to the trial
directory only when kept: Debian's AppArmor profile for tcpdump denies writes below ~/.*
(virtbench's default trial directories live in ~/.cache).

tcpdump is the default: on the Linux-bridge path here it used 0.043 s of CPU per 4 s transfer
against dumpcap's 0.217 s (BENCHMARKS.md, "instrumentation cost by component"), CPU that a
saturated 2-core host takes from the flow.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from virtbench.model import VirtbenchError
from virtbench.targets.process import Process
from virtbench.targets.ssh import SSHTarget
from virtbench.targets.target_contract import Target

__all__ = ["CAPTURE_PACKAGES", "Capture", "CaptureStats", "CaptureTool"]

CaptureTool = Literal["tcpdump", "dumpcap"]
CAPTURE_PACKAGES: dict[str, str] = {"tcpdump": "tcpdump", "dumpcap": "wireshark-common"}

_DUMPCAP_DROPS = re.compile(r"Packets received/dropped on interface '[^']*': (\d+)/(\d+)")
_TCPDUMP_CAPTURED = re.compile(r"(\d+) packets? captured")
_TCPDUMP_RECEIVED = re.compile(r"(\d+) packets? received by filter")
_TCPDUMP_DROPS = re.compile(r"(\d+) packets? dropped by kernel")
# libpcap's TPACKET_V3 ring hands packets over a block at a time; a block still filling is
# retired after the program's read timeout (tcpdump 1000 ms, dumpcap 250 ms). Stopping earlier
# discards the flow's last packets (measured: ~1 % of them, read as loss).
_BLOCK_TIMEOUT_S = {"tcpdump": 1.0, "dumpcap": 0.25}


@dataclass(frozen=True)
class CaptureStats:
    received: int | None
    dropped: int | None
    """Packets the kernel or the capture tool dropped (the pcap then lacks them)."""


def _ssh_host(target: Target) -> SSHTarget | None:
    """The SSH host under ``target`` (a trial sees its target wrapped, e.g. by the runner's
    time limit, which exposes the wrapped target as ``inner``), None for this machine."""
    while not isinstance(target, SSHTarget):
        inner = getattr(target, "inner", None)
        if not isinstance(inner, Target):
            return None
        target = inner
    return target


class Capture:
    """Capture ``iface`` on ``target`` (a namespace) into a classic pcap file: ``path`` while
    it exists, ``destination`` after :meth:`keep`; :meth:`discard` removes it."""

    def __init__(self, target: Target, iface: str, destination: Path, snaplen: int, bpf: str,
                 tool: CaptureTool = "tcpdump", buffer_mib: int = 32) -> None:
        self.target = target
        self.destination = destination
        self.spool = Path(tempfile.mkdtemp(prefix="virtbench-capture-"))
        self.path = self.spool / destination.name
        self.tool = tool
        self.log = self.path.with_suffix(f".{tool}.log")
        # where the tool writes: here, or a private directory on an SSH host
        self.host = _ssh_host(target)
        self.host_spool = (self.host.run(["mktemp", "-d", "/tmp/virtbench-capture-XXXXXX"])
                           .stdout.strip() if self.host is not None else None)
        written = Path(self.host_spool) / self.path.name if self.host_spool else self.path
        self.host_log = written.with_suffix(f".{tool}.log")
        if tool == "tcpdump":
            # -Z root: tcpdump would otherwise switch to user tcpdump, which cannot write into
            # root's private spool directory; nanosecond stamps because packets arrive µs apart.
            self.argv = ["tcpdump", "-i", iface, "-s", str(snaplen), "-B", str(buffer_mib * 1024),
                         "-n", "-Z", "root", "--time-stamp-precision=nano",
                         "-w", str(written), bpf]
        else:
            self.argv = ["dumpcap", "-i", iface, "-s", str(snaplen), "-P", "-B", str(buffer_mib),
                         "-f", bpf, "-w", str(written)]
        self.written = written
        self.process: Process | None = None

    def keep(self) -> Path:
        """Move the pcap (and the tool's log) to ``destination``; returns it."""
        self.destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(self.path, self.destination)
        if self.log.exists():
            shutil.move(self.log, self.destination.with_suffix(self.log.suffixes[-2] + ".log"))
        self.discard()
        return self.destination

    def discard(self) -> None:
        shutil.rmtree(self.spool, ignore_errors=True)
        if self.host_spool is not None:
            self.target.run(["rm", "-rf", "--", self.host_spool], check=False)

    def _log_text(self) -> str:
        if self.host_spool is not None:
            return self.target.run(["cat", "--", str(self.host_log)], check=False).stdout
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def _ready(self) -> bool:
        if self.tool == "tcpdump":  # its pcap header sits in a stdio buffer until much later
            return "listening on" in self._log_text()
        # dumpcap writes the 24-byte pcap header once the interface is open.
        if self.host_spool is not None:
            size = self.target.run(["stat", "-c", "%s", "--", str(self.written)], check=False)
            return size.returncode == 0 and int(size.stdout) >= 24
        return self.path.exists() and self.path.stat().st_size >= 24

    def start(self, timeout_s: float = 10.0) -> None:
        self.path.unlink(missing_ok=True)
        if self.host is not None:
            self.process = self.host.start(self.argv, stderr_path=str(self.host_log))
        else:
            with open(self.log, "wb") as log:
                self.process = self.target.spawn(self.argv, stderr=log.fileno())
        deadline = time.monotonic() + timeout_s
        while not self._ready():
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.tool} exited {self.process.returncode}: "
                                   f"{self._log_text().strip()[-300:]}")
            if time.monotonic() > deadline:
                said = self._log_text().strip()[-300:]
                self.stop()
                raise TimeoutError(f"{self.tool} did not start within {timeout_s:.0f} s"
                                   + (f": {said}" if said else ""))
            time.sleep(0.02)

    def _drain(self) -> None:
        """Wait until tcpdump has written every packet its filter took (asked via SIGUSR1), at
        most one block timeout plus a margin (loopback counts each packet twice, never equal)."""
        assert self.process is not None
        deadline = time.monotonic() + _BLOCK_TIMEOUT_S["tcpdump"] + 0.5
        while time.monotonic() < deadline and self.process.poll() is None:
            self.process.signal(signal.SIGUSR1)
            time.sleep(0.05)
            text = self._log_text()
            captured, received = _TCPDUMP_CAPTURED.findall(text), _TCPDUMP_RECEIVED.findall(text)
            if captured and received and int(captured[-1]) >= int(received[-1]):
                return
            time.sleep(0.1)

    def stop(self, timeout_s: float = 10.0) -> CaptureStats:
        if self.process is not None and self.process.poll() is None:
            if self.tool == "tcpdump":
                self._drain()
            else:  # dumpcap cannot report progress; give the ring one block timeout
                time.sleep(_BLOCK_TIMEOUT_S["dumpcap"] + 0.25)
            # Both flush the file and print counts on SIGINT; SIGKILL after timeout_s.
            self.process.stop(timeout_s, first=signal.SIGINT, group=False)
        self.process = None
        text = self._log_text()
        if self.host is not None:
            self.log.write_text(text)
            with contextlib.suppress(VirtbenchError):  # no pcap: read_pcap says so later
                self.host.fetch(str(self.written), self.path)
        if self.tool == "tcpdump":  # the last report is the one printed on exit
            received, dropped = _TCPDUMP_RECEIVED.findall(text), _TCPDUMP_DROPS.findall(text)
            return CaptureStats(int(received[-1]) if received else None,
                                int(dropped[-1]) if dropped else None)
        match = _DUMPCAP_DROPS.search(text)
        if match is None:
            return CaptureStats(None, None)
        return CaptureStats(int(match.group(1)), int(match.group(2)))
