"""Commands on the machine virtbench runs on (optionally inside a network namespace)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from virtbench.targets.process import Process
from virtbench.targets.ssh_agent_program import probe_binary, read_text, stat_identity
from virtbench.targets.target_contract import (
    KILL_WAIT_S,
    CommandFailed,
    Gathered,
    ProcResult,
    Target,
    cannot_run_true,
    command_timeout,
)
from virtbench.targets.timed import spawn_timed

__all__ = ["KILL_WAIT_S", "LocalTarget", "NetnsTarget", "kill_process_group", "merged_env"]


def merged_env(overrides: Mapping[str, str | None] | None) -> dict[str, str]:
    env = dict(os.environ)
    for key, value in (overrides or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def kill_process_group(proc: subprocess.Popen[Any] | Process, *, reap: bool = True) -> None:
    """SIGKILL the process group that ``proc`` leads (started with ``start_new_session``),
    then reap it unless ``reap`` is False: :meth:`Process.kill_group`."""
    (proc if isinstance(proc, Process) else Process(proc, local=True)).kill_group(reap=reap)


class LocalTarget(Target):
    name = "local"
    cheap_probes = True

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
    ) -> Process:
        # A new session keeps Ctrl-C in the terminal from reaching servers before we stop them.
        # stdin: a pipe only for a process we talk to (the SSH agent's session).
        full = self._wrap(argv)
        return Process(subprocess.Popen(
            full,
            env=merged_env(env),
            cwd=cwd,
            stdout=stdout,
            stderr=stderr,
            stdin=stdin,
            start_new_session=True,
        ), full)

    def which(self, binary: str) -> str | None:
        return shutil.which(binary)

    def machine(self) -> str:
        return LocalTarget.name  # a namespace or cgroup of this machine too

    def gather(self, files: Sequence[str], binaries: Sequence[str],
               argvs: Sequence[Sequence[str]], *, paths: Sequence[str] = (),
               timeout: float | None = None) -> Gathered:
        """Files read, binaries probed and paths stat'ed by this process, as the SSH agent
        does on its host (three processes each otherwise), then the commands."""
        probes = []
        for binary in binaries:
            found = self.which(binary)
            probes.append(None if found is None else probe_binary(binary, found))
        return Gathered([read_text(path) for path in files], probes,
                        self.run_batch(argvs, timeout=timeout),
                        [stat_identity(path) for path in paths])

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
