"""A target that starts no process: scripted results, every call recorded.

For unit tests of workloads and the runner, as hyperfine's MockExecutor or httpx's
MockTransport serve theirs::

    target = FakeTarget([Scripted(("python3", "-c"), stdout='{"times": [0.5]}')])
    result = workload.run(TrialContext(target=target, ...))
    assert target.calls[0].argv[:2] == ("python3", "-c")

A command matches the first :class:`Scripted` whose pattern is a prefix of it, element by
element as ``fnmatch`` patterns (``"*"``: any one argument); a command nothing matches exits 127
("not scripted"), as a missing binary does. No time passes: ``duration_s`` is reported, not
slept. A spawned process (:class:`FakeProcess`) ends when waited for (or at once with
``duration_s=0``), when a terminating signal reaches it, or never (``duration_s=None``: a
server, which ``wait`` with a timeout reports as still running).
"""

from __future__ import annotations

import fnmatch
import itertools
import signal as signals
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from virtbench.targets.process import Finished, Process
from virtbench.targets.target_contract import CommandFailed, ProcResult, Target

__all__ = ["Call", "FakeProcess", "FakeTarget", "Scripted"]

NOT_SCRIPTED = 127
_ENDING = {signals.SIGTERM, signals.SIGKILL, signals.SIGINT, signals.SIGHUP}
_pids = itertools.count(1 << 22)  # above pid_max's default: never a real process's number


@dataclass(frozen=True)
class Scripted:
    """What a command whose argv starts with ``pattern`` does."""

    pattern: tuple[str, ...]
    returncode: int = 0
    stdout: str = ""
    stderr: str = ""
    duration_s: float | None = 0.0
    """Reported by ``run`` (a ``timeout`` below it raises ``TimeoutExpired``); for ``spawn``
    0: ended at once, None: runs until signalled, else: ends when waited for."""

    def matches(self, argv: Sequence[str]) -> bool:
        return len(argv) >= len(self.pattern) and all(
            fnmatch.fnmatchcase(arg, pat) for arg, pat in zip(argv, self.pattern, strict=False))


@dataclass
class Call:
    """One call the target was asked to make."""

    kind: str
    """"run", "run_timed" or "spawn"."""
    argv: tuple[str, ...]
    env: dict[str, str | None] = field(default_factory=dict)
    cwd: str | None = None
    timeout: float | None = None
    input: str | None = None
    process: FakeProcess | None = None
    """The handle a spawn returned."""


class _FakeChild:
    """The scripted process under a FakeProcess (the ``_Child`` Process drives)."""

    def __init__(self, argv: Sequence[str], scripted: Scripted) -> None:
        self.pid = next(_pids)
        self.args = list(argv)
        self.scripted = scripted
        self.returncode: int | None = (scripted.returncode if scripted.duration_s == 0
                                       else None)
        self.signals: list[int] = []

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if self.scripted.duration_s is None:  # a server: runs until signalled
                if timeout is None:
                    raise AssertionError(f"waiting forever for {self.args} (scripted to run "
                                         "until signalled)")
                raise subprocess.TimeoutExpired(self.args, timeout)
            if timeout is not None and self.scripted.duration_s > timeout:
                raise subprocess.TimeoutExpired(self.args, timeout)
            self.returncode = self.scripted.returncode
        return self.returncode

    def send_signal(self, sig: int) -> None:
        self.signals.append(int(sig))
        if sig in _ENDING and self.returncode is None:
            self.returncode = -int(sig)


class FakeProcess(Process):
    """What FakeTarget.spawn returns: a Process with no process under it. ``signals`` lists
    what reached it (group or not); SIGTERM, SIGKILL, SIGINT and SIGHUP end it."""

    def __init__(self, argv: Sequence[str], scripted: Scripted, *, captured: bool) -> None:
        self._fake = _FakeChild(argv, scripted)
        super().__init__(self._fake, list(argv), local=False)
        self._captured = captured

    @property
    def signals(self) -> list[int]:
        return self._fake.signals

    def wait(self, timeout: float | None = None) -> Finished:
        code = self._fake.wait(timeout)
        if not self._captured:
            return Finished(code)
        scripted = self._fake.scripted
        return Finished(code, scripted.stdout.encode(), scripted.stderr.encode())


class FakeTarget(Target):
    """Runs nothing: answers each command from ``script`` and records it in ``calls``."""

    name = "fake"

    def __init__(self, script: Sequence[Scripted] = (), *,
                 binaries: Mapping[str, str] | None = None,
                 python: Sequence[str] = ("python3",)) -> None:
        self.script = list(script)
        self.binaries = None if binaries is None else dict(binaries)
        """``which`` answers: None finds every binary at /usr/bin/NAME."""
        self._python = list(python)
        self.calls: list[Call] = []

    def add(self, *pattern: str, returncode: int = 0, stdout: str = "", stderr: str = "",
            duration_s: float | None = 0.0) -> FakeTarget:
        """Script one more command (after those already scripted); returns the target."""
        self.script.append(Scripted(pattern, returncode, stdout, stderr, duration_s))
        return self

    def _scripted(self, argv: Sequence[str]) -> Scripted:
        return next((s for s in self.script if s.matches(argv)),
                    Scripted(tuple(argv), NOT_SCRIPTED, "",
                             f"fake target: no scripted result for {list(argv)}\n"))

    def run(self, argv: Sequence[str], *, env: Mapping[str, str | None] | None = None,
            cwd: str | None = None, timeout: float | None = None, input: str | None = None,
            check: bool = True) -> ProcResult:
        self.calls.append(Call("run", tuple(argv), dict(env or {}), cwd, timeout, input))
        return self._result(argv, timeout, check)

    def run_timed(self, argv: Sequence[str], *, env: Mapping[str, str | None] | None = None,
                  timeout: float | None = None, check: bool = True) -> ProcResult:
        self.calls.append(Call("run_timed", tuple(argv), dict(env or {}), None, timeout))
        return self._result(argv, timeout, check)

    def _result(self, argv: Sequence[str], timeout: float | None, check: bool) -> ProcResult:
        scripted = self._scripted(argv)
        duration = scripted.duration_s or 0.0
        if timeout is not None and duration > timeout:
            raise subprocess.TimeoutExpired(list(argv), timeout)
        result = ProcResult(tuple(argv), scripted.returncode, scripted.stdout, scripted.stderr,
                            duration)
        if check and result.returncode != 0:
            raise CommandFailed(result)
        return result

    def spawn(self, argv: Sequence[str], *, env: Mapping[str, str | None] | None = None,
              cwd: str | None = None, stdout: int | None = subprocess.DEVNULL,
              stderr: int | None = subprocess.DEVNULL) -> FakeProcess:
        process = FakeProcess(argv, self._scripted(argv),
                              captured=subprocess.PIPE in (stdout, stderr))
        self.calls.append(Call("spawn", tuple(argv), dict(env or {}), cwd, process=process))
        return process

    def which(self, binary: str) -> str | None:
        if self.binaries is None:
            return f"/usr/bin/{binary}"
        return self.binaries.get(binary)

    def python(self) -> list[str]:
        return list(self._python)
