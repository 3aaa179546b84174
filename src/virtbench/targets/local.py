"""Commands on the machine virtbench runs on (optionally inside a network namespace)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence

from virtbench.targets.base import CommandFailed, ProcResult, Target
from virtbench.targets.timed import spawn_timed

__all__ = ["LocalTarget", "NetnsTarget", "merged_env"]


def merged_env(overrides: Mapping[str, str | None] | None) -> dict[str, str]:
    env = dict(os.environ)
    for key, value in (overrides or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


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
            proc = subprocess.run(
                full,
                env=merged_env(env),
                cwd=cwd,
                timeout=timeout,
                input=input,
                capture_output=True,
                text=True,
                check=False,
            )
        except FileNotFoundError as exc:
            raise CommandFailed(
                ProcResult(tuple(full), 127, "", f"{exc}", time.perf_counter() - started)
            ) from exc
        result = ProcResult(
            tuple(full), proc.returncode, proc.stdout, proc.stderr, time.perf_counter() - started
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
        return spawn_timed(self._wrap(argv), merged_env(env), timeout, check)

    def spawn(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str | None] | None = None,
        cwd: str | None = None,
        stdout: int | None = subprocess.DEVNULL,
        stderr: int | None = subprocess.DEVNULL,
    ) -> subprocess.Popen[bytes]:
        # A new session keeps Ctrl-C in the terminal from reaching servers before we stop them.
        return subprocess.Popen(
            self._wrap(argv),
            env=merged_env(env),
            cwd=cwd,
            stdout=stdout,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
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
