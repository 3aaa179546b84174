"""The handle of a process a target started: the only way code outside ``virtbench.targets``
signals, stops or waits for a process.

``Target.spawn`` returns a :class:`Process`. It wraps the ``subprocess.Popen`` of a local
process (an ``ssh`` client for a remote target's spawn) or the agent's
:class:`~virtbench.targets.ssh.RemoteProcess`, and changes nothing of what they do: a local
process leads a process group of its own (``start_new_session``), so :meth:`Process.stop` and
:meth:`Process.kill_group` reach its children; a remote process is signalled by the agent.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal as signals
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import IO, Protocol

from virtbench.targets.target_contract import KILL_WAIT_S

__all__ = ["Finished", "Process"]


@dataclass(frozen=True)
class Finished:
    """A process that ended."""

    returncode: int
    stdout: bytes | None = None
    """What it wrote to a pipe (``spawn(stdout=subprocess.PIPE)``); None: not captured."""
    stderr: bytes | None = None
    rusage: resource.struct_rusage | None = None
    """Its resource use (``os.wait4``): a local process reaped by :meth:`Process.wait` with no
    pipe to read; None otherwise (a remote process, captured output, reaped elsewhere)."""


class _Child(Protocol):
    """What Process drives: ``subprocess.Popen`` or the agent's RemoteProcess."""

    pid: int
    returncode: int | None

    def poll(self) -> int | None: ...
    def wait(self, timeout: float | None = None) -> int: ...
    def send_signal(self, sig: int) -> None: ...


class Process:
    """A process started by a target: signal it, stop it (with escalation), wait for it."""

    def __init__(self, child: _Child, argv: list[str] | tuple[str, ...] | None = None, *,
                 local: bool | None = None) -> None:
        self._child = child
        self._local = isinstance(child, subprocess.Popen) if local is None else local
        """A process of this machine (signalled with os.killpg), else the agent's."""
        self.argv = list(argv if argv is not None else getattr(child, "args", []) or [])
        self._rusage: resource.struct_rusage | None = None

    def __repr__(self) -> str:
        return f"<Process {self.pid} {' '.join(self.argv[:3])!r} rc={self.returncode}>"

    @property
    def pid(self) -> int:
        return self._child.pid

    @property
    def returncode(self) -> int | None:
        """The exit code once it ended and was reaped (``poll``, ``wait``); else None."""
        return self._child.returncode

    @property
    def stdin(self) -> IO[bytes] | None:
        return self._child.stdin if isinstance(self._child, subprocess.Popen) else None

    @property
    def stdout(self) -> IO[bytes] | None:
        """Its stdout, when spawned with ``stdout=subprocess.PIPE`` (local processes)."""
        return self._child.stdout if isinstance(self._child, subprocess.Popen) else None

    @property
    def stderr(self) -> IO[bytes] | None:
        return self._child.stderr if isinstance(self._child, subprocess.Popen) else None

    @property
    def _popen(self) -> subprocess.Popen[bytes]:
        assert isinstance(self._child, subprocess.Popen)
        return self._child

    def poll(self) -> int | None:
        """The exit code, or None while it runs; never blocks (also in a signal handler)."""
        return self._child.poll()

    def wait(self, timeout: float | None = None) -> Finished:
        """Wait for the end (at most ``timeout`` s: ``subprocess.TimeoutExpired``, the process
        left running; a later ``wait`` keeps what was read), reading its captured output to
        the end meanwhile and closing its stdin pipe, as ``Popen.communicate`` does."""
        child = self._child
        if isinstance(child, subprocess.Popen):
            if child.stdout is not None or child.stderr is not None:
                out, err = child.communicate(timeout=timeout)
                return Finished(child.returncode, out, err)
            if child.returncode is None:
                self._wait4(timeout)
        code = child.wait(timeout)
        return Finished(code, rusage=self._rusage)

    def _wait4(self, timeout: float | None) -> None:
        """Reap a local process with ``os.wait4`` for its resource use, as ``Popen.wait`` reaps
        with ``waitpid``: under the lock Popen itself takes (so a ``poll`` elsewhere never reaps
        it under our feet), blocking without a timeout, else polling with growing sleeps."""
        popen = self._popen
        lock = getattr(popen, "_waitpid_lock", None)
        if not isinstance(lock, type(threading.Lock())):
            return  # another Python: Popen.wait alone, without the resource use
        if timeout is None:
            with lock:
                if popen.returncode is None:
                    try:
                        _pid, status, usage = os.wait4(popen.pid, 0)
                    except ChildProcessError:
                        return  # reaped elsewhere: Popen.wait knows what it can
                    self._rusage = usage
                    popen.returncode = os.waitstatus_to_exitcode(status)
            return
        ends = time.monotonic() + timeout
        delay = 0.0005
        while popen.returncode is None:
            if lock.acquire(False):
                try:
                    if popen.returncode is None:
                        pid, status, usage = os.wait4(popen.pid, os.WNOHANG)
                        if pid == popen.pid:
                            self._rusage = usage
                            popen.returncode = os.waitstatus_to_exitcode(status)
                            return
                except ChildProcessError:
                    return  # reaped elsewhere: Popen.wait knows what it can
                finally:
                    lock.release()
            left = ends - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(self.argv, timeout)
            time.sleep(min(delay, left))
            delay = min(delay * 2, 0.05)

    def signal(self, sig: int) -> None:
        """Send ``sig`` to the process itself (not its group); nothing once it was reaped."""
        if self.returncode is None:
            self._child.send_signal(sig)

    def signal_group(self, sig: int) -> None:
        """Send ``sig`` to its process group (a local process; a remote one: to the process,
        through the agent, which started it in a session of its own)."""
        if not self._local:
            self.signal(sig)
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    def kill_group(self, *, reap: bool = True) -> int | None:
        """SIGKILL its process group, then reap it (waiting at most :data:`KILL_WAIT_S`; a
        process still there is stuck in the kernel: a warning, and it is left behind) unless
        ``reap`` is False (in a signal handler, where waiting could deadlock). Children that
        moved to a session of their own are out of reach. The exit code, or None."""
        self.signal_group(signals.SIGKILL)
        if not reap:
            return None
        try:
            return self._child.wait(KILL_WAIT_S)
        except subprocess.TimeoutExpired:
            import logging  # here alone: `run FILE --check` starts no process (about 3 ms)

            logging.getLogger(__name__).warning(
                "process %d (%s) did not end within %g s of SIGKILL; left behind",
                self.pid, " ".join(self.argv[:3]), KILL_WAIT_S)
            return None

    def stop(self, grace_s: float = 10.0, *, first: int = signals.SIGTERM,
             group: bool = True) -> int | None:
        """End it: ``first`` (SIGTERM) to its process group (``group=False``: to the process
        alone), then, when it is still there ``grace_s`` s later, SIGKILL to its group (see
        :meth:`kill_group`); its exit code (None: left behind, stuck in the kernel)."""
        if self.poll() is None:
            if group:
                self.signal_group(first)
            else:
                self.signal(first)
            try:
                return self._child.wait(grace_s)
            except subprocess.TimeoutExpired:
                return self.kill_group()
        return self.returncode


def raw_popen(process: Process) -> subprocess.Popen[bytes]:
    """The ``Popen`` under a local process, for the targets' own plumbing (the SSH agent's
    session reads its pipes in threads of its own); never used outside ``virtbench.targets``."""
    return process._popen
