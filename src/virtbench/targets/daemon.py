"""Long-running processes (servers, background flows, stressed neighbours): start one on a
target, wait until it is ready (a port listens, a file appears), stop it with its whole process
group — and, after a crash, stop a recorded PID only while it is provably still ours.

Every spawn goes through :meth:`Target.spawn`, which starts the process in a session of its own:
its process group is its alone (nginx workers, the Varnish child, php-fpm's pool go with it).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from virtbench.model import VirtbenchError
from virtbench.targets.process import Process
from virtbench.targets.target_contract import CommandFailed, Target

__all__ = ["Daemon", "free_port", "is_ours", "listening", "start_daemon", "stop_pid",
           "wait_until"]


class Daemon:
    """A process we started on ``target``; ``stop`` ends it and its process group."""

    def __init__(self, target: Target, process: Process, argv: Sequence[str],
                 what: str, log: Path | None) -> None:
        self.target = target
        self.process = process
        self.argv = list(argv)
        self.what = what
        self.log = log
        self.on_stop: Callable[[], None] | None = None
        """Called once the process is gone (a lab drops its manifest record here)."""

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def exit_error(self) -> VirtbenchError | None:
        """The error to raise when the process has exited (None while it runs)."""
        if self.alive():
            return None
        return VirtbenchError(f"{self.what} exited with code {self.process.returncode} while "
                              f"starting: {_tail(self.log)}")

    def wait_for_port(self, port: int, *, udp: bool = False, timeout_s: float = 15.0) -> float:
        """Seconds until something listens on ``port`` where the daemon runs (its target:
        this machine, a namespace); VirtbenchError when it exits first or the time is up."""
        kind = "UDP" if udp else "TCP"
        return wait_until(lambda: listening(self.target, port, udp=udp),
                          f"{self.what} listening on {kind} port {port} "
                          f"({self.target.describe()})", daemons=[self], timeout_s=timeout_s)

    def wait_for_file(self, path: Path, *, timeout_s: float = 20.0) -> float:
        """Seconds until ``path`` (a socket, a pid file) exists."""
        return wait_until(path.exists, f"{self.what} creating {path}", daemons=[self],
                          timeout_s=timeout_s)

    def stop(self, grace_s: float = 10.0) -> int | None:
        """SIGTERM the process group, SIGKILL after ``grace_s`` s; returns the exit code once
        the leader is reaped (the group's other members got the same signal and end when next
        scheduled)."""
        if self.alive():
            self.process.signal_group(signal.SIGTERM)
            try:
                self.process.wait(grace_s)
            except subprocess.TimeoutExpired:
                self.process.signal_group(signal.SIGKILL)
                self.process.wait(grace_s)
        if self.on_stop is not None:
            hook, self.on_stop = self.on_stop, None
            hook()
        return self.process.returncode


def start_daemon(target: Target, argv: Sequence[str], *, what: str | None = None,
                 log: Path | None = None, env: Mapping[str, str | None] | None = None,
                 cwd: str | None = None) -> Daemon:
    """Spawn ``argv`` on ``target``; stdout and stderr go to ``log`` (appended) or nowhere."""
    out = open(log, "ab") if log is not None else None  # noqa: SIM115 - kept for the child
    try:
        sink = out.fileno() if out is not None else subprocess.DEVNULL
        process = target.spawn(argv, env=env, cwd=cwd, stdout=sink, stderr=sink)
    finally:
        if out is not None:
            out.close()
    return Daemon(target, process, argv, what or os.path.basename(argv[0]), log)


def wait_until(ready: Callable[[], bool], what: str, *, daemons: Sequence[Daemon] = (),
               timeout_s: float = 15.0, interval_s: float = 0.02) -> float:
    """Seconds until ``ready()``; VirtbenchError naming ``what`` when one of ``daemons`` exits
    first (with its log's last lines) or after ``timeout_s``."""
    started = time.monotonic()
    while True:  # ends: done, or past the deadline below
        for daemon in daemons:
            error = daemon.exit_error()
            if error is not None:
                raise error
        if ready():
            return time.monotonic() - started
        if time.monotonic() - started > timeout_s:
            logs = [str(d.log) for d in daemons if d.log is not None]
            raise VirtbenchError(f"no {what} within {timeout_s:g} s"
                                 + (f" (log: {', '.join(logs)})" if logs else ""))
        time.sleep(interval_s)


def listening(target: Target, port: int, *, udp: bool = False) -> bool:
    """True when a socket listens on ``port`` on ``target`` (``ss``, from iproute2)."""
    proto = "-Hlun" if udp else "-Hltn"
    try:
        result = target.run(["ss", proto, "sport", "=", f":{port}"], check=False)
    except CommandFailed as exc:  # a local target raises it even unchecked for a missing binary
        result = exc.result
    if result.returncode == 127:
        raise VirtbenchError(f"cannot check port {port} on {target.describe()}: `ss` not found; "
                             "install the Debian package iproute2")
    return bool(result.stdout.strip())


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def is_ours(pid: int, marker: str) -> bool:
    """True while ``pid``'s command line contains ``marker`` (our private directory, or the
    program we started): a PID reused by a stranger after a crash does not match."""
    return marker in _cmdline(pid)


def stop_pid(pid: int, marker: str, *, grace_s: float = 10.0) -> bool:
    """Stop a recorded process (and its group) that is provably still ours; True when one was
    signalled. SIGKILL after ``grace_s`` seconds. For PIDs without a :class:`Daemon` (a run that
    crashed); a running lab stops its daemons with :meth:`Daemon.stop`."""
    if not is_ours(pid, marker):
        return False
    if not _signal_group(pid, signal.SIGTERM):
        return False
    # Wait for the process itself to end, not for its command line to vanish: an exiting
    # process drops its memory map (and so its command line) before it closes its files, and a
    # DPDK daemon's open hugetlbfs files keep the mount busy until then.
    if not _ended_within(pid, grace_s):
        _signal_group(pid, signal.SIGKILL)
        _ended_within(pid, grace_s)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    return True


def _signal_group(pid: int, sig: int) -> bool:
    """Signal ``pid``'s group when it leads one (spawned in its own session), else ``pid``."""
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except ProcessLookupError:
        return False
    return True


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace")


def _ended_within(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not _ended(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def _ended(pid: int) -> bool:
    """Gone, or a zombie whose other threads are gone too: a multithreaded daemon's leader
    turns zombie first while its worker threads (DPDK's lcores) still hold its memory."""
    if not _zombie(pid):
        return False
    try:
        return len(os.listdir(f"/proc/{pid}/task")) <= 1
    except OSError:
        return True


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] == "Z"


def _tail(log: Path | None, lines: int = 8) -> str:
    if log is None or not log.exists():
        return "(no log)"
    return " | ".join(log.read_text(errors="replace").strip().splitlines()[-lines:])
