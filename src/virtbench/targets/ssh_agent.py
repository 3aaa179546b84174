"""The controller's end of virtbench's agent on an SSH host (ssh_agent_program.py).

One ssh session per host carries every command as a JSON line and its result back, so a trial
costs no ssh session, no login shell and no ssh client process: on the fleet benchmark's hosts
that was ~0.3 s of CPU per command between both sides (BENCHMARKS.md, "fleet: 50 hosts against
one"). Requests may come from several threads at once; a reader thread hands each reply to the
request with its id.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from virtbench.targets.local import LocalTarget, kill_process_group
from virtbench.targets.process import raw_popen

__all__ = ["AgentSession", "AgentUnavailable", "SessionLost", "agent_command"]

PROGRAM = (Path(__file__).with_name("ssh_agent_program.py")).read_text()
_STDERR_KEPT = 4096
SSH_EXIT_WAIT_S = 10.0
"""After the session's output ends, how long the ssh client gets to exit before SIGKILL."""


class SessionLost(Exception):
    """The ssh session ended (or never started): ``stderr`` is what ssh said."""

    def __init__(self, stderr: str, returncode: int | None) -> None:
        super().__init__(stderr.strip() or f"ssh exited {returncode}")
        self.stderr, self.returncode = stderr, returncode


class AgentUnavailable(Exception):
    """The host was reached but cannot run the agent (no python3 >= 3.8 there)."""


def agent_command(python: str) -> list[str]:
    """The remote argv that starts the agent: isolated (-I) and without site (-S), so its
    start-up reads no user configuration and imports only what it uses."""
    return [python, "-I", "-S", "-c", PROGRAM]


class _Pending:
    __slots__ = ("done", "reply")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.reply: dict[str, Any] | None = None


class AgentSession:
    """A running agent: ``request`` sends one request and waits for its reply."""

    def __init__(self, local: LocalTarget, ssh_argv: Sequence[str], hello_timeout_s: float):
        self._proc = raw_popen(local.spawn(list(ssh_argv), stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._pending: dict[int, _Pending] = {}
        self._next_id = 0
        self._stderr = b""
        self._lost = False
        self._hello = _Pending()
        self.python = ""
        assert self._proc.stdout is not None and self._proc.stderr is not None
        self._stderr_reader = threading.Thread(target=self._read_stderr,
                                               args=(self._proc.stderr,), daemon=True,
                                               name="vb-ssh-agent-stderr")
        self._stderr_reader.start()
        threading.Thread(target=self._read_replies, args=(self._proc.stdout,), daemon=True,
                         name="vb-ssh-agent").start()
        if not self._hello.done.wait(hello_timeout_s):
            self.close()
            raise subprocess.TimeoutExpired(list(ssh_argv[:1]), hello_timeout_s)
        if self._hello.reply is None:  # the session ended before the agent said hello
            code = self._proc.poll()  # reaped (or given up) by the reader before it said so
            self._stderr_reader.join(5)
            stderr = self.stderr()
            self.close()
            if code == 255:  # ssh's own failure: refused, unknown host key, ...
                raise SessionLost(stderr, code)
            raise AgentUnavailable(f"exit {code}: {stderr.strip()[-300:]}")
        self.python = str(self._hello.reply.get("python") or "")

    @property
    def alive(self) -> bool:
        return not self._lost and self._proc.poll() is None

    def stderr(self) -> str:
        return self._stderr.decode(errors="replace")

    def request(self, op: str, wait_s: float | None = None, **fields: Any) -> dict[str, Any]:
        """The reply to one request; raises SessionLost when the session ends first and
        TimeoutError (after asking the agent to kill the command) when ``wait_s`` passes."""
        pending = _Pending()
        with self._lock:
            if self._lost:
                raise SessionLost(self.stderr(), self._proc.poll())
            self._next_id += 1
            rid = self._next_id
            self._pending[rid] = pending
        try:
            self._write({"id": rid, "op": op, **fields})
            if not pending.done.wait(wait_s):
                raise TimeoutError(f"no reply from the agent within {wait_s} s")
        except BaseException:  # Ctrl-C or our own time limit: the command must end too
            with self._lock:
                self._pending.pop(rid, None)
            with contextlib.suppress(OSError):
                self._write({"id": 0, "op": "kill", "target": rid})
            raise
        if pending.reply is None:
            raise SessionLost(self.stderr(), self._proc.poll())
        if "error" in pending.reply:
            raise RuntimeError(f"virtbench agent: {pending.reply['error']}")
        return pending.reply

    def close(self) -> None:
        """End the agent (end of input: it kills what still runs) and its ssh client."""
        if self._proc.stdin is not None:
            with contextlib.suppress(OSError):
                self._proc.stdin.close()
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            kill_process_group(self._proc)  # the ssh client leads a session of its own
        self._fail_pending()

    # ---- internals -------------------------------------------------------------------------
    def _write(self, message: dict[str, Any]) -> None:
        assert self._proc.stdin is not None
        data = (json.dumps(message) + "\n").encode()
        with self._write_lock:
            try:
                self._proc.stdin.write(data)
                self._proc.stdin.flush()
            except (OSError, ValueError) as exc:  # the session is gone (ValueError: closed)
                raise BrokenPipeError(str(exc)) from exc

    def _read_replies(self, stream: IO[bytes]) -> None:
        for line in stream:
            try:
                message = json.loads(line)
            except ValueError:
                continue  # not ours (a login banner on stdout); replies are whole lines
            if "hello" in message:
                self._hello.reply = message
                self._hello.done.set()
                continue
            with self._lock:
                pending = self._pending.pop(int(message.get("id", -1)), None)
            if pending is not None:
                pending.reply = message
                pending.done.set()
        # ssh closed its output: it is ending (a client that lingers is ended, not waited for)
        try:
            self._proc.wait(timeout=SSH_EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            kill_process_group(self._proc)
        self._stderr_reader.join(5)  # ssh's last words explain the end to every waiter
        self._fail_pending()

    def _read_stderr(self, stream: IO[bytes]) -> None:
        for chunk in iter(lambda: stream.read1(1024), b""):  # type: ignore[attr-defined]
            self._stderr = (self._stderr + chunk)[-_STDERR_KEPT:]

    def _fail_pending(self) -> None:
        with self._lock:
            self._lost = True
            pending, self._pending = list(self._pending.values()), {}
        for item in (*pending, self._hello):
            item.done.set()
