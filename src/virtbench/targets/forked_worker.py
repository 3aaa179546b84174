"""A forked worker process that answers Python requests one at a time, over two pipes.

The HTML report draws its charts in such workers (report/chart_pool.py): started before the
analysis, a worker imports matplotlib while the parent reads the store, then draws the charts
it is sent while the parent draws none. A request and its answer are pickled (the child is a
fork of this process: the same code on both sides). The child leads a process group of its
own (Ctrl-C in the terminal reaches only the parent, whose ``close`` ends it); it ends by
itself when the parent's end of the request pipe closes, also when the parent is killed.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import queue
import signal
import struct
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any, BinaryIO

from virtbench.model import VirtbenchError
from virtbench.targets.forked import KILL_WAIT_S, _exited_within

__all__ = ["ForkedWorker", "WorkerFailed"]

_HEADER = struct.Struct("!Q")
CLOSE_GRACE_S = 2.0
"""After its request pipe closes, how long an idle worker gets to exit before SIGKILL."""


class WorkerFailed(VirtbenchError):
    """The worker could not answer: it raised, died, or did not answer in time."""


def _write_frame(stream: BinaryIO, payload: bytes) -> None:
    stream.write(_HEADER.pack(len(payload)) + payload)
    stream.flush()


def _read_frame(stream: BinaryIO) -> bytes | None:
    """One frame, or None at the end of the pipe (also a pipe cut in the middle of one)."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    payload = stream.read(size)
    return payload if len(payload) == size else None


class ForkedWorker:
    """``prepare()`` once, then ``handle(request)`` for each request ``submit`` sends, in a
    forked child. ``answer(key, timeout_s)`` gives the result, or raises WorkerFailed with the
    child's own error. Fork every worker before submitting to any: submitting starts threads,
    and a thread could hold a lock at the moment of a later fork."""

    def __init__(self, prepare: Callable[[], None], handle: Callable[[Any], Any],
                 name: str = "worker") -> None:
        self.name = name
        request_read, request_write = os.pipe()
        answer_read, answer_write = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the child: never returns
            os.close(request_write)
            os.close(answer_read)
            os.setpgid(0, 0)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            _serve(prepare, handle, request_read, answer_write)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.setpgid(self.pid, self.pid)  # as ForkedCall: a kill of its group finds it
        os.close(request_read)
        os.close(answer_write)
        self._requests = os.fdopen(request_write, "wb")
        self._answers_fd = answer_read
        self._outbox: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._answers: dict[Any, tuple[bool, Any]] = {}
        self._failure: str | None = None
        self._done = threading.Condition()
        self._threads: list[threading.Thread] = []
        self.returncode: int | None = None

    def submit(self, key: Any, request: Any) -> None:
        """Queue ``request``; never blocks on the child (a writer thread feeds the pipe)."""
        if not self._threads:
            self._threads = [
                threading.Thread(target=self._write, daemon=True, name=f"{self.name}-w"),
                threading.Thread(target=self._read, daemon=True, name=f"{self.name}-r")]
            for thread in self._threads:
                thread.start()
        self._outbox.put(pickle.dumps((key, request), pickle.HIGHEST_PROTOCOL))

    def answer(self, key: Any, timeout_s: float) -> Any:
        """The result of the request ``key``, waiting at most ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        with self._done:
            while key not in self._answers:
                left = deadline - time.monotonic()
                if self._failure is not None:
                    raise WorkerFailed(f"{self.name} (pid {self.pid}) failed: {self._failure}")
                if left <= 0:
                    raise WorkerFailed(f"{self.name} (pid {self.pid}) gave no answer within "
                                       f"{timeout_s:g} s")
                self._done.wait(left)
            ok, value = self._answers.pop(key)
        if not ok:
            raise WorkerFailed(f"{self.name} (pid {self.pid}) failed: {value}")
        return value

    def close(self, now: bool = False) -> int | None:
        """End the worker: its request pipe closes (an idle worker exits), then SIGKILL to its
        group after CLOSE_GRACE_S (``now``: at once, as after Ctrl-C); its exit code (None: it
        survived SIGKILL for KILL_WAIT_S, stuck in the kernel)."""
        if self.returncode is not None:
            return self.returncode
        self._outbox.put(None)  # the writer closes the pipe after what it still holds
        if not self._threads:
            self._requests.close()
        if now or not _exited_within(self.pid, CLOSE_GRACE_S):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
            if not _exited_within(self.pid, KILL_WAIT_S):
                return None
        self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        if not self._threads:
            os.close(self._answers_fd)
        return self.returncode

    def __enter__(self) -> ForkedWorker:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        self.close(now=kind is not None)

    def _write(self) -> None:
        with contextlib.suppress(OSError), self._requests:  # a dead child: its reader says so
            while (payload := self._outbox.get()) is not None:
                _write_frame(self._requests, payload)

    def _read(self) -> None:
        failure = "it exited without answering"
        with os.fdopen(self._answers_fd, "rb") as stream:
            while (payload := _read_frame(stream)) is not None:
                key, ok, value = pickle.loads(payload)
                with self._done:
                    if key is None:  # prepare failed: no request can be answered
                        failure = value
                    else:
                        self._answers[key] = (ok, value)
                    self._done.notify_all()
        with self._done:
            self._failure = failure
            self._done.notify_all()


def _serve(prepare: Callable[[], None], handle: Callable[[Any], Any], request_fd: int,
           answer_fd: int) -> None:
    code = 0
    try:
        requests = os.fdopen(request_fd, "rb")
        answers = os.fdopen(answer_fd, "wb")
        try:
            prepare()
        except BaseException as exc:  # said to the parent, never raised into its code
            _write_frame(answers, pickle.dumps((None, False, _said(exc))))
            code = 1
        while code == 0 and (payload := _read_frame(requests)) is not None:
            key, request = pickle.loads(payload)
            try:
                answer = (key, True, handle(request))
            except Exception as exc:
                answer = (key, False, _said(exc))
            _write_frame(answers, pickle.dumps(answer, pickle.HIGHEST_PROTOCOL))
    except BaseException:  # Ctrl-C sent to it, a parent gone mid-write: nothing to tell
        code = 1
    finally:
        os._exit(code)


def _said(exc: BaseException) -> str:
    last = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    where = f" (at {last[0].filename}:{last[0].lineno})" if last else ""
    return f"{type(exc).__name__}: {exc}{where}"
