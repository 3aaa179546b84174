"""Where commands run. Targets are the only code that spawns processes."""

from __future__ import annotations

import abc
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from virtbench.targets.process import Process

__all__ = ["BINARY_PROBE", "COMMAND_TIMEOUT_S", "KILL_WAIT_S", "PATH_STAT", "CommandFailed",
           "Gathered", "ProcResult", "Target", "cannot_run_true", "command_timeout"]

COMMAND_TIMEOUT_S = 3600.0
"""The time limit of a command run without one (s): no command is waited for forever. Inside a
trial every command gets the trial's remaining time instead (runner.deadline)."""
KILL_WAIT_S = 10.0
"""How long a process gets to vanish after SIGKILL (s); longer means stuck in the kernel."""


def command_timeout(timeout: float | None) -> float:
    """``timeout``, or :data:`COMMAND_TIMEOUT_S` for a command given none."""
    return COMMAND_TIMEOUT_S if timeout is None else timeout


@dataclass(frozen=True)
class ProcResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    duration_s: float
    """Wall-clock seconds from spawn to exit, measured with a monotonic clock."""


# Where a binary is and which file it is: its path, then `stat -L` (device, inode, size, mtime,
# ctime), then the file's first two bytes ("#!": a script) -- one line each. ``gather`` answers
# in this form, with this `sh` script or (virtbench's SSH agent) without any process.
BINARY_PROBE = ('p=$(command -v -- "$1") || exit 1; printf "%s\\n" "$p"; '
                'stat -L -c "%d %i %s %Y %Z" -- "$p"; head -c 2 -- "$p"')


# A file's or directory's identity, to the nanosecond: device, inode, size, mtime, ctime.
PATH_STAT = "%d %i %s %.9Y %.9Z"


@dataclass
class Gathered:
    """What ``Target.gather`` found, in the order asked."""

    files: list[str | None]
    """Each file's text; None: it could not be read."""
    binaries: list[str | None]
    """Each binary's probe (see BINARY_PROBE); None: not on the PATH."""
    results: list[ProcResult]
    stats: list[str | None]
    """Each path's identity (PATH_STAT, following links); None: it does not exist."""


class CommandFailed(RuntimeError):
    def __init__(self, result: ProcResult) -> None:
        tail = (result.stderr or result.stdout).strip().splitlines()[-5:]
        super().__init__(
            f"{' '.join(result.argv)} exited {result.returncode}: " + " | ".join(tail)
        )
        self.result = result


class Target(abc.ABC):
    """A machine (or namespace, or guest) that runs argument lists, never shell strings."""

    name: str = "target"

    @abc.abstractmethod
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
        """Run to completion. ``env`` entries set (str) or unset (None) variables. ``timeout``
        (s; None: :data:`COMMAND_TIMEOUT_S`) passed, the command is killed and
        ``subprocess.TimeoutExpired`` raised."""

    def run_timed(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str | None] | None = None,
        timeout: float | None = None,
        check: bool = True,
    ) -> ProcResult:
        """Run to completion for its time alone: ``duration_s`` from just before the spawn to
        the exit, as ``hyperfine -N`` measures; stdout is not kept. Default: ``run``."""
        return self.run(argv, env=env, timeout=timeout, check=check)

    @abc.abstractmethod
    def spawn(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str | None] | None = None,
        cwd: str | None = None,
        stdout: int | None = subprocess.DEVNULL,
        stderr: int | None = subprocess.DEVNULL,
    ) -> Process:
        """Start a long-running process (a server, a background flow); the caller stops it
        through the handle (``stop``, ``signal``, ``wait``): nothing outside the targets
        signals or waits for a process itself."""

    @abc.abstractmethod
    def which(self, binary: str) -> str | None:
        """Absolute path of ``binary`` on this target, or None."""

    @abc.abstractmethod
    def python(self) -> list[str]:
        """argv prefix that runs a Python 3 interpreter on this target."""

    def check(self) -> list[str]:
        """Problems that stop this target from running anything (an unreachable host)."""
        return []

    batches: bool = False
    """True when ``run_batch`` costs one round trip (SSH) rather than one process per command."""

    cheap_probes: bool = False
    """True when ``gather`` reads files, probes binaries and stats paths without a process
    for each (this machine itself, an SSH host's agent): facts are then remembered across
    runs by those identities, since checking them costs less than asking again."""

    def run_batch(self, argvs: Sequence[Sequence[str]], *,
                  timeout: float | None = None) -> list[ProcResult]:
        """Run short independent commands, never raising for their exit codes (``check=False``).

        Default: one after the other; a remote target runs them all in one round trip.
        """
        return [self.run(argv, timeout=timeout, check=False) for argv in argvs]

    def gather(self, files: Sequence[str], binaries: Sequence[str],
               argvs: Sequence[Sequence[str]], *, paths: Sequence[str] = (),
               timeout: float | None = None) -> Gathered:
        """Files' texts, binaries' and paths' identities and short commands' results at once
        (facts).

        Default: as commands (``cat``, ``sh -c BINARY_PROBE``, ``stat``) in one ``run_batch``;
        the SSH target's agent reads, probes and stats itself, without a process.
        """
        asked = [*(["cat", "--", path] for path in files),
                 *(["sh", "-c", BINARY_PROBE, "sh", binary] for binary in binaries),
                 *(["stat", "-L", "-c", PATH_STAT, "--", path] for path in paths), *argvs]
        results = self.run_batch(asked, timeout=timeout)
        texts = [r.stdout if r.returncode == 0 else None for r in results]
        ends = [len(files), len(files) + len(binaries), len(files) + len(binaries) + len(paths)]
        return Gathered(texts[:ends[0]], texts[ends[0]:ends[1]], results[ends[2]:],
                        [t.strip() if t is not None else None for t in texts[ends[1]:ends[2]]])

    def describe(self) -> str:
        return self.name

    def machine(self) -> str:
        """The machine whose files, binaries and boot this target sees: the key of the facts
        remembered across runs (a target made for one run, as a lab's namespace, shares its
        machine's rather than adding its own each run)."""
        return self.describe()

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections (an SSH master, a libvirt connection); idempotent."""


def cannot_run_true(target: Target, verb: str) -> list[str]:
    """[] when ``true`` runs on ``target``; else one problem: "cannot VERB TARGET: reason"."""
    result = target.run(["true"], check=False, timeout=60)
    if result.returncode == 0:
        return []
    reason = (result.stderr.strip().splitlines() or [f"exit code {result.returncode}"])[-1]
    return [f"cannot {verb} {target.name}: {reason}"]
