"""Start, wait for and stop the lab's servers; stop only processes that are provably ours.

A process is ours when its PID is in our manifest AND its command line still contains our
private directory (a PID can be reused after a crash; the marker check avoids killing a stranger).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from virtbench.model import VirtbenchError

__all__ = ["free_port", "is_ours", "stop_pid", "wait_for_port"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def is_ours(pid: int, marker: str) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
            errors="replace")
    except OSError:
        return False
    return marker in cmdline


def stop_pid(pid: int, marker: str, *, sig: int = signal.SIGTERM, grace_s: float = 10.0) -> bool:
    """Stop our process ``pid`` (and its process group: nginx workers, the Varnish child).

    Returns True when a process was signalled. SIGKILL after ``grace_s`` seconds.
    """
    if not is_ours(pid, marker):
        return False
    try:
        pgid = os.getpgid(pid)
    except ProcessLookupError:
        return False
    # Our servers are spawned in a session of their own, so the group is theirs alone.
    group = pgid == pid
    try:
        os.killpg(pid, sig) if group else os.kill(pid, sig)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if not is_ours(pid, marker) or _zombie(pid):
            break
        time.sleep(0.05)
    else:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL) if group else os.kill(pid, signal.SIGKILL)
    _reap(pid)
    return True


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] == "Z"


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def wait_for_port(port: int, proc: subprocess.Popen[bytes] | None, what: str, log: Path,
                  timeout_s: float = 15.0) -> float:
    """Seconds until 127.0.0.1:port accepts a connection; VirtbenchError if ``proc`` dies."""
    started = time.monotonic()
    while True:
        if proc is not None and proc.poll() is not None:
            tail = log.read_text(errors="replace").strip().splitlines()[-8:] if log.exists() else []
            raise VirtbenchError(
                f"{what} exited with code {proc.returncode} while starting: " + " | ".join(tail))
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return time.monotonic() - started
        except OSError:
            pass
        if time.monotonic() - started > timeout_s:
            raise VirtbenchError(f"{what} did not listen on 127.0.0.1:{port} within {timeout_s} s "
                                 f"(log: {log})")
        time.sleep(0.02)
