"""Bounded waits for tests: a child process or thread that does not end fails its test with a
clear message (and what the child said), it never hangs the suite.

Import as ``from waits import ...`` (``tests/`` is on ``sys.path``: pytest puts the directory of
the top-level conftest.py there). Each bound is for a hang, not an expectation: it is generous,
and every wait ends as soon as its condition holds.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from typing import IO, Any, AnyStr, NoReturn

import pytest

KILL_WAIT_S = 10.0
"""How long a killed process gets to vanish (longer: stuck in the kernel)."""

Output = Callable[[], str]


def sigint_default() -> None:
    """A child's ``preexec_fn``: SIGINT back to its default, so that a Ctrl-C sent to it works
    however pytest was started (a background job or CI inherits SIGINT ignored, and so would
    the child; Python then installs no KeyboardInterrupt handler)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def kill(proc: subprocess.Popen[Any]) -> None:
    """SIGKILL ``proc`` (and its process group when it leads one) and reap it, bounded."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if os.getpgid(proc.pid) == proc.pid:
                os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    try:
        proc.wait(KILL_WAIT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{_name(proc)} (pid {proc.pid}) did not end within {KILL_WAIT_S:g} s of "
                    "SIGKILL")


def finish(proc: subprocess.Popen[Any], timeout_s: float, output: Output | None = None) -> int:
    """``proc``'s exit code; still running after ``timeout_s``: killed, and the test fails
    with ``output()`` (or what it wrote to its pipes)."""
    try:
        return proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        kill(proc)
        _fail(proc, f"still running after {timeout_s:g} s", output)


def communicate(proc: subprocess.Popen[AnyStr], timeout_s: float,
                input: AnyStr | None = None) -> tuple[AnyStr, AnyStr]:
    """``proc.communicate(input)`` within ``timeout_s``; else killed and the test fails with
    what it wrote so far."""
    try:
        return proc.communicate(input, timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        kill(proc)
        said = [part.decode(errors="replace") if isinstance(part, bytes) else part
                for part in (exc.output, exc.stderr) if part]
        pytest.fail(f"{_name(proc)} still running after {timeout_s:g} s\n" + "\n".join(said))


def readline(proc: subprocess.Popen[AnyStr], timeout_s: float,
             stream: IO[AnyStr] | None = None) -> AnyStr:
    """The next line ``proc`` writes to ``stream`` (default: its stdout); no line within
    ``timeout_s``: killed, and the test fails (a pipe read has no timeout of its own)."""
    source = stream if stream is not None else proc.stdout
    assert source is not None, "readline needs the child's stdout as a pipe"
    lines: list[AnyStr] = []
    reader = threading.Thread(target=lambda: lines.append(source.readline()), daemon=True)
    reader.start()
    reader.join(timeout_s)
    if reader.is_alive():
        kill(proc)  # the read then ends at the closed pipe
        reader.join(KILL_WAIT_S)
        _fail(proc, f"wrote no line within {timeout_s:g} s", None)
    return lines[0]


def join(thread: threading.Thread, timeout_s: float, what: str) -> None:
    """Wait for ``thread``; still running after ``timeout_s``: the test fails naming ``what``
    (a daemon thread is then left behind; a non-daemon one would hold the run at exit)."""
    thread.join(timeout_s)
    if thread.is_alive():
        pytest.fail(f"{what} (thread {thread.name}) did not end within {timeout_s:g} s")


def _fail(proc: subprocess.Popen[Any], what: str, output: Output | None) -> NoReturn:
    said = output() if output is not None else _pipes(proc)
    pytest.fail(f"{_name(proc)} {what}\n{said}")


def _pipes(proc: subprocess.Popen[Any]) -> str:
    """What a killed child left in its pipes (bounded: a grandchild may hold them open)."""
    try:
        out, err = proc.communicate(timeout=KILL_WAIT_S)
    except (subprocess.TimeoutExpired, ValueError, OSError):  # ValueError: a closed pipe
        return "(its output could not be read)"
    parts = [p.decode(errors="replace") if isinstance(p, bytes) else p for p in (out, err) if p]
    return "\n".join(parts)


def _name(proc: subprocess.Popen[Any]) -> str:
    args = proc.args
    if isinstance(args, str | bytes | os.PathLike):
        return os.fsdecode(args)
    return " ".join(os.fsdecode(a) for a in list(args)[:4])
