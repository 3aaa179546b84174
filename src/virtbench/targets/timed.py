"""One command timed as ``hyperfine -N`` times it: from just before the spawn to the exit.

``subprocess.run`` adds its own bookkeeping to a short command's time (pipes, reader threads or
selectors, decoding): +40 % on `true` here. This spawns with ``posix_spawn`` (a vfork-style
clone, like hyperfine's Rust runtime), waits on a pidfd (so a time limit costs no polling) and
reads the clock right after the child is reaped. Like hyperfine's default, stdout is discarded;
stderr goes to a file read only when the command fails.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence

from virtbench.targets.base import CommandFailed, ProcResult

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
    program = shutil.which(args[0], path=env.get("PATH", os.defpath))
    if program is None:
        raise CommandFailed(ProcResult(tuple(args), 127, "", f"{args[0]}: command not found",
                                       0.0))
    with tempfile.TemporaryFile() as err, open(os.devnull, "r+b") as null:
        actions = [(os.POSIX_SPAWN_DUP2, null.fileno(), 0),
                   (os.POSIX_SPAWN_DUP2, null.fileno(), 1),
                   (os.POSIX_SPAWN_DUP2, err.fileno(), 2)]
        started = time.perf_counter()
        pid = os.posix_spawn(program, args, env, file_actions=actions, setsigdef=_DEFAULTED)
        exited = _wait(pid, timeout)
        duration = time.perf_counter() - started
        if exited is None:
            raise subprocess.TimeoutExpired(args, timeout or 0.0)
        returncode = os.waitstatus_to_exitcode(exited)
        stderr = ""
        if returncode != 0:
            err.seek(0)
            stderr = err.read().decode(errors="replace")
    result = ProcResult(tuple(args), returncode, "", stderr, duration)
    if check and returncode != 0:
        raise CommandFailed(result)
    return result


def _wait(pid: int, timeout: float | None) -> int | None:
    """The wait status of ``pid``, or None after killing it when ``timeout`` passed first."""
    if timeout is None:
        return os.waitpid(pid, 0)[1]
    pidfd = os.pidfd_open(pid)
    try:
        # A pidfd becomes readable when the process exits: no polling loop, no timer thread.
        if not select.select([pidfd], [], [], timeout)[0]:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None
        return os.waitpid(pid, 0)[1]
    finally:
        os.close(pidfd)
