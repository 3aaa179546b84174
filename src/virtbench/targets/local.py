"""Commands on the machine virtbench runs on (optionally inside a network namespace)."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from virtbench.targets.base import (
    KILL_WAIT_S,
    CommandFailed,
    ProcResult,
    Target,
    cannot_run_true,
    command_timeout,
)
from virtbench.targets.timed import spawn_timed

__all__ = ["KILL_WAIT_S", "LocalTarget", "NetnsTarget", "kill_process_group", "merged_env",
           "reap_killed"]

_log = logging.getLogger(__name__)


def merged_env(overrides: Mapping[str, str | None] | None) -> dict[str, str]:
    env = dict(os.environ)
    for key, value in (overrides or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def kill_process_group(proc: subprocess.Popen[Any], *, reap: bool = True) -> None:
    """SIGKILL the process group that ``proc`` leads (started with ``start_new_session``),
    then reap ``proc`` unless ``reap`` is False (in a signal handler, where waiting could
    deadlock with a wait it interrupted); children that moved to a session of their own are
    out of reach. A process still there :data:`KILL_WAIT_S` after SIGKILL is stuck in the
    kernel (a hung disk or NFS): a warning names it and it is left behind."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    if reap:
        reap_killed(proc)


def reap_killed(proc: subprocess.Popen[Any]) -> int | None:
    """Reap ``proc`` after SIGKILL, waiting at most :data:`KILL_WAIT_S`; its exit code, or
    None (with a warning) when it did not end."""
    try:
        return proc.wait(KILL_WAIT_S)
    except subprocess.TimeoutExpired:
        _log.warning("process %d (%s) did not end within %g s of SIGKILL; left behind",
                     proc.pid, _name(proc), KILL_WAIT_S)
        return None


def _name(proc: subprocess.Popen[Any]) -> str:
    args = proc.args
    if isinstance(args, str | bytes | os.PathLike):
        return os.fsdecode(args)
    return " ".join(os.fsdecode(a) for a in list(args)[:3])


class LocalTarget(Target):
    name = "local"

    def _wrap(self, argv: Sequence[str]) -> list[str]:
        return list(argv)

    def run(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str | None] | None = None,
        cwd: str | None = None,
        timeout: float | None = None,
        input: str | None = None,
        check: bool = True,
    ) -> ProcResult:
        full = self._wrap(argv)
        started = time.perf_counter()
        try:
            # Its own session (and process group), so a timeout ends its children too.
            proc = subprocess.Popen(
                full,
                env=merged_env(env),
                cwd=cwd,
                stdin=None if input is None else subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            raise CommandFailed(
                ProcResult(tuple(full), 127, "", f"{exc}", time.perf_counter() - started)
            ) from exc
        # Not ``with proc:``: its exit waits for the process without a bound.
        try:
            stdout, stderr = proc.communicate(input, timeout=command_timeout(timeout))
        except BaseException:  # the time limit, Ctrl-C, a trial's deadline: all of it ends
            kill_process_group(proc)
            raise
        finally:
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
        result = ProcResult(
            tuple(full), proc.returncode, stdout, stderr, time.perf_counter() - started
        )
        if check and proc.returncode != 0:
            raise CommandFailed(result)
        return result

    def run_timed(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str | None] | None = None,
        timeout: float | None = None,
        check: bool = True,
    ) -> ProcResult:
        return spawn_timed(self._wrap(argv), merged_env(env), command_timeout(timeout), check)

    def spawn(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str | None] | None = None,
        cwd: str | None = None,
        stdout: int | None = subprocess.DEVNULL,
        stderr: int | None = subprocess.DEVNULL,
        stdin: int | None = subprocess.DEVNULL,
    ) -> subprocess.Popen[bytes]:
        # A new session keeps Ctrl-C in the terminal from reaching servers before we stop them.
        # stdin: a pipe only for a process we talk to (the SSH agent's session).
        return subprocess.Popen(
            self._wrap(argv),
            env=merged_env(env),
            cwd=cwd,
            stdout=stdout,
            stderr=stderr,
            stdin=stdin,
            start_new_session=True,
        )

    def which(self, binary: str) -> str | None:
        return shutil.which(binary)

    def python(self) -> list[str]:
        return [sys.executable]


class NetnsTarget(LocalTarget):
    """A network namespace on this machine, entered with ``ip netns exec``."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.name = f"netns:{namespace}"

    def _wrap(self, argv: Sequence[str]) -> list[str]:
        return ["ip", "netns", "exec", self.namespace, *argv]

    def check(self) -> list[str]:
        return cannot_run_true(self, "enter")
