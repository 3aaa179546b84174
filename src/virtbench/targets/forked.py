"""A Python call in a forked copy of this process, reporting back over a pipe.

A fleet runs each host's runner in a process of its own (forked: nothing is imported again), so
parsing and storing a host's samples never waits for another host's under one interpreter lock
(docs/fleet.md). The child sends JSON messages through ``send`` and ends with ``os._exit``:
it never runs the parent's exit handlers nor closes the parent's connections.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import signal
import threading
import traceback
from collections.abc import Callable
from typing import Any

from virtbench.targets.target_contract import KILL_WAIT_S

__all__ = ["KILL_WAIT_S", "ForkedCall", "Send"]

READER_GRACE_S = 10.0
"""After the child's exit, how long its last messages get to arrive."""
_log = logging.getLogger(__name__)

Send = Callable[[dict[str, Any]], None]


class ForkedCall:
    """``call(send)`` in a child process of its own process group (Ctrl-C in the terminal
    reaches only the parent, which passes it on once with ``interrupt``). ``listen`` hands each
    message to ``on_message`` in the parent; the last message of a child that raised is
    ``{"error": ...}``. Fork every child before listening: a child gets a copy of the parent's
    locks, and a reader thread could hold one at the moment of a later fork.
    """

    def __init__(self, call: Callable[[Send], None]) -> None:
        self._read_fd, write_fd = os.pipe()
        # SIGINT stays blocked from before the fork until the child is inside its own
        # try: an interrupt that reached the child earlier (a busy machine runs it late)
        # would raise KeyboardInterrupt in this constructor, and the child would go on as a
        # copy of the parent's program.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            self.pid = os.fork()
        except BaseException:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            raise
        if self.pid == 0:  # the child: never returns
            try:
                os.close(self._read_fd)
                os.setpgid(0, 0)
                # ``interrupt`` must reach it even when we were started with SIGINT ignored
                # (a background job, nohup, CI): the child is in a group of its own, so only
                # the parent ever sends it SIGINT.
                signal.signal(signal.SIGINT, signal.default_int_handler)
                _child(call, write_fd, mask)
            finally:
                os._exit(1)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        # The parent sets the group too: until the child has run setpgid itself (on a busy
        # machine, a while), a kill of its group would find none and miss it.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.setpgid(self.pid, self.pid)
        os.close(write_fd)
        self._reader: threading.Thread | None = None
        self.returncode: int | None = None

    def listen(self, on_message: Callable[[dict[str, Any]], None]) -> None:
        self._reader = threading.Thread(target=self._read, args=(self._read_fd, on_message),
                                        daemon=True, name=f"forked-{self.pid}")
        self._reader.start()

    def interrupt(self) -> None:
        """Ctrl-C for the child: it stops as an interrupted run does and still reports."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGINT)

    def wait(self, timeout_s: float | None = None) -> int | None:
        """The child's exit code, once every message it sent was handed on; None when the
        child still runs after ``timeout_s`` (None: as long as it runs)."""
        if self.returncode is None:
            if timeout_s is not None and not _exited_within(self.pid, timeout_s):
                return None
            self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        if self._reader is not None:
            # The pipe ends with the child (its own children never inherit it: Popen closes
            # descriptors); the bound is for a grandchild that kept it all the same.
            self._reader.join(READER_GRACE_S)
            if self._reader.is_alive():
                _log.warning("forked process %d exited but its pipe stayed open %g s; its "
                             "last messages may be lost", self.pid, READER_GRACE_S)
        return self.returncode

    def kill_group(self) -> int | None:
        """SIGKILL the child's process group and reap it; its exit code (None: it survived
        SIGKILL for KILL_WAIT_S, stuck in the kernel, and a warning says so)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        code = self.wait(KILL_WAIT_S)
        if code is None:
            _log.warning("forked process %d did not end within %g s of SIGKILL", self.pid,
                         KILL_WAIT_S)
        return code

    @staticmethod
    def _read(fd: int, on_message: Callable[[dict[str, Any]], None]) -> None:
        with os.fdopen(fd, "rb") as stream:
            for line in stream:
                on_message(json.loads(line))


def _exited_within(pid: int, timeout_s: float) -> bool:
    """True once the child ``pid`` (not yet reaped) has exited, waiting at most ``timeout_s``."""
    fd = os.pidfd_open(pid)  # readable once the process has exited
    try:
        return bool(select.select([fd], [], [], max(0.0, timeout_s))[0])
    finally:
        os.close(fd)


def _child(call: Callable[[Send], None], fd: int, mask: set[int | signal.Signals]) -> None:
    code = 0
    try:
        stream = os.fdopen(fd, "wb")
        lock = threading.Lock()

        def send(message: dict[str, Any]) -> None:
            with lock:
                stream.write((json.dumps(message) + "\n").encode())
                stream.flush()

        try:
            # An interrupt that came before this point arrives here, and is reported.
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            call(send)
        except BaseException as exc:  # reported, never propagated into the parent's code
            code = 1
            send({"error": f"{type(exc).__name__}: {exc}",
                  "traceback": traceback.format_exc()})
        stream.close()
    finally:
        os._exit(code)
