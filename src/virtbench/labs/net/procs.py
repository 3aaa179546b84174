"""Long-running processes of a lab (servers, background flows), recorded and stopped by PID."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from virtbench.labs.base import Manifest
from virtbench.targets.base import Target
from virtbench.targets.local import NetnsTarget

__all__ = ["LabProcess", "kill_recorded", "start_in_namespace"]


class LabProcess:
    """A process we started; ``stop`` ends exactly it (SIGTERM, then SIGKILL)."""

    def __init__(self, popen: subprocess.Popen[bytes], argv: Sequence[str], manifest: Manifest,
                 record: dict[str, object]) -> None:
        self.popen = popen
        self.argv = list(argv)
        self.manifest = manifest
        self.record = record

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, sig: int = signal.SIGTERM, timeout_s: float = 5.0) -> int | None:
        if self.popen.poll() is None:
            self.popen.send_signal(sig)
            try:
                self.popen.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout_s)
        self.manifest.remove("pid", self.record)
        return self.popen.returncode


def start_in_namespace(ns: str, argv: Sequence[str], manifest: Manifest,
                       log: Path | None = None, target: NetnsTarget | None = None
                       ) -> LabProcess:
    """Spawn ``argv`` inside namespace ``ns`` (through ``target`` when given, e.g. one that
    also starts it in a cgroup) and record its PID in the manifest."""
    target = target or NetnsTarget(ns)
    out = open(log, "ab") if log is not None else None  # noqa: SIM115 - kept for the child
    try:
        popen = target.spawn(argv, stdout=out.fileno() if out else subprocess.DEVNULL,
                             stderr=out.fileno() if out else subprocess.DEVNULL)
    finally:
        if out is not None:
            out.close()
    record: dict[str, object] = {"pid": popen.pid, "ns": ns, "argv0": argv[0]}
    manifest.add("pid", record)
    return LabProcess(popen, argv, manifest, record)


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [p.decode(errors="replace") for p in raw.split(b"\0") if p]


def kill_recorded(target: Target, records: list[dict[str, object]]) -> list[str]:
    """Kill recorded PIDs whose command line still matches (a reused PID is left alone)."""
    del target  # processes of this machine only; /proc tells whether the PID is still ours
    removed = []
    for rec in records:
        pid = int(str(rec["pid"]))
        argv0 = os.path.basename(str(rec["argv0"]))
        cmd = _cmdline(pid)
        if not cmd or not any(os.path.basename(c) == argv0 for c in cmd[:6]):
            continue
        try:
            os.kill(pid, signal.SIGTERM)
            for _ in range(30):
                time.sleep(0.1)
                if not _cmdline(pid):
                    break
            else:
                os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        removed.append(f"process {pid} ({argv0})")
    return removed
