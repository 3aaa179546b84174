"""One command timed as ``hyperfine -N`` times it: from just before the spawn to the exit.

``subprocess.run`` adds its own bookkeeping to a short command's time (pipes, reader threads or
selectors, decoding): +40 % on `true` here. This spawns with ``posix_spawn`` (a vfork-style
clone, like hyperfine's Rust runtime), blocks in ``waitpid`` as hyperfine does and reads the
clock right after the child is reaped. Blocking in waitpid is hyperfine's way and matters on a
loaded machine: the kernel wakes a parent waiting in waitpid as a synchronous wake-up when the
child exits, whereas a poll on a pidfd gets an ordinary wake-up that may wait its turn.
A time limit is kept by one watchdog thread that sleeps until the earliest deadline and kills
through a pidfd, so it can never hit a reused PID; a command that ends in time does not wake it.
The garbage collector is off while the command runs, as timeit does. Like hyperfine's default,
stdout is discarded; stderr goes to a file read only when the command fails.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import select
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence

from virtbench.targets.target_contract import KILL_WAIT_S, CommandFailed, ProcResult

__all__ = ["spawn_timed"]

# Python ignores SIGPIPE (and SIGXFSZ); give the command the defaults, as subprocess does.
_DEFAULTED = (signal.SIGPIPE, signal.SIGXFSZ)


def spawn_timed(argv: Sequence[str], env: Mapping[str, str], timeout: float | None,
                check: bool = True) -> ProcResult:
    """Run ``argv`` (no shell) with exactly ``env``; ``duration_s`` is spawn-to-exit wall time.

    Raises CommandFailed (exit status, or 127 when the program is not found) when ``check``,
    and subprocess.TimeoutExpired after killing the command when ``timeout`` passes.
    """
    args = list(argv)
    program = _program(args[0], env.get("PATH", os.defpath))
    if program is None:
        raise CommandFailed(ProcResult(tuple(args), 127, "", f"{args[0]}: command not found",
                                       0.0))
    # stderr into memory (one system call, where a temporary file in /tmp cost ~0.1 ms here)
    err = os.memfd_create("vb-timed-stderr", os.MFD_CLOEXEC)
    try:
        null = _devnull()
        actions = [(os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, null, 1),
                   (os.POSIX_SPAWN_DUP2, err, 2)]
        collecting = gc.isenabled()
        gc.disable()  # as timeit does: a collection of the runner's heap is not the command's
        try:
            started = time.perf_counter()
            # A session of its own: a time limit or Ctrl-C kills the command's process group.
            pid = os.posix_spawn(program, args, env, file_actions=actions,
                                 setsigdef=_DEFAULTED, setsid=True)
            exited = _wait(pid, timeout)
            duration = time.perf_counter() - started
        finally:
            if collecting:
                gc.enable()
        if exited is None:
            raise subprocess.TimeoutExpired(args, timeout or 0.0)
        returncode = os.waitstatus_to_exitcode(exited)
        stderr = ""
        if returncode != 0:
            with open(err, "rb", closefd=False) as written:
                written.seek(0)
                stderr = written.read().decode(errors="replace")
    finally:
        os.close(err)
    result = ProcResult(tuple(args), returncode, "", stderr, duration)
    if check and returncode != 0:
        raise CommandFailed(result)
    return result


_FOUND: dict[tuple[str, str], str] = {}  # (name, PATH) -> the program found last time


def _program(name: str, path: str) -> str | None:
    """shutil.which(name, path), remembered while the program stays executable: walking PATH
    (a stat per directory) cost ~0.3 ms per call here under load, as long as `true` runs."""
    known = _FOUND.get((name, path))
    if known is not None and os.access(known, os.X_OK):
        return known
    found = shutil.which(name, path=path)
    if found is not None:
        _FOUND[(name, path)] = found
    return found


@functools.cache
def _devnull() -> int:
    """One descriptor of /dev/null for every command's stdin and stdout (dup2'd in the child)."""
    return os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)


class _Watchdog:
    """Kills commands that outlive their deadline; asleep while none is due.

    The thread sleeps until ``_wake_at`` and is woken early only for a deadline before that.
    ``_wake_at`` moves later only when the thread wakes on time, never when a command ends:
    so the thread sleeps through a series of short commands (deadlines an hour away, each
    later than the last) instead of being woken, and competing for a CPU, once per command.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._due: dict[int, tuple[int, float]] = {}  # pidfd -> (pid, monotonic deadline)
        self._expired: set[int] = set()
        self._wake_at = float("inf")
        self._thread: threading.Thread | None = None
        self.notifies = 0  # early wake-ups asked for (tests check that they stay rare)

    def watch(self, pidfd: int, pid: int, deadline: float) -> None:
        with self._cond:
            self._due[pidfd] = (pid, deadline)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="vb-timed-watchdog",
                                                daemon=True)
                self._thread.start()
            if deadline < self._wake_at:
                self._wake_at = deadline
                self.notifies += 1
                self._cond.notify()

    def release(self, pidfd: int) -> bool:
        """Stop watching; True when the command was killed for its deadline."""
        with self._cond:
            self._due.pop(pidfd, None)
            if pidfd in self._expired:
                self._expired.discard(pidfd)
                return True
            return False

    def _loop(self) -> None:
        # The watchdog's own service loop, in a daemon thread nobody waits for: it idles
        # (without a bound) only while no command is watched, and dies with the process.
        with self._cond:
            while True:
                now = time.monotonic()
                if now >= self._wake_at:  # on time (not an early notify): kill what is due
                    for pidfd, (pid, deadline) in list(self._due.items()):
                        if deadline <= now:
                            del self._due[pidfd]
                            self._expired.add(pidfd)
                            _kill_group(pidfd, pid)
                    self._wake_at = min((d for _, d in self._due.values()),
                                        default=float("inf"))
                self._cond.wait(None if self._wake_at == float("inf")
                                else self._wake_at - now)


_WATCHDOG = _Watchdog()


def _kill_group(pidfd: int, pid: int) -> None:
    """SIGKILL the command and its process group (it leads a session of its own)."""
    try:
        # Through the pidfd first: it fails once the command was reaped, so a reused pid's
        # group is never hit.
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    except OSError:
        return
    with contextlib.suppress(OSError):  # no member left: nothing to do
        os.killpg(pid, signal.SIGKILL)


def _wait(pid: int, timeout: float | None) -> int | None:
    """The wait status of ``pid``, or None after killing it when ``timeout`` passed first.

    Interrupted (Ctrl-C, or SIGTERM turned into one by the runner), the command is killed and
    reaped before the interruption goes on, as subprocess.run does.
    """
    pidfd = os.pidfd_open(pid)
    try:
        if timeout is not None:
            _WATCHDOG.watch(pidfd, pid, time.monotonic() + timeout)
        try:
            status = os.waitpid(pid, 0)[1]
        finally:
            timed_out = timeout is not None and _WATCHDOG.release(pidfd)
        return None if timed_out else status
    except BaseException:
        _kill_group(pidfd, pid)
        # Reaped once gone (the pidfd turns readable); one stuck in the kernel is left behind.
        if select.select([pidfd], [], [], KILL_WAIT_S)[0]:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        raise
    finally:
        os.close(pidfd)
